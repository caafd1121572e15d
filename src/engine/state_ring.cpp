#include "engine/state_ring.h"

#include <algorithm>

namespace ztvm {

StateRing::StateRing(Forward& fwd, const std::vector<int32_t>& cached, uint32_t size)
    : fwd_(fwd), cached_(cached), size_(std::max<uint32_t>(1, size)), entries_(size_ + 1) {}

StateRing::~StateRing() {
  if (fwd_.state_owner == this) fwd_.state_owner = nullptr;
}

uint64_t StateRing::snapshot_bytes(const ModelConfig& c) {
  const GraphBuilder::DeltaShape s{c.linear_num_key_heads, c.linear_key_head_dim, c.linear_num_value_heads,
                                   c.linear_value_head_dim, c.linear_conv_kernel_dim, c.linear_v_heads_tiled};
  uint64_t n = 0;
  for (uint32_t l = 0; l < c.num_hidden_layers; l++)
    if (c.layer(l).mixer == Mixer::GatedDeltaNet)
      n += GraphBuilder::deltanet_conv_state_bytes(s) + GraphBuilder::deltanet_scan_state_bytes(s);
  return n;
}

StateRing::Entry& StateRing::slot(size_t i) {
  Entry& e = entries_[i];
  if (!e.buf) {
    uint64_t bytes = 0;
    for (size_t l = 0; l < fwd_.conv_state().size(); l++) bytes += fwd_.conv_state()[l].size() + fwd_.scan_state()[l].size();
    const std::string name = i < size_ ? "state_ring.entry" + std::to_string(i) : std::string("state_ring.tail");
    e.buf = fwd_.device().buffer(name, bytes, WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst);
  }
  return e;
}

// The live state of layer l sits at the sum of the earlier layers' sizes, its conv window first.
void StateRing::copy(gpu::Recorder& rec, Entry& e, bool to_live) {
  uint64_t off = 0;
  for (size_t l = 0; l < fwd_.conv_state().size(); l++)
    for (const gpu::Buffer* b : {&fwd_.conv_state()[l], &fwd_.scan_state()[l]}) {
      if (!*b) continue;
      if (to_live) rec.copy(e.buf, off, *b, 0, b->size());
      else rec.copy(*b, 0, e.buf, off, b->size());
      off += b->size();
    }
}

uint32_t StateRing::resume(uint32_t limit) {
  for (Entry& e : entries_)
    if (e.pos > limit) e.pos = 0;  // it follows ids the next passes overwrite
  if (owns_live() && cached_.size() <= limit) return (uint32_t)cached_.size();
  if (fwd_.state_owner && fwd_.state_owner != this) fwd_.state_owner->park();
  fwd_.state_owner = this;
  epoch_ = ~0ull;  // not the state after cached_ until the caller's passes have run (ran())
  Entry* best = nullptr;
  for (Entry& e : entries_)
    if (e.pos && (!best || e.pos > best->pos)) best = &e;
  if (!best) return 0;
  gpu::Recorder rec(fwd_.device(), "state_ring.restore");
  copy(rec, *best, true);
  rec.submit();
  best->used = ++tick_;
  copies_++;
  return best->pos;
}

void StateRing::park() {
  if (!owns_live() || cached_.empty()) return;  // a pass of someone else's ran over it: nothing to keep
  const uint32_t pos = (uint32_t)cached_.size();
  for (const Entry& e : entries_)
    if (e.pos == pos) return;  // held already
  Entry& tail = slot(size_);
  gpu::Recorder rec(fwd_.device(), "state_ring.park");
  copy(rec, tail, false);
  rec.submit();
  tail.pos = pos;
  tail.used = ++tick_;
}

void StateRing::save(gpu::Recorder& rec, uint32_t pos) {
  if (pos == 0) return;  // a pass at 0 starts afresh anyway
  size_t v = 0;  // an empty entry, else the least recently used
  for (size_t i = 0; i < size_; i++) {
    if (entries_[i].pos == pos) {
      entries_[i].used = ++tick_;  // the same ids, so the same state
      return;
    }
    if (entries_[v].pos && (!entries_[i].pos || entries_[i].used < entries_[v].used)) v = i;
  }
  Entry& e = slot(v);
  copy(rec, e, false);
  e.pos = pos;
  e.used = ++tick_;
}

void StateRing::clear() {
  for (Entry& e : entries_) e.pos = 0;
  epoch_ = ~0ull;
}

std::vector<uint32_t> StateRing::positions() const {
  std::vector<uint32_t> p;
  for (const Entry& e : entries_)
    if (e.pos) p.push_back(e.pos);
  std::sort(p.begin(), p.end());
  return p;
}

}  // namespace ztvm
