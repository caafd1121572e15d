// Builds Tokenizers from files. Internal to src/text: the loaders fill Tokenizer's private fields
// (it names TokenizerLoader a friend), then call finish_loading().
#pragma once
#include <memory>
#include <string>

#include "text/tokenizer.h"

namespace ztvm {

class TokenizerLoader {
 public:
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& gguf);  // tokenizer_gguf.cpp
  static std::unique_ptr<Tokenizer> from_json(const std::string& path);  // tokenizer_json.cpp

 private:
  static std::unique_ptr<Tokenizer> make(text::BpeModel::Priority priority) {
    return std::unique_ptr<Tokenizer>(new Tokenizer(priority));
  }
  // SentencePiece vocabularies whose pieces never hold "▁" after another character can be cut
  // before every "▁" run: the merges cannot cross such a cut, and short words hit the cache.
  static void add_spm_word_split_if_exact(Tokenizer& t);
  static void finish(Tokenizer& t) { t.finish_loading(); }
};

}  // namespace ztvm
