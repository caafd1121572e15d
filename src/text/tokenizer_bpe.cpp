// The BPE merge loop (see tokenizer_bpe.h).
#include "text/tokenizer_bpe.h"

#include <cstdio>
#include <queue>

#include "text/tokenizer_utf8.h"

namespace ztvm::text {

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;  // load factor <= 1/2 keeps probe chains short
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  size_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty) insert(s.key, s.merge);
}

void MergeTable::insert(uint64_t key, Merge m) {
  if ((size_ + 1) * 2 > slots_.size()) reserve(size_ + 1);
  for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) return;
    if (s.key == kEmpty) {
      s.key = key;
      s.merge = m;
      size_++;
      return;
    }
  }
}

void BpeModel::add_piece(std::string piece, int32_t id, float score) {
  piece_to_id_.emplace(std::move(piece), id);
  if (priority_ == Priority::PieceScore) {
    if ((size_t)id >= scores_.size()) scores_.resize((size_t)id + 1, 0.f);
    scores_[(size_t)id] = score;
  }
}

bool BpeModel::add_merge(std::string_view left, std::string_view right) {
  int32_t l = find(left), r = find(right);
  if (l < 0 || r < 0) return false;
  joined_.assign(left).append(right);
  int32_t result = find(joined_);
  if (result < 0) return false;
  // A repeated pair keeps its first (best) rank, as a lookup in the merges list would.
  merges_.insert(pair_key(l, r), {(int32_t)merge_count_++, result});
  return true;
}

// HF byte_fallback: the 256 byte tokens are ordinary vocabulary entries named <0x00>..<0xFF>.
void BpeModel::set_byte_fallback(bool on) {
  byte_fallback_ = on;
  if (!on) return;
  char name[8];
  for (int b = 0; b < 256; b++) {
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    int32_t id = find(name);
    if (id >= 0) byte_ids_[b] = id;
  }
}

void BpeModel::emit_bytes(std::string_view bytes, std::vector<int32_t>& out) const {
  for (char c : bytes) {
    int32_t id = byte_ids_[(uint8_t)c];
    if (id >= 0) out.push_back(id);
    else if (unk_id_ >= 0) out.push_back(unk_id_);
  }
}

namespace {

struct Symbol {
  uint32_t begin, len;  // bytes of the word this symbol covers (len 0: merged away)
  int32_t id;           // its piece, -1 if the bytes are not a piece
  int32_t prev, next;   // neighbours in the linked list, -1 at the ends
};

// A merge that was possible when queued; stale once either side has changed length.
struct Candidate {
  float cost;    // lower merges first: the merge rank, or minus the piece score
  uint32_t pos;  // byte offset of the left symbol: equal costs merge leftmost first
  int32_t left, right;
  uint32_t left_len, right_len;
  int32_t result;
};
struct CandidateAfter {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.cost != b.cost ? a.cost > b.cost : a.pos > b.pos;
  }
};

}  // namespace

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  // Llama 3 (ignore_merges): a word the vocabulary holds whole skips the merges, which could
  // otherwise reach a different split of the same bytes.
  if (ignore_merges_) {
    int32_t whole = find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }

  // Start from one symbol per character (per byte-level code point for byte-level BPE). The
  // symbols form a doubly linked list so a merge is O(1): the right symbol is unlinked, len 0.
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  auto push_symbol = [&](uint32_t begin, uint32_t len, int32_t id) {
    int32_t idx = (int32_t)syms.size();
    syms.push_back({begin, len, id, idx - 1, -1});
    if (idx > 0) syms[idx - 1].next = idx;
  };
  for (size_t pos = 0; pos < word.size();) {
    size_t n = utf8_char_len(word, pos);
    int32_t id = find(word.substr(pos, n));
    if (id < 0 && priority_ == Priority::MergeRank) {
      // HF BPE: an unknown character becomes byte tokens, or unk, or nothing; none of them merge.
      if (byte_fallback_) {
        bool all = true;
        for (size_t i = 0; i < n; i++) all = all && byte_ids_[(uint8_t)word[pos + i]] >= 0;
        if (all) {
          for (size_t i = 0; i < n; i++) push_symbol((uint32_t)(pos + i), 1, byte_ids_[(uint8_t)word[pos + i]]);
          pos += n;
          continue;
        }
      }
      if (unk_id_ >= 0) {
        if (fuse_unk_ && !syms.empty() && syms.back().id == unk_id_) syms.back().len += (uint32_t)n;
        else push_symbol((uint32_t)pos, (uint32_t)n, unk_id_);
      }
      pos += n;
      continue;
    }
    push_symbol((uint32_t)pos, (uint32_t)n, id);
    pos += n;
  }

  // The candidate merge of symbols l and r, if their pair is a merge rule / their join is a piece.
  auto candidate = [&](int32_t l, int32_t r, Candidate& c) {
    if (l < 0 || r < 0) return false;
    const Symbol& a = syms[l];
    const Symbol& b = syms[r];
    if (priority_ == Priority::MergeRank) {
      if (a.id < 0 || b.id < 0) return false;
      const MergeTable::Merge* m = merges_.find(pair_key(a.id, b.id));
      if (!m) return false;
      c = {(float)m->rank, a.begin, l, r, a.len, b.len, m->result};
    } else {
      int32_t id = find(word.substr(a.begin, a.len + b.len));
      if (id < 0) return false;
      c = {-scores_[(size_t)id], a.begin, l, r, a.len, b.len, id};
    }
    return true;
  };
  // The first candidates are heapified at once (linear) rather than pushed one by one.
  std::vector<Candidate> initial;
  initial.reserve(syms.size());
  Candidate c;
  for (size_t i = 0; i + 1 < syms.size(); i++)
    if (candidate((int32_t)i, (int32_t)i + 1, c)) initial.push_back(c);
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateAfter> queue(CandidateAfter{}, std::move(initial));
  auto try_pair = [&](int32_t l, int32_t r) {
    if (candidate(l, r, c)) queue.push(c);
  };

  // Best candidate first. A merge changes its neighbours, so candidates naming a symbol whose
  // length has changed since they were queued are stale and skipped (lazy deletion), and the two
  // new pairs around the merged symbol are queued.
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& a = syms[top.left];
    Symbol& b = syms[top.right];
    if (a.len != top.left_len || b.len != top.right_len || a.next != top.right) continue;  // stale
    a.len += b.len;
    a.id = top.result;
    b.len = 0;
    a.next = b.next;
    if (b.next >= 0) syms[b.next].prev = top.left;
    try_pair(a.prev, top.left);
    try_pair(top.left, a.next);
  }

  // PieceScore leaves characters outside the vocabulary as symbols without an id: they become
  // their <0xXX> byte tokens here (SentencePiece byte fallback), or unk.
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    if (syms[i].id >= 0) out.push_back(syms[i].id);
    else emit_bytes(word.substr(syms[i].begin, syms[i].len), out);
  }
}

}  // namespace ztvm::text
