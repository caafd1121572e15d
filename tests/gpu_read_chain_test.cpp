// gpu/read_chain.h: the spec grammar (and its errors), and a small chain on the test device whose
// words are checked inside run() and whose times and byte counts add up.
#include <gtest/gtest.h>

#include <stdexcept>

#include "gpu/read_chain.h"
#include "gpu_test_util.h"

using namespace ztvm;
using ztvm::test::device;

TEST(ReadChain, SpecListsDispatchSizes) {
  EXPECT_EQ(gpu::parse_read_chain("1.5"), (std::vector<uint64_t>{1500000}));
  EXPECT_EQ(gpu::parse_read_chain("2x[0.1,0]+3"), (std::vector<uint64_t>{100000, 0, 100000, 0, 3000000}));
  EXPECT_EQ(gpu::parse_read_chain("36x[8.85,0.4,5.9,28,14]+319").size(), 36u * 5 + 1);
  EXPECT_EQ(gpu::parse_read_chain("3x0.25"), (std::vector<uint64_t>{250000, 250000, 250000}));
}

TEST(ReadChain, BadSpecsSayWhere) {
  for (const char* bad : {"", "x", "2x", "[1,2", "[1;2]", "1+", "-1", "0x1", "1e9", "9999999x1", "1 2", "nan"}) {
    try {
      gpu::parse_read_chain(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("at character"), std::string::npos) << e.what();
    }
  }
}

TEST(ReadChain, ChainReadsWhatItSays) {
  gpu::Kernels k(device());
  // Sizes that are not whole workgroup steps, a zero (one workgroup) and a repeat.
  const std::vector<uint64_t> sizes = gpu::parse_read_chain("2x[0.01,0.05]+0");
  gpu::ReadChain rc(k, sizes);
  for (uint32_t aim : {1u, 4u, 64u}) {
    const gpu::ReadChainRun r = rc.run(aim, 2, 1);  // throws if the last dispatch's words are wrong
    EXPECT_EQ(r.dispatches, 5u);
    EXPECT_GE(r.bytes, 2u * (10000 + 50000));
    EXPECT_LE(r.bytes, 2u * (10000 + 50000) + 5u * 4096 * 64);  // rounded up by less than a step a thread
    EXPECT_GT(r.seconds, 0);
    // Timestamps (where the test device has them) see the GPU's part of the host's time.
    if (device().timestamps_enabled()) {
      EXPECT_GT(r.gpu_seconds, 0);
    }
    EXPECT_LE(r.gpu_seconds, r.seconds);
  }
  const gpu::ReadChainRun queued = rc.run(4, 3, 1, 1);  // three submissions of one chain
  EXPECT_EQ(queued.dispatches, 5u);
  EXPECT_GT(queued.seconds, 0);
  if (device().timestamps_enabled()) {  // the first pass's beginning to the last one's end
    EXPECT_GT(queued.gpu_seconds, 0);
  }
  EXPECT_LE(queued.gpu_seconds, queued.seconds);
  const gpu::ReadChainRun one = rc.run_size(50000, 4, 1, 1);
  EXPECT_EQ(one.dispatches, 2u);
  EXPECT_THROW(rc.run_size(12345, 4, 1, 1), std::invalid_argument);
}

TEST(ReadChain, GpuTimestampsTimeOnePassAndQueuedSubmissions) {
  gpu::Device dev(gpu::Device::Options{"auto", true, false});  // as `ztvm gpu --read-chain` opens it
  if (!dev.timestamps_enabled()) GTEST_SKIP() << "this adapter has no timestamp queries";
  gpu::Kernels k(dev);
  gpu::ReadChain rc(k, gpu::parse_read_chain("2x[0.05,0]"));
  for (int per_submit : {0, 1}) {
    const gpu::ReadChainRun r = rc.run(4, 3, 1, per_submit);
    EXPECT_GT(r.gpu_seconds, 0) << per_submit;
    EXPECT_LE(r.gpu_seconds, r.seconds) << per_submit;
  }
}
