// The floor under a decode step (`ztvm gpu --read-chain SPEC`): a chain of dependent dispatches that
// only read memory, each as many bytes as one of the step's matrices, timed as the engine's chain is
// (one submission, a barrier between dispatches). No matvec can stream its matrix faster than the
// plain read of the same bytes in the same place of a chain, so the chain's GB/s is the most a step
// of that shape reaches on this GPU under Dawn, and the gap to it is what the kernels leave.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/kernels.h"

namespace ztvm::gpu {

// SPEC lists the dispatches' sizes in MB (10^6 bytes): terms joined by '+', each a size or a bracketed
// list of sizes, optionally repeated as "Nx": "36x[8.85,0.4,5.9,28,14]+319" is a 36-layer step and
// its LM head. 0 is a dispatch of one workgroup reading 4 KB. Throws std::invalid_argument.
std::vector<uint64_t> parse_read_chain(const std::string& spec);

struct ReadChainRun {
  uint32_t aim = 0;        // workgroups each dispatch aims at (a dispatch of fewer bytes has fewer)
  uint64_t bytes = 0;      // read per chain (each size rounded up to whole 4 KB steps of a workgroup)
  uint32_t dispatches = 0;
  double seconds = 0;      // per chain, the best of the tries: host time from submit to done
  double gpu_seconds = 0;  // per chain from timestamps at the first pass's beginning and the last
                           // one's end (a device with timestamps; else 0): host recording left out
};

// The chain of `sizes`, each dispatch reading its own buffer (a step reads every matrix once, so
// nothing comes from L2 that a step would not find there), recorded `repeats` times in one
// submission; each dispatch takes about `aim` workgroups of 256 threads, 16-byte loads a step apart.
// The last dispatch's words are checked against the CPU (GpuError if wrong) before a time is kept.
class ReadChain {
 public:
  ReadChain(Kernels& k, const std::vector<uint64_t>& sizes);
  ~ReadChain();
  ReadChain(const ReadChain&) = delete;
  ReadChain& operator=(const ReadChain&) = delete;
  // per_submit: chains a submission (0: all `repeats` in one), the submissions queued back to back and
  // waited for once, as the decode loop queues its steps (Dawn translates a command buffer at submit,
  // so one big submission's host time includes that translation; the GPU's time does not).
  ReadChainRun run(uint32_t aim, int repeats, int tries, int per_submit = 0);
  // The same over only the dispatches of one size (per-size rates; sizes whose buffers fit in L2 run warm).
  ReadChainRun run_size(uint64_t size, uint32_t aim, int repeats, int tries);

 private:
  ReadChainRun run_of(const std::vector<size_t>& which, uint32_t aim, int repeats, int tries, int per_submit = 0);
  Kernels& k_;
  std::vector<uint64_t> sizes_;
  std::vector<Buffer> bufs_;
  Buffer out_, inp_, stamps_;
  WGPUQuerySet qs_ = nullptr;
};

}  // namespace ztvm::gpu
