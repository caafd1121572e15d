// Per-dispatch GPU time from timestamp queries (`ztvm bench --profile`). While a profiler is set on
// the Device, every dispatch gets its own compute pass with begin/end timestamps and every submit
// waits for the GPU, so profiled runs are slower: they say where time goes, not how fast we are.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "gpu/device.h"

namespace ztvm::gpu {

class Profiler {
 public:
  // by_pipeline: rows per pipeline (kernel, snippets and constants, so each matrix shape its own)
  // instead of per kernel role.
  explicit Profiler(Device& dev, bool by_pipeline = false, uint32_t max_dispatches = 2048);  // 4096 queries per set
  bool by_pipeline() const { return by_pipeline_; }
  ~Profiler();
  // Recorder hooks: the timestamp writes for the next dispatch, and the resolve before finishing.
  WGPUPassTimestampWrites next(const std::string& role, uint64_t bytes);
  void resolve(WGPUCommandEncoder enc);
  void collect();  // after the submit: reads the timestamps back and adds them up per role
  // A table: role, dispatches, total µs, µs per step, GB/s (from the bytes each dispatch reads).
  std::string report(uint32_t steps) const;

 private:
  struct Entry {
    std::string role;
    uint64_t bytes;
  };
  struct Total {
    uint64_t count = 0, bytes = 0;
    double ns = 0;
  };
  Device& dev_;
  bool by_pipeline_;
  WGPUQuerySet qs_ = nullptr;
  Buffer resolve_buf_;
  uint32_t cap_;
  std::vector<Entry> pending_;
  std::map<std::string, Total> totals_;
};

}  // namespace ztvm::gpu
