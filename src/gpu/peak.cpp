#include "gpu/peak.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

namespace ztvm::gpu {

std::vector<uint32_t> peak_inputs() {
  std::vector<uint32_t> inp(16, 0);
  inp[0] = 0x7F80017Fu;  // a: 127, 1, -128, 127 (bytes from low to high)
  for (uint32_t k = 0; k < 8; k++) inp[1 + k] = 0x01FF7F80u + 0x02030405u * k;
  const float m = 0.5f, c = 1.0f;
  std::memcpy(&inp[9], &m, 4);
  std::memcpy(&inp[10], &c, 4);
  return inp;
}

static int32_t dot4i8(uint32_t a, uint32_t b) {
  int32_t s = 0;
  for (int i = 0; i < 4; i++) s += (int32_t)(int8_t)(a >> (8 * i)) * (int32_t)(int8_t)(b >> (8 * i));
  return s;
}

uint32_t peak_reference(PeakOp op, uint32_t t, uint32_t iters, const std::vector<uint32_t>& inp) {
  if (op == PeakOp::Dot4I8) {
    uint32_t acc[8] = {};  // unsigned: WGSL's i32 adds wrap
    uint32_t a = inp[0] + t;
    for (uint32_t i = 0; i < iters; i++) {
      for (int k = 0; k < 8; k++) acc[k] += (uint32_t)dot4i8(a, inp[1 + k]);
      a += 0x01010101u;
    }
    uint32_t s = 0;
    for (uint32_t v : acc) s += v;
    return s;
  }
  float m, c;
  std::memcpy(&m, &inp[9], 4);
  std::memcpy(&c, &inp[10], 4);
  float x[8], s = 0;
  for (int k = 0; k < 8; k++) x[k] = (float)(inp[1 + k] & 0xFF) + (float)(t % 7);
  for (uint32_t i = 0; i < iters; i++)
    for (float& v : x) v = std::fma(v, m, c);
  for (float v : x) s += v;
  uint32_t bits;
  std::memcpy(&bits, &s, 4);
  return bits;
}

uint32_t peak_read_word(uint64_t w) { return (uint32_t)(w * 2654435761u) ^ (uint32_t)(w >> 32); }

void fill_read_pattern(Device& dev, const Buffer& big) {
  const uint64_t words = big.size() / 4, chunk = 16u << 20;
  std::vector<uint32_t> v;
  for (uint64_t w0 = 0; w0 < words; w0 += chunk) {
    v.resize(std::min(chunk, words - w0));
    for (uint64_t i = 0; i < v.size(); i++) v[i] = peak_read_word(w0 + i);
    dev.write(big, v.data(), v.size() * 4, w0 * 4);
  }
}

uint32_t peak_read_reference(uint32_t t, uint32_t threads, uint32_t iters) {
  uint32_t x = 0;
  for (uint64_t i = 0; i < iters; i++) {
    const uint64_t q = i * threads + t;  // 16-byte word: 4-byte words 4q .. 4q + 3
    for (uint64_t c = 0; c < 4; c++) x ^= peak_read_word(4 * q + c);
  }
  return x;
}

// `passes` dispatches of p in one submission, timed from submit to done (uploads before are not), and
// out's first `threads` words.
static PeakRun timed_run(Device& dev, const Pipeline& p, const BindGroup& bg, uint32_t groups, uint32_t passes,
                         const Buffer& out, uint64_t threads) {
  dev.wait_idle();
  const auto t0 = std::chrono::steady_clock::now();
  Recorder rec(dev, "probe");
  for (uint32_t i = 0; i < passes; i++) rec.dispatch(p, bg, groups);
  rec.submit();
  dev.wait_idle();
  PeakRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.out = dev.read_as<uint32_t>(out, threads);
  return r;
}

PeakRun run_peak(Kernels& k, PeakOp op, uint32_t groups, uint32_t iters, const std::vector<uint32_t>& inp,
                 const Buffer* big, uint32_t passes) {
  Device& dev = k.device();
  const uint64_t threads = (uint64_t)groups * kPeakThreads;
  Buffer out = dev.buffer("peak.out", threads * 4), in = dev.buffer("peak.inp", 64);
  dev.write(in, inp.data(), 64);
  Buffer dummy;
  if (!big) dummy = dev.buffer("peak.big", 16), big = &dummy;
  const Pipeline& p = k.get({"peak", {}, {{"OP", (double)op}, {"ITERS", (double)iters}}});
  return timed_run(dev, p, dev.bind(p, {out, in, *big}, "peak"), groups, passes, out, threads);
}

PeakRate measure_peak(Kernels& k, PeakOp op, double min_seconds, int tries, uint64_t read_bytes) {
  Device& dev = k.device();
  const std::vector<uint32_t> inp = peak_inputs();
  uint32_t groups = 2048, iters = 16, passes = 1;
  Buffer big;
  if (op == PeakOp::Read) {  // passes over one buffer: the more bytes per pass, the less each start costs
    const uint64_t bytes = std::min<uint64_t>(read_bytes, dev.max_binding_size());
    iters = (uint32_t)std::max<uint64_t>(1, bytes / ((uint64_t)groups * kPeakThreads * 16));
    big = dev.buffer("peak.big", (uint64_t)groups * kPeakThreads * iters * 16);
    fill_read_pattern(dev, big);
    while (passes < 64 && run_peak(k, op, groups, iters, inp, &big, passes).seconds < min_seconds) passes *= 2;
  } else {
    while (iters < 65536 && run_peak(k, op, groups, iters, inp).seconds < min_seconds) iters *= 2;
  }
  PeakRate best;
  PeakRun r;
  for (int i = 0; i < tries; i++) {
    r = run_peak(k, op, groups, iters, inp, big ? &big : nullptr, passes);
    if (best.seconds == 0 || r.seconds < best.seconds) best.seconds = r.seconds;
  }
  // No number without the work: the first and last threads' words against the CPU.
  const uint32_t threads = groups * kPeakThreads;
  for (uint32_t t : {0u, threads - 1}) {
    const uint32_t want = op == PeakOp::Read ? peak_read_reference(t, threads, iters) : peak_reference(op, t, iters, inp);
    if (r.out[t] != want) throw GpuError("peak: thread " + std::to_string(t) + " of the probe computed a wrong word");
  }
  const double work = (double)groups * kPeakThreads * iters * passes;
  const double per_step = op == PeakOp::Dot4I8 ? 8 * 8 : op == PeakOp::Fma ? 8 * 2 : 16;
  best.per_second = work * per_step / best.seconds;
  return best;
}

static constexpr uint32_t kOccupancyTable = 1u << 18;  // words: 1 MB, more than an SM's L1
static uint32_t occupancy_next(uint32_t j) { return (j * 97u + 1u) % kOccupancyTable; }

Buffer occupancy_table(Device& dev) {
  Buffer table = dev.buffer("occupancy.table", kOccupancyTable * 4);
  std::vector<uint32_t> next(kOccupancyTable);
  for (uint32_t j = 0; j < kOccupancyTable; j++) next[j] = occupancy_next(j);
  dev.write(table, next.data(), next.size() * 4);
  return table;
}

PeakRun run_occupancy(Kernels& k, const Buffer& table, uint32_t bytes, uint32_t groups, uint32_t iters) {
  Device& dev = k.device();
  const uint64_t threads = (uint64_t)groups * kPeakThreads;
  Buffer out = dev.buffer("occupancy.out", threads * 4);
  const Pipeline& p = k.get({"occupancy", {}, {{"WORDS", (double)(bytes / 4)}, {"ITERS", (double)iters},
                                              {"N", (double)kOccupancyTable}}});
  return timed_run(dev, p, dev.bind(p, {out, table}, "occupancy"), groups, 1, out, threads);
}

uint32_t occupancy_reference(uint32_t bytes, uint32_t t, uint32_t iters) {
  uint32_t j = (t / 32) % kOccupancyTable;
  for (uint32_t i = 0; i < iters; i++) j = occupancy_next(j);
  return j + (t % kPeakThreads + 1) % (bytes / 4);
}

std::vector<OccupancyPoint> measure_occupancy(Kernels& k, uint32_t max_bytes, double min_seconds, int tries,
                                              uint32_t groups) {
  const uint32_t limit = std::min(max_bytes, k.device().limits().maxComputeWorkgroupStorageSize);
  std::vector<uint32_t> sizes = {2u << 10};
  for (uint32_t b = 4u << 10; b <= limit; b += 4u << 10) sizes.push_back(b);
  const Buffer table = occupancy_table(k.device());
  std::vector<OccupancyPoint> points;
  for (uint32_t bytes : sizes) {
    uint32_t iters = 64;
    while (iters < (1u << 20) && run_occupancy(k, table, bytes, groups, iters).seconds < min_seconds) iters *= 2;
    OccupancyPoint pt;
    pt.bytes = bytes;
    PeakRun r;
    for (int i = 0; i < tries; i++) {
      r = run_occupancy(k, table, bytes, groups, iters);
      if (pt.seconds == 0 || r.seconds < pt.seconds) pt.seconds = r.seconds;
    }
    const uint32_t threads = groups * kPeakThreads;
    for (uint32_t t : {0u, threads - 1})
      if (r.out[t] != occupancy_reference(bytes, t, iters))
        throw GpuError("occupancy: thread " + std::to_string(t) + " of the probe ended its chain at a wrong word");
    pt.per_second = (double)threads / 32 * iters / pt.seconds;
    points.push_back(pt);
  }
  return points;
}

}  // namespace ztvm::gpu
