// The BPE model: turns one pre-tokenized word into token ids by repeatedly merging the best adjacent
// pair. Two ways to rank a pair, one merge loop:
//   MergeRank  — byte-level BPE (GPT-2, Llama 3, Qwen) and HF tokenizer.json: the pair's index in
//                the merges list, lower first.
//   PieceScore — SentencePiece-style GGUF vocabularies (tokenizer.ggml.model "llama"): the pair may
//                merge if the concatenation is a piece; the higher piece score goes first.
// Ties go to the leftmost pair. The loop is a heap over a linked list: O(n log n) per word.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ztvm::text {

// Lets an unordered_map<std::string, ...> be searched with a string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Open-addressing map from a (left id, right id) pair to its merge: one flat array, no node per
// entry, because a vocabulary has up to a few hundred thousand merges and encoding probes it per pair.
class MergeTable {
 public:
  struct Merge {
    int32_t rank, result;
  };
  // Keeps the first value for a repeated key (the best rank).
  void insert(uint64_t key, Merge m);
  const Merge* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }
  void reserve(size_t n);

 private:
  static constexpr uint64_t kEmpty = ~0ull;  // never a real key: ids are < 2^31
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static size_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
};

class BpeModel {
 public:
  enum class Priority { MergeRank, PieceScore };

  explicit BpeModel(Priority priority) : priority_(priority) { byte_ids_.fill(-1); }

  // The pieces the model may produce or merge into (not control/added tokens), with their ids.
  void add_piece(std::string piece, int32_t id, float score = 0.f);
  void reserve(size_t pieces, size_t merges) {
    piece_to_id_.reserve(pieces);
    merges_.reserve(merges);
  }
  // Appends a merge rule (left + right -> the piece left+right); its rank is the call order.
  // Returns false if any of the three pieces is not in the vocabulary.
  bool add_merge(std::string_view left, std::string_view right);
  // Characters missing from the vocabulary become <0xXX> byte tokens instead of unk.
  void set_byte_fallback(bool on);
  // Registers <0xXX> byte tokens even without byte fallback in the merge model (SentencePiece
  // vocabularies keep them as their own token type, outside the piece map).
  void set_byte_token(uint8_t byte, int32_t id) { byte_ids_[byte] = id; }
  void set_unk(int32_t id, bool fuse_unk) { unk_id_ = id, fuse_unk_ = fuse_unk; }
  // Llama 3: a word that is already a piece is emitted whole, without running the merges.
  void set_ignore_merges(bool on) { ignore_merges_ = on; }

  int32_t find(std::string_view piece) const {
    auto it = piece_to_id_.find(piece);
    return it == piece_to_id_.end() ? -1 : it->second;
  }
  size_t merge_count() const { return merge_count_; }

  // Appends the ids of `word` to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  static uint64_t pair_key(int32_t l, int32_t r) { return ((uint64_t)(uint32_t)l << 32) | (uint32_t)r; }
  // Emits the byte tokens of `bytes` (or unk where one is missing) for an unknown character.
  void emit_bytes(std::string_view bytes, std::vector<int32_t>& out) const;

  Priority priority_;
  PieceMap piece_to_id_;
  std::vector<float> scores_;                   // PieceScore: score by id
  MergeTable merges_;                           // MergeRank: (left id, right id) -> rank, result id
  std::array<int32_t, 256> byte_ids_;           // <0xXX> ids, -1 if absent
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool fuse_unk_ = false;
  int32_t unk_id_ = -1;
  size_t merge_count_ = 0;
  std::string joined_;  // scratch for add_merge
};

}  // namespace ztvm::text
