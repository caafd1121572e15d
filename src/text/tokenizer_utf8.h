// UTF-8 plumbing shared by the tokenizers: code point iteration that tolerates invalid bytes, the
// GPT-2 byte <-> code point table of byte-level BPE, and Unicode normalization through utf8proc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ztvm::text {

// Length of the UTF-8 sequence that starts with `lead` (1 for ASCII, continuation and invalid bytes).
inline size_t utf8_seq_len(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 1;
}

// Bytes of the next character at `pos`: the lead byte's sequence length, clamped to the text, so a
// truncated or invalid sequence never reads past the end. Always >= 1 when pos < text.size().
inline size_t utf8_char_len(std::string_view text, size_t pos) {
  size_t n = utf8_seq_len((uint8_t)text[pos]);
  return n < text.size() - pos ? n : text.size() - pos;
}

// Decodes the well-formed sequence at `pos` into `cp` and returns its length; returns 0 (and leaves
// cp alone) for an invalid, overlong or truncated sequence.
size_t utf8_decode(std::string_view text, size_t pos, uint32_t& cp);

// Appends the UTF-8 form of `cp`.
void utf8_append(std::string& out, uint32_t cp);

// Number of bytes at the start of `bytes` that form complete characters, stopping before a final
// sequence that is still incomplete (a later token may finish it). Invalid bytes count as complete.
size_t utf8_complete_prefix(std::string_view bytes);

// Replaces ill-formed bytes with U+FFFD (one per maximal subpart, as Python and Rust do), so the result is valid.
std::string utf8_sanitize(std::string_view bytes);

// GPT-2's reversible byte -> printable code point map: bytes that are printable Latin-1 map to
// themselves, the other 68 to U+0100.. in byte order. Byte-level BPE vocabularies are written in it.
uint32_t byte_to_codepoint(uint8_t b);
// The inverse; -1 if `cp` is not one of the 256 mapped code points.
int codepoint_to_byte(uint32_t cp);
// Maps every byte of `bytes` through byte_to_codepoint, appending to `out`.
void bytes_to_byte_level(std::string_view bytes, std::string& out);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
// Unicode normalization of `text`. Invalid UTF-8 bytes pass through unchanged (each valid run is
// normalized on its own), so byte-level models can still encode them.
std::string normalize(std::string_view text, NormalForm form);
// Unicode lowercase (simple case mapping per code point); invalid bytes pass through.
std::string to_lower(std::string_view text);

// Unicode White_Space, as Rust's char::is_whitespace (HF added-token lstrip/rstrip use it).
bool is_unicode_whitespace(uint32_t cp);
// Letter, number or mark, or '_': what counts as "inside a word" for single_word added tokens.
bool is_word_char(uint32_t cp);

}  // namespace ztvm::text
