// Peak rates of the GPU (kernels/peak.wgsl): int8 dot products, f32 fma and memory reads, so that a
// kernel's rate can be read against what the hardware does under WGSL (`ztvm gpu --peak`).
#pragma once
#include <cstdint>
#include <vector>

#include "gpu/kernels.h"

namespace ztvm::gpu {

enum class PeakOp : uint32_t { Dot4I8 = 0, Fma = 1, Read = 2 };

struct PeakRun {
  std::vector<uint32_t> out;  // one word per thread
  double seconds = 0;         // submit to done
};
// One dispatch of the probe: `groups` workgroups of kPeakThreads threads, `iters` steps each. `inp` is
// 16 words; `big` (Read only) holds groups x kPeakThreads x iters 16-byte words.
constexpr uint32_t kPeakThreads = 256;
// `passes` dispatches of the probe in one submission (each writes the same words).
PeakRun run_peak(Kernels& k, PeakOp op, uint32_t groups, uint32_t iters, const std::vector<uint32_t>& inp,
                 const Buffer* big = nullptr, uint32_t passes = 1);
// The CPU twin of thread t's word for Dot4I8 and Fma.
uint32_t peak_reference(PeakOp op, uint32_t t, uint32_t iters, const std::vector<uint32_t>& inp);
// Read: the buffer's 4-byte word w holds peak_read_word(w) (fill_read_pattern); thread t's word is
// the xor of its iters 16-byte words, a grid of `threads` apart.
uint32_t peak_read_word(uint64_t w);
void fill_read_pattern(Device& dev, const Buffer& big);
uint32_t peak_read_reference(uint32_t t, uint32_t threads, uint32_t iters);
// The probe's inputs: dot words of mixed-sign bytes, and fma's multiplier 0.5 and addend 1.
std::vector<uint32_t> peak_inputs();

struct PeakRate {
  double per_second = 0;  // int8 multiply-adds x 2, f32 fma x 2 (flops), or bytes read
  double seconds = 0;     // of the best run
};
// Doubles the work until a run takes at least min_seconds (or 2^16 steps; Read: 64 passes over the
// buffer), then keeps the best of `tries` runs. Read uses a buffer of up to `read_bytes` (bounded by
// the binding limit), read again per pass: a run is timed on the host from submit to done, and one
// pass over 1 GiB (0.35 ms on the H200) would count the submission's own time as reading time.
PeakRate measure_peak(Kernels& k, PeakOp op, double min_seconds = 0.05, int tries = 3,
                      uint64_t read_bytes = 1ull << 30);

// Workgroup-memory occupancy (kernels/occupancy.wgsl): latency-bound chains of dependent loads, one
// per 32 threads, in workgroups of kPeakThreads threads that each hold `bytes` of workgroup memory.
// The rate is proportional to the workgroups resident per SM, so a sweep of sizes shows where fewer fit.
// The probe's table (1 MB, made once per measurement), then one run of it.
Buffer occupancy_table(Device& dev);
PeakRun run_occupancy(Kernels& k, const Buffer& table, uint32_t bytes, uint32_t groups, uint32_t iters);
// The CPU twin of thread t's word.
uint32_t occupancy_reference(uint32_t bytes, uint32_t t, uint32_t iters);
struct OccupancyPoint {
  uint32_t bytes = 0;     // workgroup memory per workgroup
  double per_second = 0;  // chain steps per second (a chain per 32 threads)
  double seconds = 0;     // of the best run
};
// Sizes from 2 KB to the device's limit (at most max_bytes): each run doubled until it takes at least
// min_seconds, the best of `tries`, its words checked against the CPU.
std::vector<OccupancyPoint> measure_occupancy(Kernels& k, uint32_t max_bytes = 48u << 10, double min_seconds = 0.02,
                                              int tries = 3, uint32_t groups = 4096);

}  // namespace ztvm::gpu
