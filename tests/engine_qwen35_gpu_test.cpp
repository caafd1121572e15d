// Qwen3.5 (issue 53) on the GPU: the tiny random models of tools/make_fixtures.py (a gated DeltaNet
// layer, then a gated attention one with partial rotary; dense, or a mixture of experts with a gated
// shared expert) through the GPU forward pass (forward.cpp: deltanet_conv, deltanet_scan,
// gated_rmsnorm, sigmoid_gate) match transformers' logits and greedy tokens: in one prefill pass, in
// chunks that carry the DeltaNet state (down to one-token passes), and over a 40-token sequence
// against the CPU reference; quantized on load (Q8_0, Q4_K), against the CPU reference's int8-x twin.
// A second call with the same or a shorter prompt resumes from a snapshot of the state inside it, or
// from position 0 (engine_qwen35_reuse_test covers prefix reuse).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "engine/forward.h"
#include "engine/generator.h"
#include "engine/npy.h"
#include "gpu_test_util.h"
#include "model/convert.h"
#include "model/model_file.h"
#include "reference/model.h"

using namespace ztvm;
using test::nmse;

namespace {

const std::string kFixtures = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/";
const std::string kDir = kFixtures + "qwen3.5-f16", kMoe = kFixtures + "qwen3.5-moe-f16";

std::vector<int32_t> read_ids(const std::string& path) {  // ids.txt, greedy24.txt: space separated
  std::ifstream f(path);
  return {std::istream_iterator<int32_t>(f), std::istream_iterator<int32_t>()};
}

std::vector<int32_t> greedy(Generator& gen, const std::vector<int32_t>& prompt, uint32_t n) {
  std::vector<int32_t> out;
  gen.generate(prompt, n, [&](int32_t t) {
    out.push_back(t);
    return true;
  });
  return out;
}

// max_chunk 16 takes the 16-token prompt in one pass; 5 in passes of 5, 5, 5 and 1.
void expect_matches_transformers(const std::string& dir, uint32_t max_chunk) {
  auto m = open_model(dir);
  ASSERT_TRUE(m->config.has_recurrent_state());
  const std::vector<int32_t> ids = read_ids(dir + "/ids.txt"), want_greedy = read_ids(dir + "/greedy24.txt");
  const NpyArray want = read_npy(dir + "/logits.npy");
  Forward fwd(test::device(), *m, 64, max_chunk);
  Generator gen(fwd);
  const std::vector<float> logits = gen.logits(ids);
  ASSERT_EQ(logits.size(), want.data.size());
  const double e = nmse(logits, want.data);
  std::printf("  %s (HF F16, GPU, chunks of %u): logits NMSE vs transformers %.3g\n", m->config.arch_name.c_str(),
              fwd.max_chunk(), e);
  EXPECT_LT(e, 1e-5);
  gen.reset();
  EXPECT_EQ(greedy(gen, ids, (uint32_t)want_greedy.size()), want_greedy);
  // The same prompt again: the cache holds it, but the DeltaNet state is past it, so the prompt runs
  // from a snapshot before its last token (chunks of 5) or from position 0; then a shorter one, and
  // the whole one once more.
  EXPECT_EQ(greedy(gen, ids, (uint32_t)want_greedy.size()), want_greedy);
  greedy(gen, std::vector<int32_t>(ids.begin(), ids.begin() + 9), 3);
  EXPECT_EQ(greedy(gen, ids, (uint32_t)want_greedy.size()), want_greedy);
}

TEST(Qwen35Gpu, OnePassMatchesTransformers) { expect_matches_transformers(kDir, 16); }
TEST(Qwen35Gpu, ChunkedPrefillMatchesTransformers) { expect_matches_transformers(kDir, 5); }
TEST(Qwen35Gpu, MoeOnePassMatchesTransformers) { expect_matches_transformers(kMoe, 16); }
TEST(Qwen35Gpu, MoeChunkedPrefillMatchesTransformers) { expect_matches_transformers(kMoe, 5); }

// 40 tokens (the prompt and its greedy continuation) in chunks of 16, 16 and 8, each token's logits
// against the CPU reference's in one pass.
TEST(Qwen35Gpu, LongSequenceInChunksMatchesReference) {
  auto m = open_model(kDir);
  std::vector<int32_t> ids = read_ids(kDir + "/ids.txt");
  for (int32_t t : read_ids(kDir + "/greedy24.txt")) ids.push_back(t);
  const std::vector<float> want = ref::forward_logits(*m, ids);
  Forward fwd(test::device(), *m, 64, 16);
  Generator gen(fwd);
  const std::vector<float> logits = gen.logits(ids);
  ASSERT_EQ(logits.size(), want.size());
  const double e = nmse(logits, want);
  std::printf("  qwen3.5 (HF F16, GPU, %zu tokens in chunks of 16): logits NMSE vs the CPU reference %.3g\n",
              ids.size(), e);
  EXPECT_LT(e, 1e-5);
}


// Both models quantized on load (Q8_0, Q4_K: the DeltaNet's small beta and alpha matrices, the shared
// expert's one-row gate) on the GPU against the CPU reference's int8-x twin on the same weights, in
// whole-prompt passes and one token at a time.
TEST(Qwen35Gpu, QuantizedMatchesInt8CpuTwin) {
  const std::vector<int32_t> ids = read_ids(kDir + "/ids.txt");
  for (const std::string& dir : {kDir, kMoe})
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_K}) {
      auto m = open_model(dir);
      ASSERT_GT(quantize_weights(*m, type), 0u);
      const std::vector<float> cpu = ref::forward_logits(*m, ids, true);
      for (uint32_t chunk : {16u, 1u}) {
        Forward fwd(test::device(), *m, 64, chunk);
        const std::vector<float> gpu = Generator(fwd).logits(ids);
        ASSERT_EQ(gpu.size(), cpu.size());
        const double e = nmse(gpu, cpu);
        std::printf("  %s %s passes of %2u: GPU vs int8-x CPU twin NMSE %.3g\n", m->config.arch_name.c_str(),
                    type_name(type), chunk, e);
        EXPECT_LT(e, 1e-3) << m->config.arch_name << " " << type_name(type) << " chunk " << chunk;
      }
    }
}

}  // namespace
