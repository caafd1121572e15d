// UTF-8 helpers, the GPT-2 byte-level table and utf8proc normalization (see tokenizer_utf8.h).
#include "text/tokenizer_utf8.h"

#include <utf8proc.h>

#include <array>
#include <cstdlib>

namespace ztvm::text {

size_t utf8_decode(std::string_view text, size_t pos, uint32_t& cp) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data()) + pos;
  size_t avail = text.size() - pos;
  uint8_t b0 = s[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t n = utf8_seq_len(b0);
  if (n == 1 || n > avail || b0 < 0xC2 || b0 > 0xF4) return 0;
  // The second byte's allowed range excludes overlongs (E0, F0), surrogates (ED) and > U+10FFFF (F4).
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 == 0xE0) lo = 0xA0;
  if (b0 == 0xED) hi = 0x9F;
  if (b0 == 0xF0) lo = 0x90;
  if (b0 == 0xF4) hi = 0x8F;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  uint32_t v = b0 & (0x7F >> n);
  for (size_t i = 1; i < n; i++) v = (v << 6) | (s[i] & 0x3F);
  cp = v;
  return n;
}

// Callers pass valid scalar values (decoded input or table entries), so no range checks here.
void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += (char)cp;
  } else if (cp < 0x800) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    out += (char)(0xF0 | (cp >> 18));
    out += (char)(0x80 | ((cp >> 12) & 0x3F));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
}

size_t utf8_complete_prefix(std::string_view bytes) {
  // Only the last few bytes can be an unfinished sequence: find the last lead byte and check
  // whether all bytes after it are continuations that do not yet reach its length.
  size_t n = bytes.size();
  size_t back = n < 4 ? n : 4;
  for (size_t i = n; i > n - back; i--) {
    auto b = (uint8_t)bytes[i - 1];
    if ((b & 0xC0) == 0x80) continue;  // continuation: keep looking for the lead
    size_t need = utf8_seq_len(b);
    if (b >= 0xC2 && b <= 0xF4 && need > n - (i - 1)) return i - 1;
    return n;
  }
  return n;
}

// Bytes at `pos` (an invalid sequence) that form one maximal subpart of an ill-formed sequence.
static size_t invalid_subpart_len(std::string_view bytes, size_t pos) {
  auto b0 = (uint8_t)bytes[pos];
  if (b0 < 0xC2 || b0 > 0xF4) return 1;
  size_t need = utf8_seq_len(b0), k = 1;
  while (k < need && pos + k < bytes.size()) {
    auto b = (uint8_t)bytes[pos + k];
    uint8_t lo = 0x80, hi = 0xBF;
    if (k == 1 && b0 == 0xE0) lo = 0xA0;
    if (k == 1 && b0 == 0xED) hi = 0x9F;
    if (k == 1 && b0 == 0xF0) lo = 0x90;
    if (k == 1 && b0 == 0xF4) hi = 0x8F;
    if (b < lo || b > hi) break;
    k++;
  }
  return k;
}

std::string utf8_sanitize(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    uint32_t cp;
    size_t n = utf8_decode(bytes, i, cp);
    if (n == 0) {
      // One U+FFFD per maximal subpart: a valid lead byte and the continuation bytes that could
      // still have completed it count as one error (Unicode's recommendation, as Python and Rust).
      i += invalid_subpart_len(bytes, i);
      out += "\xEF\xBF\xBD";
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

namespace {

// Both directions of the GPT-2 map, built once. The 68 unprintable bytes (controls, space, DEL,
// C1 controls, NBSP, soft hyphen) are moved to U+0100.. so every byte has a visible stand-in:
// that is why byte-level vocabularies show "Ġ" (U+0120) for a space and "Ċ" (U+010A) for "\n".
struct ByteLevelTable {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // the mapped code points are all < 256 + 68
  ByteLevelTable() {
    to_byte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? (uint32_t)b : next++;
      to_byte[to_cp[b]] = (int16_t)b;
    }
  }
};
const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable table;
  return table;
}

// Applies `fn(valid_run, out)` to each maximal run of well-formed UTF-8, copying invalid bytes.
template <class Fn>
std::string map_valid_runs(std::string_view text, Fn fn) {
  std::string out;
  out.reserve(text.size());
  size_t run_start = 0, i = 0;
  while (i < text.size()) {
    uint32_t cp;
    size_t n = utf8_decode(text, i, cp);
    if (n) {
      i += n;
      continue;
    }
    if (i > run_start) fn(text.substr(run_start, i - run_start), out);
    out += text[i];
    run_start = ++i;
  }
  if (i > run_start) fn(text.substr(run_start, i - run_start), out);
  return out;
}

bool is_ascii(std::string_view text) {
  for (char c : text)
    if ((uint8_t)c >= 0x80) return false;
  return true;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t b) { return byte_level_table().to_cp[b]; }

int codepoint_to_byte(uint32_t cp) {
  const auto& t = byte_level_table();
  return cp < t.to_byte.size() ? t.to_byte[cp] : -1;
}

void bytes_to_byte_level(std::string_view bytes, std::string& out) {
  const auto& t = byte_level_table();
  for (char c : bytes) utf8_append(out, t.to_cp[(uint8_t)c]);
}

std::string normalize(std::string_view text, NormalForm form) {
  // ASCII is invariant under all four forms; most text is, so skip utf8proc entirely.
  if (is_ascii(text)) return std::string(text);
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  return map_valid_runs(text, [&](std::string_view run, std::string& out) {
    utf8proc_uint8_t* mapped = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                                      (utf8proc_ssize_t)run.size(), &mapped, (utf8proc_option_t)options);
    if (n < 0) {
      out.append(run);  // cannot happen for a valid run; keep the text rather than lose it
    } else {
      out.append(reinterpret_cast<const char*>(mapped), (size_t)n);
    }
    std::free(mapped);
  });
}

// Per code point, like HF's Lowercase normalizer (Rust char::to_lowercase; the few one-to-many
// mappings such as U+0130 differ, and none of our vocabularies lowercase).
std::string to_lower(std::string_view text) {
  return map_valid_runs(text, [](std::string_view run, std::string& out) {
    for (size_t i = 0; i < run.size();) {
      uint32_t cp = 0;
      i += utf8_decode(run, i, cp);
      utf8_append(out, (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp));
    }
  });
}

// The White_Space property list, small and fixed, so no table lookup.
bool is_unicode_whitespace(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

// A word character as Unicode regexes' \w sees it (HF's single_word added tokens): letters, marks,
// numbers, '_' — and the symbols that carry the Alphabetic property (circled and squared Latin
// letters), which their general category (So) alone would miss.
bool is_word_char(uint32_t cp) {
  if (cp == '_') return true;
  if ((cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
      (cp >= 0x1F170 && cp <= 0x1F189))
    return true;
  switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

}  // namespace ztvm::text
