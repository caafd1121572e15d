// Snapshots of one sequence's recurrent state (Qwen3.5's gated DeltaNet layers: each one's conv window
// and delta-rule matrix). A KV cache is rewound by cutting it; a DeltaNet state only moves forward, so
// a prompt that shares a prefix with the cache resumes from the newest snapshot inside that prefix
// instead of from position 0.
//
// One ring per Generator, over that generator's cached ids: entry `pos` is the state after the first
// pos of them, and it is forgotten as soon as the cache stops starting with those ids. The Forward's
// live state belongs to one ring at a time (Forward::state_owner); a ring that takes it parks the
// previous owner's in that owner's tail entry, so the sequences of a scheduler can take turns.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/forward.h"

namespace ztvm {

class StateRing {
 public:
  static constexpr uint32_t kSnapshots = 4;  // entries at chunk boundaries and prompt ends (+1 tail)

  // `cached`: the generator's cached ids. Whenever this ring owns the live state and no pass has run
  // since ran(), that state is the one after all of them.
  StateRing(Forward& fwd, const std::vector<int32_t>& cached, uint32_t size = kSnapshots);
  ~StateRing();
  StateRing(const StateRing&) = delete;
  StateRing& operator=(const StateRing&) = delete;

  // Bytes of one snapshot: every DeltaNet layer's conv window and scan state (f32).
  static uint64_t snapshot_bytes(const ModelConfig& c);
  uint32_t size() const { return size_; }

  // Before passes over a prompt whose first `limit` ids are the cache's: forgets the snapshots past
  // limit, takes the live state and makes it the state after the first p <= limit cached ids for the
  // largest p it holds (the live state as it is, or a snapshot copied in); p = 0 when none, and passes
  // then start afresh. Returns p: the caller cuts its cache to p ids.
  uint32_t resume(uint32_t limit);
  // Records into rec (after its passes) a copy of the live state as the snapshot at `pos`, the cached
  // length once those passes have run; the least recently used entry makes room.
  void save(gpu::Recorder& rec, uint32_t pos);
  // The caller's passes are done and its cached ids are the live state's again.
  void ran() { epoch_ = fwd_.passes(); }
  void clear();  // the cache is gone: every snapshot with it

  std::vector<uint32_t> positions() const;  // held snapshots' positions, ascending (tests)
  uint32_t copies() const { return copies_; }  // snapshots copied into the live state so far (tests)

 private:
  struct Entry {
    gpu::Buffer buf;     // [conv windows | scan states] of every DeltaNet layer, as the live state's order
    uint32_t pos = 0;    // 0: empty
    uint64_t used = 0;   // last saved or restored (least recently used goes first)
  };
  bool owns_live() const { return fwd_.state_owner == this && fwd_.passes() == epoch_; }
  void park();  // another ring takes the live state: keep ours in the tail
  void copy(gpu::Recorder& rec, Entry& e, bool to_live);
  Entry& slot(size_t i);  // entry i, its buffer made on first use

  Forward& fwd_;
  const std::vector<int32_t>& cached_;
  uint32_t size_;
  std::vector<Entry> entries_;  // size_ snapshots, then the tail
  uint64_t epoch_ = ~0ull, tick_ = 0;
  uint32_t copies_ = 0;
};

}  // namespace ztvm
