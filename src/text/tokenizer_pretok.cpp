// Normalizers, pre-tokenizers and the PCRE2 wrapper they run on (see tokenizer_pretok.h).
#include "text/tokenizer_pretok.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <map>

#include "model/model_error.h"
#include "text/tokenizer_utf8.h"

namespace ztvm::text {

// GPT-2's pattern: contractions, letters, numbers and other symbols each with one optional
// leading space, then whitespace runs (a run before a word leaves its last space to the word).
const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// Llama 3: case-insensitive contractions, a word may take one leading non-letter, digits in groups
// of up to three, punctuation runs keep trailing newlines, newline runs with their indentation.
const char* const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2 / Qwen3: as Llama 3 but every digit is its own piece.
const char* const kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5: as Qwen2 but combining marks (\p{M}) stay inside words instead of splitting them.
const char* const kQwen35Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// StarCoder-style vocabularies: single digits first, then GPT-2 without the final \s+.
const char* const kGpt2NoTrailingSpace =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

}  // namespace

// UCP makes \s, \w and \d Unicode-aware like HF's Oniguruma patterns; MATCH_INVALID_UTF lets a
// subject hold arbitrary bytes (byte-level models can encode them) without a validity pass.
Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_offset, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw ModelError("tokenizer regex /" + pattern + "/: " + reinterpret_cast<char*>(msg) + " at offset " +
                     std::to_string(err_offset));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // if JIT is unavailable, pcre2_match interprets
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::for_each_match(std::string_view subject, const std::function<void(size_t, size_t)>& fn) const {
  auto* code = static_cast<pcre2_code*>(code_);
  // Match data is per call so one Regex can serve several threads.
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(
      pcre2_match_data_create_from_pattern(code, nullptr), pcre2_match_data_free);
  auto subj = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t start = 0;
  while (start < subject.size()) {
    int rc = pcre2_match(code, subj, subject.size(), start, 0, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw ModelError("tokenizer regex /" + pattern_ + "/: match failed: " + reinterpret_cast<char*>(msg));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    size_t b = ov[0], e = ov[1];
    if (e == b) {  // an empty match: step over one character so the loop advances
      start = b + utf8_char_len(subject, b);
      continue;
    }
    fn(b, e);
    start = e;
  }
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view subject) const {
  std::vector<std::pair<size_t, size_t>> out;
  for_each_match(subject, [&](size_t b, size_t e) { out.emplace_back(b, e); });
  return out;
}

std::string regex_quote(std::string_view literal) {
  std::string re;
  for (char c : literal) {
    // Bytes >= 0x80 (UTF-8) and ASCII letters/digits are literal in PCRE2; the rest is escaped.
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if ((uint8_t)c < 0x80 && !alnum) re += '\\';
    re += c;
  }
  return re;
}

namespace {

// Streams the pieces of a Split: the text is cut into segments (matches and the gaps between them,
// a match being a delimiter unless inverted), and each behaviour decides how delimiters attach.
// One segment is held back so MergedWithPrevious/Next and Contiguous can join neighbours.
class SegmentCombiner {
 public:
  SegmentCombiner(SplitBehavior behavior, const std::function<void(size_t, size_t)>& emit)
      : behavior_(behavior), emit_(emit) {}

  void add(size_t b, size_t e, bool delim) {
    switch (behavior_) {
      case SplitBehavior::Isolated: emit_(b, e); return;
      case SplitBehavior::Removed:
        if (!delim) emit_(b, e);
        return;
      case SplitBehavior::Contiguous:  // adjacent segments of one kind form one piece (as HF)
        if (has_ && delim == held_delim_) {
          held_end_ = e;
          return;
        }
        break;
      case SplitBehavior::MergedWithPrevious:  // a delimiter joins the gap before it
        if (has_ && delim && !held_delim_) {
          held_end_ = e;
          held_delim_ = true;  // a second delimiter in a row stands alone
          return;
        }
        break;
      case SplitBehavior::MergedWithNext:  // a delimiter joins the gap after it
        if (has_ && !delim && held_delim_) {
          emit_(held_begin_, e);
          has_ = false;
          return;
        }
        break;
    }
    flush();
    has_ = true, held_begin_ = b, held_end_ = e, held_delim_ = delim;
  }
  void flush() {
    if (has_) emit_(held_begin_, held_end_);
    has_ = false;
  }

 private:
  SplitBehavior behavior_;
  const std::function<void(size_t, size_t)>& emit_;
  bool has_ = false, held_delim_ = false;
  size_t held_begin_ = 0, held_end_ = 0;
};

void for_each_split(const Regex& regex, std::string_view text, SplitBehavior behavior, bool invert,
                    const std::function<void(size_t, size_t)>& emit) {
  SegmentCombiner combiner(behavior, emit);
  size_t pos = 0;
  regex.for_each_match(text, [&](size_t b, size_t e) {
    if (b > pos) combiner.add(pos, b, invert);
    combiner.add(b, e, !invert);
    pos = e;
  });
  if (pos < text.size()) combiner.add(pos, text.size(), invert);
  combiner.flush();
}

}  // namespace

std::vector<std::string> split_by_regex(const Regex& regex, std::string_view text, SplitBehavior behavior,
                                        bool invert) {
  std::vector<std::string> out;
  for_each_split(regex, text, behavior, invert, [&](size_t b, size_t e) { out.emplace_back(text.substr(b, e - b)); });
  return out;
}

// Literal replacement of every occurrence, one pass into a new string (no quadratic erase/insert).
static void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(text, pos, hit - pos);
    out.append(to);
  }
  if (pos == 0) return;  // nothing replaced: keep the string as is
  out.append(text, pos, std::string::npos);
  text = std::move(out);
}

// Each step rewrites the whole fragment; HF normalizers also track offsets, which we do not need.
std::string apply_normalizers(const std::vector<NormalizerStep>& steps, std::string text) {
  for (const auto& step : steps) {
    switch (step.kind) {
      case NormalizerStep::NFC: text = normalize(text, NormalForm::NFC); break;
      case NormalizerStep::NFD: text = normalize(text, NormalForm::NFD); break;
      case NormalizerStep::NFKC: text = normalize(text, NormalForm::NFKC); break;
      case NormalizerStep::NFKD: text = normalize(text, NormalForm::NFKD); break;
      case NormalizerStep::Lowercase: text = to_lower(text); break;
      case NormalizerStep::Prepend:
        if (!text.empty()) text.insert(0, step.text);
        break;
      case NormalizerStep::Replace:
        if (step.regex) {
          std::string out;
          size_t pos = 0;
          for (auto [b, e] : step.regex->find_all(text)) {
            out.append(text, pos, b - pos);
            out.append(step.replacement);
            pos = e;
          }
          out.append(text, pos, std::string::npos);
          text = std::move(out);
        } else {
          replace_all(text, step.text, step.replacement);
        }
        break;
      case NormalizerStep::StripSpace: {
        size_t b = 0, e = text.size();
        if (step.strip_left)
          while (b < e && (text[b] == ' ' || text[b] == '\t' || text[b] == '\n' || text[b] == '\r')) b++;
        if (step.strip_right)
          while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\n' || text[e - 1] == '\r')) e--;
        text = text.substr(b, e - b);
        break;
      }
    }
  }
  return text;
}

namespace {

// Applies steps[i..] to one piece; `at_start` says the piece begins the input text.
void run_steps(const std::vector<PreTokenizerStep>& steps, size_t i, std::string_view piece, bool at_start,
               const std::function<void(std::string_view)>& emit) {
  if (piece.empty()) return;
  if (i == steps.size()) {
    emit(piece);
    return;
  }
  const PreTokenizerStep& step = steps[i];
  auto next = [&](std::string_view sub, bool sub_at_start) { run_steps(steps, i + 1, sub, sub_at_start, emit); };
  switch (step.kind) {
    case PreTokenizerStep::Split:
    case PreTokenizerStep::Digits:
      for_each_split(*step.regex, piece, step.behavior, step.invert,
                     [&](size_t b, size_t e) { next(piece.substr(b, e - b), at_start && b == 0); });
      break;
    case PreTokenizerStep::ByteLevel: {
      // Optional leading space (GPT-2's add_prefix_space), optional GPT-2 split, then every byte
      // becomes its printable code point: the form the vocabulary's pieces are written in.
      std::string prefixed;
      if (step.add_prefix_space && piece[0] != ' ') {
        prefixed = " ";
        prefixed.append(piece);
        piece = prefixed;
      }
      auto map_bytes = [&](std::string_view sub, bool sub_at_start) {
        std::string mapped;
        mapped.reserve(sub.size() * 2);
        bytes_to_byte_level(sub, mapped);
        next(mapped, sub_at_start);
      };
      if (step.regex) {
        for_each_split(*step.regex, piece, SplitBehavior::Isolated, false,
                       [&](size_t b, size_t e) { map_bytes(piece.substr(b, e - b), at_start && b == 0); });
      } else {
        map_bytes(piece, at_start);
      }
      break;
    }
    case PreTokenizerStep::Metaspace: {
      // SentencePiece's whitespace as a pre-tokenizer: spaces become "▁", a "▁" is prepended per
      // the scheme, and (split) the text is cut before each "▁".
      std::string replaced(piece);
      replace_all(replaced, " ", step.replacement);
      bool prepend = step.prepend == PreTokenizerStep::Always || (step.prepend == PreTokenizerStep::First && at_start);
      if (prepend && replaced.compare(0, step.replacement.size(), step.replacement) != 0)
        replaced.insert(0, step.replacement);
      if (!step.split) {
        next(replaced, at_start);
        break;
      }
      // One piece per "▁word": each replacement character starts a new piece.
      std::string_view r = replaced;
      size_t start = 0;
      for (size_t hit = r.find(step.replacement, 1); hit != std::string::npos;
           hit = r.find(step.replacement, hit + step.replacement.size())) {
        if (hit > start) next(r.substr(start, hit - start), at_start && start == 0);
        start = hit;
      }
      next(r.substr(start), at_start && start == 0);
      break;
    }
  }
}

}  // namespace

void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string_view text, bool first_fragment,
                  const std::function<void(std::string_view)>& emit) {
  run_steps(steps, 0, text, first_fragment, emit);
}

std::optional<std::vector<std::string>> gguf_pre_tokenizer_patterns(const std::string& pre) {
  // Names as llama.cpp's converter writes them, grouped by the regex their tokenizer.json uses.
  static const std::map<std::string, std::vector<std::string>> table = {
      {"gpt-2", {kGpt2Pattern}},          {"gpt2", {kGpt2Pattern}},
      {"default", {kGpt2Pattern}},        {"mpt", {kGpt2Pattern}},
      {"olmo", {kGpt2Pattern}},           {"jais", {kGpt2Pattern}},
      {"llama-bpe", {kLlama3Pattern}},    {"llama3", {kLlama3Pattern}},
      {"dbrx", {kLlama3Pattern}},         {"smaug-bpe", {kLlama3Pattern}},
      {"falcon3", {kLlama3Pattern}},
      {"qwen2", {kQwen2Pattern}},         {"stablelm2", {kQwen2Pattern}},
      {"deepseek-r1-qwen", {kQwen2Pattern}}, {"hunyuan", {kQwen2Pattern}},
      {"qwen35", {kQwen35Pattern}},
      {"starcoder", {R"(\p{N})", kGpt2NoTrailingSpace}}, {"refact", {R"(\p{N})", kGpt2NoTrailingSpace}},
      {"smollm", {R"(\p{N})", kGpt2NoTrailingSpace}},    {"codeshell", {R"(\p{N})", kGpt2NoTrailingSpace}},
  };
  auto it = table.find(pre);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

}  // namespace ztvm::text
