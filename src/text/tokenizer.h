// Text <-> token ids for every supported model: byte-level BPE (GPT-2, Llama 3, Qwen2/3/3.5) and
// SentencePiece-style BPE (Llama 2, Phi-3, TinyStories), loaded from a GGUF file or a Hugging Face
// tokenizer.json. One pipeline serves both sources:
//   added/special tokens split the text first -> normalizer -> pre-tokenizer -> BPE per word.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer_bpe.h"
#include "text/tokenizer_pretok.h"

namespace ztvm {

class GgufFile;

// What a vocabulary entry is; decides how it decodes and whether text can produce it.
enum class TokenKind : uint8_t {
  Normal,       // an ordinary piece the model produces from text
  Byte,         // <0xXX>: decodes to one raw byte
  Control,      // <s>, <|im_end|>, ...: matched in text only when parse_special is set
  UserDefined,  // an added token that is not special: always matched in text
  Unknown,      // <unk> and similar
  Unused,       // a hole in the id space
};

class Tokenizer {
 public:
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& gguf);
  // A Hugging Face tokenizer.json; tokenizer_config.json (and generation_config.json) beside it,
  // if present, supply bos/eos and add_bos/add_eos.
  static std::unique_ptr<Tokenizer> from_json(const std::string& tokenizer_json_path);
  // A .gguf file, a tokenizer.json file, or a Hugging Face model directory holding tokenizer.json.
  static std::unique_ptr<Tokenizer> from_model_path(const std::string& gguf_or_hf_dir);

  // add_special: BOS/EOS as the file asks. parse_special: text such as "<|im_start|>" becomes the
  // control token (user-defined added tokens are matched either way, as in HF and llama.cpp).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // The bytes one token stands for (may be part of a UTF-8 character); special tokens give their text.
  const std::string& token_text(int32_t id) const;
  // All tokens' bytes concatenated, invalid UTF-8 replaced by U+FFFD. skip_special leaves out
  // control tokens. SentencePiece-style models drop the space their prefix rule added when it
  // opens the text (so decode(encode(s)) == s; with a kept "<s>" in front the space stays, as in HF).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;

  int32_t bos_id() const { return bos_id_; }  // -1 if none
  int32_t eos_id() const { return eos_id_; }  // -1 if none
  std::vector<int32_t> eog_ids() const { return eog_ids_; }  // every token that ends generation
  bool is_eog(int32_t id) const;
  bool is_special(int32_t id) const;  // control or unknown-type tokens
  // Whether encode(text, add_special = true) starts with BOS.
  bool add_bos() const { return !prefix_ids_.empty() && prefix_ids_.front() == bos_id_; }
  size_t vocab_size() const { return pieces_.size(); }
  TokenKind kind(int32_t id) const;
  // The token as stored in the vocabulary ("Ġthe", "▁the", "<0x0A>"); "" if out of range.
  const std::string& piece(int32_t id) const;
  // -1 if `text` is not exactly one vocabulary entry (added tokens included).
  int32_t find_piece(std::string_view text) const;

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;
  ~Tokenizer();

 private:
  // An entry the text is searched for before the model runs (HF added_tokens, GGUF control and
  // user-defined tokens).
  struct AddedToken {
    std::string content;
    int32_t id;
    bool special;  // needs parse_special
    bool lstrip = false, rstrip = false, single_word = false;
  };
  struct Fragment {
    std::string_view text;  // raw text when token < 0
    int32_t token;
    size_t offset;          // byte offset in the input
  };
  enum class Decoding { ByteLevel, SentencePiece };

  explicit Tokenizer(text::BpeModel::Priority priority) : model_(priority) {}
  // Called by the loaders once every field is set: builds the lookup tables and decoded texts.
  void finish_loading();
  std::vector<Fragment> split_added_tokens(std::string_view text, bool parse_special) const;
  void encode_fragment(std::string_view text, bool at_start, std::vector<int32_t>& out) const;
  void encode_word_cached(std::string_view word, std::vector<int32_t>& out) const;

  // Vocabulary, by id.
  std::vector<std::string> pieces_;
  std::vector<TokenKind> kinds_;
  std::vector<std::string> texts_;  // decoded bytes, filled by finish_loading
  text::PieceMap all_pieces_;       // every entry (added tokens included) -> id

  text::BpeModel model_;
  std::vector<text::NormalizerStep> normalizers_;
  std::vector<text::PreTokenizerStep> pre_tokenizers_;
  Decoding decoding_ = Decoding::ByteLevel;
  bool strip_leading_space_ = false;  // SentencePiece prefix rule: decode drops the first space

  std::vector<AddedToken> added_;
  std::vector<std::vector<uint32_t>> added_by_first_byte_;  // indices into added_, longest first

  int32_t bos_id_ = -1, eos_id_ = -1;
  // What encode(add_special) puts around the text: [bos] and [eos] per add_bos/add_eos in GGUF,
  // the post-processor template's tokens in tokenizer.json.
  std::vector<int32_t> prefix_ids_, suffix_ids_;
  std::vector<int32_t> eog_ids_;

  // Word -> ids for short words: most text repeats the same few thousand words.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, text::StringHash, std::equal_to<>> cache_;

  friend class TokenizerLoader;
};

// Turns a stream of token ids into text that is always complete UTF-8: bytes of a character split
// across tokens are held back until the token that completes it arrives.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::string push(int32_t id);
  // Whatever is still held (an unfinished character becomes U+FFFD), then resets.
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

}  // namespace ztvm
