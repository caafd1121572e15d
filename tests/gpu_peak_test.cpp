// kernels/peak.wgsl and kernels/occupancy.wgsl against their CPU twins, and the measurements
// giving checked, positive rates.
#include <gtest/gtest.h>

#include "gpu/peak.h"
#include "gpu_test_util.h"

using namespace ztvm;
using ztvm::test::device;

TEST(Peak, ComputeProbesMatchCpu) {
  gpu::Kernels k(device());
  const std::vector<uint32_t> inp = gpu::peak_inputs();
  for (gpu::PeakOp op : {gpu::PeakOp::Dot4I8, gpu::PeakOp::Fma}) {
    const uint32_t groups = 3, iters = 37;
    gpu::PeakRun r = gpu::run_peak(k, op, groups, iters, inp);
    ASSERT_EQ(r.out.size(), groups * gpu::kPeakThreads);
    for (uint32_t t = 0; t < r.out.size(); t++)
      ASSERT_EQ(r.out[t], gpu::peak_reference(op, t, iters, inp)) << "op " << (int)op << " thread " << t;
  }
}

TEST(Peak, LongDotChainsMatchCpu) {
  // Signed extremes in every byte of the fixed words; the stepping word goes through all 256 byte values.
  std::vector<uint32_t> inp = gpu::peak_inputs();
  for (int k = 1; k <= 8; k++) inp[k] = k % 2 ? 0x7F807F80u : 0x80807F7Fu;
  gpu::Kernels k(device());
  const uint32_t iters = 40000;
  gpu::PeakRun r = gpu::run_peak(k, gpu::PeakOp::Dot4I8, 1, iters, inp);
  for (uint32_t t : {0u, 255u}) EXPECT_EQ(r.out[t], gpu::peak_reference(gpu::PeakOp::Dot4I8, t, iters, inp));
}

TEST(Peak, ReadProbeFoldsEveryWord) {
  gpu::Kernels k(device());
  const uint32_t groups = 2, iters = 9, threads = groups * gpu::kPeakThreads;
  gpu::Buffer big = device().buffer("test.big", (uint64_t)threads * iters * 16);
  gpu::fill_read_pattern(device(), big);
  gpu::PeakRun r = gpu::run_peak(k, gpu::PeakOp::Read, groups, iters, gpu::peak_inputs(), &big);
  for (uint32_t t = 0; t < threads; t++) ASSERT_EQ(r.out[t], gpu::peak_read_reference(t, threads, iters)) << t;
}

TEST(Peak, MeasuredRatesArePositive) {
  gpu::Kernels k(device());
  for (gpu::PeakOp op : {gpu::PeakOp::Dot4I8, gpu::PeakOp::Fma, gpu::PeakOp::Read}) {
    gpu::PeakRate r = gpu::measure_peak(k, op, 0.01, 1, 8u << 20);
    EXPECT_GT(r.per_second, 0) << (int)op;
    EXPECT_GT(r.seconds, 0) << (int)op;
  }
}

TEST(Peak, OccupancyChainsMatchCpu) {
  gpu::Kernels k(device());
  const gpu::Buffer table = gpu::occupancy_table(device());
  for (uint32_t bytes : {1000u, 4096u}) {  // 250 words: workgroup memory that is not a power of two
    const uint32_t groups = 2, iters = 37;
    gpu::PeakRun r = gpu::run_occupancy(k, table, bytes, groups, iters);
    ASSERT_EQ(r.out.size(), groups * gpu::kPeakThreads);
    for (uint32_t t = 0; t < r.out.size(); t++)
      ASSERT_EQ(r.out[t], gpu::occupancy_reference(bytes, t, iters)) << bytes << " bytes, thread " << t;
  }
}

TEST(Peak, OccupancySweepCoversTheSizes) {
  gpu::Kernels k(device());
  const std::vector<gpu::OccupancyPoint> pts = gpu::measure_occupancy(k, 8u << 10, 0.005, 1, 8);
  ASSERT_EQ(pts.size(), 3u);  // 2, 4 and 8 KB
  for (size_t i = 0; i < pts.size(); i++) {
    EXPECT_EQ(pts[i].bytes, i == 0 ? 2048u : 4096u * (uint32_t)i);
    EXPECT_GT(pts[i].per_second, 0);
  }
}
