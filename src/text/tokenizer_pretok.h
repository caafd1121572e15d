// The text stages before the model: normalizers (NFC, Prepend "▁", Replace " " -> "▁", ...) and
// pre-tokenizers (regex Split, ByteLevel, Metaspace, Digits), the subset of Hugging Face
// tokenizer.json that real LLM tokenizers use. GGUF files get the same stages built from their
// `tokenizer.ggml.pre` name, so one pipeline serves both sources.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ztvm::text {

// A compiled PCRE2 pattern (UTF, Unicode properties, JIT). Compiled once; find_all is thread-safe.
// Subjects may contain invalid UTF-8: such bytes never match and end up in the gaps.
class Regex {
 public:
  explicit Regex(const std::string& pattern);  // throws ModelError on a bad pattern
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // Calls fn(begin, end) for each non-overlapping non-empty match, left to right (byte offsets).
  void for_each_match(std::string_view subject, const std::function<void(size_t, size_t)>& fn) const;
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view subject) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*, kept opaque so pcre2.h stays out of this header
};

// `literal` as a pattern that matches exactly it (ASCII punctuation escaped).
std::string regex_quote(std::string_view literal);

// One normalizer step; a Sequence is just several steps in order.
struct NormalizerStep {
  enum Kind { NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, StripSpace } kind;
  std::string text;                  // Prepend: prefix; Replace: literal pattern
  std::string replacement;           // Replace
  std::shared_ptr<const Regex> regex;  // Replace with a Regex pattern instead of a literal
  bool strip_left = false, strip_right = false;  // StripSpace
};
std::string apply_normalizers(const std::vector<NormalizerStep>& steps, std::string text);

// How a Split step combines regex matches with the text between them (HF SplitDelimiterBehavior).
enum class SplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };

struct PreTokenizerStep {
  enum Kind { Split, ByteLevel, Metaspace, Digits } kind;
  std::shared_ptr<const Regex> regex;  // Split (also ByteLevel with use_regex: the GPT-2 pattern)
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;                 // Split: the matches are the gaps
  bool add_prefix_space = false;       // ByteLevel
  std::string replacement = "\xE2\x96\x81";  // Metaspace: "▁"
  enum Prepend { Always, First, Never } prepend = Always;  // Metaspace
  bool split = true;                   // Metaspace: one piece per "▁word"
  bool individual_digits = false;      // Digits
};

// Runs the steps over one text fragment and calls emit(piece) for each non-empty final piece, in
// order. Streaming, so a megabyte fragment never becomes a vector of a million strings; the view
// passed to emit lives only during the call. `first_fragment` is true for the fragment at the start
// of the input (Metaspace's prepend_scheme "first" only prefixes that one).
void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string_view text, bool first_fragment,
                  const std::function<void(std::string_view)>& emit);

// Splits `text` into pieces by `regex` with the given behaviour (exposed for tests).
std::vector<std::string> split_by_regex(const Regex& regex, std::string_view text, SplitBehavior behavior,
                                        bool invert);

// The pre-tokenizer regexes for a GGUF `tokenizer.ggml.pre` name, applied in order as Isolated
// splits; nullopt for a name this build does not know.
std::optional<std::vector<std::string>> gguf_pre_tokenizer_patterns(const std::string& pre);
// The GPT-2 pattern (ByteLevel's use_regex and GGUF "gpt-2").
extern const char* const kGpt2Pattern;

}  // namespace ztvm::text
