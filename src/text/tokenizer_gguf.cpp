// Tokenizer from GGUF metadata (tokenizer.ggml.*). Two model kinds:
//   "gpt2"  — byte-level BPE: merges list + the pre-tokenizer regexes named by tokenizer.ggml.pre.
//   "llama" — SentencePiece-style BPE: piece scores decide merges, " " becomes "▁" with one "▁"
//             prefixed to the text, characters outside the vocabulary fall back to <0xXX> tokens.
// Token types (tokenizer.ggml.token_type): 1 normal, 2 unknown, 3 control, 4 user-defined,
// 5 unused, 6 byte.
#include <cstdio>

#include "model/gguf.h"
#include "model/model_error.h"
#include "text/tokenizer_loader.h"

namespace ztvm {

namespace {

TokenKind kind_from_gguf_type(int64_t type) {
  switch (type) {
    case 2: return TokenKind::Unknown;
    case 3: return TokenKind::Control;
    case 4: return TokenKind::UserDefined;
    case 5: return TokenKind::Unused;
    case 6: return TokenKind::Byte;
    default: return TokenKind::Normal;
  }
}

// A token id key, or -1 when absent or out of range (files write 0xFFFFFFFF for "none").
int32_t token_id_key(const GgufFile& g, const std::string& key, int64_t dflt, size_t n_vocab) {
  int64_t v = g.has(key) ? g.get_int(key) : dflt;
  return v >= 0 && (uint64_t)v < n_vocab ? (int32_t)v : -1;
}

// Pre-tokenizer names whose tokenizer.json sets BPE ignore_merges (and whose models want BOS).
bool is_llama3_family(const std::string& pre) { return pre == "llama-bpe" || pre == "llama3" || pre == "falcon3"; }

}  // namespace

void TokenizerLoader::add_spm_word_split_if_exact(Tokenizer& t) {
  const std::string space = "\xE2\x96\x81";
  for (size_t id = 0; id < t.pieces_.size(); id++) {
    if (t.kinds_[id] != TokenKind::Normal) continue;
    const std::string& p = t.pieces_[id];
    // A "▁" preceded by anything other than "▁" would let a merge cross the cut.
    for (size_t hit = p.find(space, 1); hit != std::string::npos; hit = p.find(space, hit + 3))
      if (hit < 3 || p.compare(hit - 3, 3, space) != 0) return;
  }
  text::PreTokenizerStep split{text::PreTokenizerStep::Split};
  split.regex = std::make_shared<text::Regex>("\\x{2581}+");
  split.behavior = text::SplitBehavior::MergedWithNext;  // "▁▁word" stays one piece
  t.pre_tokenizers_.push_back(std::move(split));
}

std::unique_ptr<Tokenizer> TokenizerLoader::from_gguf(const GgufFile& g) {
  const std::string& path = g.path();
  std::string model = g.get_string("tokenizer.ggml.model");
  bool spm = model == "llama";
  if (!spm && model != "gpt2")
    throw ModelError(path + ": tokenizer.ggml.model is '" + model +
                     "', expected 'llama' (SentencePiece-style) or 'gpt2' (byte-level BPE)");
  auto t = make(spm ? text::BpeModel::Priority::PieceScore : text::BpeModel::Priority::MergeRank);

  const GgufValue* tokens = g.find_value("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufValueType::Array || tokens->elem_type != GgufValueType::String)
    throw ModelError(path + ": tokenizer.ggml.tokens: expected an array of strings");
  const size_t n = tokens->strings.size();
  std::vector<float> scores;
  if (g.has("tokenizer.ggml.scores")) scores = g.get_float_array("tokenizer.ggml.scores");
  std::vector<int64_t> types;
  if (g.has("tokenizer.ggml.token_type")) types = g.get_int_array("tokenizer.ggml.token_type");
  if ((!scores.empty() && scores.size() != n) || (!types.empty() && types.size() != n))
    throw ModelError(path + ": tokenizer.ggml.scores/token_type have " + std::to_string(scores.size()) + "/" +
                     std::to_string(types.size()) + " entries, expected " + std::to_string(n) + " (one per token)");

  const GgufValue* merges = g.find_value("tokenizer.ggml.merges");
  t->model_.reserve(n, merges ? merges->strings.size() : 0);
  t->pieces_ = tokens->strings;
  t->kinds_.resize(n, TokenKind::Normal);
  for (size_t id = 0; id < n; id++) {
    TokenKind k = types.empty() ? TokenKind::Normal : kind_from_gguf_type(types[id]);
    t->kinds_[id] = k;
    const std::string& p = t->pieces_[id];
    unsigned byte = 0;
    if (k == TokenKind::Normal) {
      t->model_.add_piece(p, (int32_t)id, scores.empty() ? 0.f : scores[id]);
    } else if (k == TokenKind::Byte && p.size() == 6 && std::sscanf(p.c_str(), "<0x%2X>", &byte) == 1) {
      t->model_.set_byte_token((uint8_t)byte, (int32_t)id);
    }
    // Control, user-defined and unknown entries are found in the text before the model runs.
    if (k == TokenKind::Control || k == TokenKind::UserDefined || k == TokenKind::Unknown)
      t->added_.push_back({p, (int32_t)id, k != TokenKind::UserDefined});
  }

  bool add_bos_default = spm;
  if (spm) {
    // SentencePiece: a space is "▁", and the text gets one "▁" in front (per raw fragment, as the
    // original tokenizer sees each stretch between special tokens as a new sentence).
    bool add_space_prefix = g.get_bool("tokenizer.ggml.add_space_prefix", true);
    if (add_space_prefix) t->normalizers_.push_back({text::NormalizerStep::Prepend, "\xE2\x96\x81"});
    t->normalizers_.push_back({text::NormalizerStep::Replace, " ", "\xE2\x96\x81"});
    t->decoding_ = Tokenizer::Decoding::SentencePiece;
    t->strip_leading_space_ = add_space_prefix;
    int32_t unk = token_id_key(g, "tokenizer.ggml.unknown_token_id", 0, n);
    t->model_.set_unk(unk, false);
    add_spm_word_split_if_exact(*t);
  } else {
    if (!merges || merges->elem_type != GgufValueType::String)
      throw ModelError(path + ": tokenizer.ggml.merges: expected an array of strings for a 'gpt2' tokenizer");
    for (const std::string& m : merges->strings) {
      size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) continue;
      t->model_.add_merge(std::string_view(m).substr(0, sp), std::string_view(m).substr(sp + 1));
    }
    std::string pre = g.find_string("tokenizer.ggml.pre").value_or("default");
    auto patterns = text::gguf_pre_tokenizer_patterns(pre);
    if (!patterns)
      throw ModelError(path + ": tokenizer.ggml.pre '" + pre +
                       "' is not supported (known: gpt-2, llama-bpe, qwen2, qwen35, stablelm2, smollm, ...)");
    for (const std::string& p : *patterns) {
      text::PreTokenizerStep split{text::PreTokenizerStep::Split};
      split.regex = std::make_shared<text::Regex>(p);
      t->pre_tokenizers_.push_back(std::move(split));
    }
    t->pre_tokenizers_.push_back({text::PreTokenizerStep::ByteLevel});
    t->decoding_ = Tokenizer::Decoding::ByteLevel;
    t->model_.set_ignore_merges(is_llama3_family(pre));
    add_bos_default = is_llama3_family(pre);
  }

  // SentencePiece vocabularies conventionally use 1 and 2 when the keys are missing.
  t->bos_id_ = token_id_key(g, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n);
  t->eos_id_ = token_id_key(g, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n);
  if (g.get_bool("tokenizer.ggml.add_bos_token", add_bos_default) && t->bos_id_ >= 0) t->prefix_ids_ = {t->bos_id_};
  if (g.get_bool("tokenizer.ggml.add_eos_token", false) && t->eos_id_ >= 0) t->suffix_ids_ = {t->eos_id_};
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    int32_t id = token_id_key(g, key, -1, n);
    if (id >= 0) t->eog_ids_.push_back(id);
  }
  finish(*t);
  return t;
}

}  // namespace ztvm
