// The mixture-of-experts files convert and synth write, run by the CPU reference forward pass
// (src/reference/model.cpp): the fixture's F16 GGUF gives the HF directory's logits, its Q8_0 and
// Q4_K_M files stay close to transformers', and a random tiny qwen3moe from synth runs without a
// NaN and routes its tokens to different experts. The file layout itself: model_moe_convert_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "engine/npy.h"
#include "model/convert.h"
#include "model/model_file.h"
#include "model/synth.h"
#include "model_test_util.h"
#include "reference/model.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

const std::string kDir = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/qwen3-moe-f16";

std::vector<int32_t> fixture_ids() {
  std::ifstream f(kDir + "/ids.txt");
  std::vector<int32_t> ids;
  for (int32_t v; f >> v;) ids.push_back(v);
  return ids;
}

}  // namespace

// F16 moves every matrix as bytes and widens the router exactly, so the logits are the directory's.
TEST(MoeConvertForward, F16GgufGivesTheDirectorysLogits) {
  TempDir dir;
  auto hf = open_model(kDir);
  convert_model(*hf, dir.file("f16.gguf"), GgmlType::F16, nullptr);
  auto gguf = open_model(dir.file("f16.gguf"));
  const std::vector<int32_t> ids = fixture_ids();
  const std::vector<float> want = ref::forward_logits(*hf, ids), got = ref::forward_logits(*gguf, ids);
  ASSERT_EQ(got.size(), want.size());
  const double e = nmse(got, want);
  std::printf("  qwen3-moe F16 GGUF vs HF directory (CPU reference): logits NMSE %.3g\n", e);
  EXPECT_LT(e, 1e-10);
}

// Quantized files against transformers' own logits (fixture logits.npy). The random tiny model is
// sensitive: measured Q8_0 4.1e-4, Q6_K 3.4e-3, Q5_K_M 2.2e-2, Q4_K_M 5.9e-2, Q4_K 6.5e-2, Q4_0 8.3e-2
// (about 4x a bit, as the weights' own error), so the bound is loose for Q4_K_M.
TEST(MoeConvertForward, QuantizedFilesStayCloseToTransformers) {
  TempDir dir;
  auto hf = open_model(kDir);
  const NpyArray want = read_npy(kDir + "/logits.npy");
  const std::vector<int32_t> ids = fixture_ids();
  struct Case {
    const char* name;
    bool mix;
    GgmlType type;
    QuantMix quant_mix;
    double bound;
  };
  for (const Case& k : {Case{"Q8_0", false, GgmlType::Q8_0, QuantMix::F16, 1e-3},
                        Case{"Q4_K_M", true, GgmlType::F16, QuantMix::Q4_K_M, 8e-2}}) {
    SCOPED_TRACE(k.name);
    const std::string path = dir.file(std::string(k.name) + ".gguf");
    if (k.mix) convert_model(*hf, path, k.quant_mix, nullptr);
    else convert_model(*hf, path, k.type, nullptr);
    const std::vector<float> logits = ref::forward_logits(*open_model(path), ids);
    ASSERT_EQ(logits.size(), want.data.size());
    const double e = nmse(logits, want.data);
    std::printf("  qwen3-moe %-6s GGUF (CPU reference): logits NMSE vs transformers %.3g\n", k.name, e);
    EXPECT_LT(e, k.bound);
  }
}

// synth's tiny qwen3moe in each mixture: finite logits, and its random router sends tokens to
// different experts (the top expert of the first layer is not the same for every token).
TEST(MoeConvertForward, SynthTinyMoeRunsAndRoutes) {
  TempDir dir;
  const std::vector<int32_t> ids = {1, 7, 42, 99, 300, 511, 5, 64};
  for (QuantMix mix : {QuantMix::Q4_K_M, QuantMix::Q8_0, QuantMix::Q4_0, QuantMix::IQ4_XS}) {
    SCOPED_TRACE(quant_mix_name(mix));
    const std::string path = dir.file(std::string(quant_mix_name(mix)) + ".gguf");
    synth_model(synth_shape("tiny-moe"), mix, nullptr, path);
    auto m = open_model(path);
    ASSERT_EQ(m->config.arch, Arch::Qwen3Moe);
    const std::vector<float> logits = ref::forward_logits(*m, ids);
    ASSERT_EQ(logits.size(), ids.size() * m->config.vocab_size);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
    // Router logits of each token's embedding row (norm weights are 1, so rmsnorm only rescales).
    const std::vector<float> router = values(m->get("blk.0.ffn_gate_inp.weight"));
    const std::vector<float> embd = values(m->get("token_embd.weight"));
    const uint64_t d = m->config.hidden_size, E = m->config.num_experts;
    std::set<uint64_t> top;
    for (int32_t id : ids) {
      uint64_t best = 0;
      double best_logit = -1e30;
      for (uint64_t e = 0; e < E; ++e) {
        double z = 0;
        for (uint64_t i = 0; i < d; ++i) z += double(router[e * d + i]) * embd[uint64_t(id) * d + i];
        if (z > best_logit) best_logit = z, best = e;
      }
      top.insert(best);
    }
    EXPECT_GE(top.size(), 2u);
  }
}
