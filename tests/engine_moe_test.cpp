// Mixture-of-experts models (issue 53): a tiny random Qwen3-MoE made by
// tools/make_fixtures.py with transformers 5.17 (4 experts, 2 a token, renormalised) opens from its
// HF directory with every expert as a 2-D view (expert_tensor), and both the CPU reference forward
// pass (src/reference/model.cpp) and the GPU one match transformers' logits and greedy tokens.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/forward.h"
#include "engine/generator.h"
#include "engine/npy.h"
#include "gpu_test_util.h"
#include "model/convert.h"
#include "model/model_error.h"
#include "model/model_file.h"
#include "model/synth.h"
#include "reference/model.h"
#include "reference/ops.h"

using namespace ztvm;
using test::nmse;

namespace {

const std::string kDir = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/qwen3-moe-f16";

std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream f(path);
  std::vector<int32_t> ids;
  for (int32_t v; f >> v;) ids.push_back(v);
  return ids;
}

TEST(Moe, Qwen3MoeDirectoryOpensWithItsExperts) {
  auto m = open_model(kDir);
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.arch, Arch::Qwen3Moe);
  EXPECT_EQ(c.arch_name, "qwen3moe");
  EXPECT_EQ(c.num_experts, 4u);
  EXPECT_EQ(c.num_experts_per_tok, 2u);
  EXPECT_EQ(c.moe_intermediate_size, 128u);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_TRUE(c.qk_norm);
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) EXPECT_EQ(c.layer(l).ffn, Ffn::Moe) << l;
  // Every expert a view of its own tensor in the checkpoint (stored one by one, as the Hub's are).
  const TensorView& up = m->get(expert_tensor(1, "ffn_up", 2));
  EXPECT_EQ(up.ne, (std::vector<uint64_t>{256, 128}));
  EXPECT_EQ(up.data, m->safetensors->find("model.layers.1.mlp.experts.2.up_proj.weight")->data);
  const TensorView& down = m->get(expert_tensor(0, "ffn_down", 3));
  EXPECT_EQ(down.ne, (std::vector<uint64_t>{128, 256}));
  EXPECT_EQ(down.data, m->safetensors->find("model.layers.0.mlp.experts.3.down_proj.weight")->data);
  EXPECT_EQ(m->get(layer_tensor(0, "ffn_gate_inp")).ne, (std::vector<uint64_t>{256, 4}));
}

TEST(Moe, ReferenceMatchesTransformers) {
  auto m = open_model(kDir);
  const std::vector<int32_t> ids = read_ids(kDir + "/ids.txt"), want_greedy = read_ids(kDir + "/greedy24.txt");
  const NpyArray want = read_npy(kDir + "/logits.npy");
  const std::vector<float> logits = ref::forward_logits(*m, ids);
  ASSERT_EQ(logits.size(), want.data.size());
  const double e = nmse(logits, want.data);
  std::printf("  qwen3-moe (HF F16, CPU reference): logits NMSE vs transformers %.3g\n", e);
  EXPECT_LT(e, 1e-5);
  // Greedy, the whole sequence again for every token (the reference keeps no cache).
  std::vector<int32_t> seq = ids, greedy;
  const uint32_t vocab = m->config.vocab_size;
  while (greedy.size() < want_greedy.size()) {
    const std::vector<float> all = ref::forward_logits(*m, seq);
    const int32_t next = (int32_t)ref::argmax(all.data() + all.size() - vocab, vocab);
    greedy.push_back(next), seq.push_back(next);
  }
  EXPECT_EQ(greedy, want_greedy);
}

// The GPU forward pass (moe_route, matvec_moe, moe_combine) against transformers: logits of a prompt
// in one prefill pass and token by token, and the greedy continuation.
TEST(Moe, GpuForwardMatchesTransformers) {
  auto m = open_model(kDir);
  const std::vector<int32_t> ids = read_ids(kDir + "/ids.txt"), want_greedy = read_ids(kDir + "/greedy24.txt");
  const NpyArray want = read_npy(kDir + "/logits.npy");
  Forward fwd(test::device(), *m, 64, 16);
  Generator gen(fwd);
  const std::vector<float> logits = gen.logits(ids);
  ASSERT_EQ(logits.size(), want.data.size());
  const double e = nmse(logits, want.data);
  std::printf("  qwen3-moe (HF F16, GPU): logits NMSE vs transformers %.3g\n", e);
  EXPECT_LT(e, 1e-5);
  gen.reset();
  std::vector<int32_t> greedy;
  gen.generate(ids, (uint32_t)want_greedy.size(), [&](int32_t t) {
    greedy.push_back(t);
    return true;
  });
  EXPECT_EQ(greedy, want_greedy);
}

// The GPU forward pass on quantized MoE files against the CPU reference on the same file, with its
// int8-x twin (inputs of int8-dot matrices quantized as the GPU's matvecs read them): passes of the
// whole prompt (16 tokens x 2 of 4 experts: the experts' int8 GEMM on moe_sort's tiles, h kept as
// int8 units between gate|up and down) and of one token (by pair), on the converted fixture and a
// synth tiny-moe.
TEST(Moe, GpuMatchesInt8CpuTwinOnQuantizedFiles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ztvm_moe_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto hf = open_model(kDir);
  const std::vector<int32_t> ids = read_ids(kDir + "/ids.txt");
  struct Case { const char* name; QuantMix mix; bool synth; };
  for (const Case& k : {Case{"Q8_0", QuantMix::Q8_0, false}, Case{"Q4_K_M", QuantMix::Q4_K_M, false},
                        Case{"synth Q4_K_M", QuantMix::Q4_K_M, true}}) {
    SCOPED_TRACE(k.name);
    const std::string path = (dir / (std::string(k.synth ? "synth-" : "") + quant_mix_name(k.mix) + ".gguf")).string();
    if (k.synth) synth_model(synth_shape("tiny-moe"), k.mix, nullptr, path);
    else convert_model(*hf, path, k.mix, nullptr);
    auto m = open_model(path);
    const std::vector<float> cpu = ref::forward_logits(*m, ids, true);
    for (uint32_t chunk : {64u, 1u}) {
      Forward fwd(test::device(), *m, 64, chunk);
      const std::vector<float> gpu = Generator(fwd).logits(ids);
      ASSERT_EQ(gpu.size(), cpu.size());
      const double e = nmse(gpu, cpu);
      std::printf("  qwen3-moe %-12s passes of %2u: GPU vs int8-x CPU twin NMSE %.3g\n", k.name, chunk, e);
      // As the dense Q4_K_M twin test (engine_model_test: 1e-3). Measured: Q8_0 2e-14 in whole-prompt
      // passes, 1.7e-5 one token at a time; Q4_K_M 5.6e-5 and 5.9e-5 both ways. The larger ones start
      // at one token (the 13th, the 8th, the 3rd: before it 1e-14, after it ~1e-4 every token) with no
      // near tie in the router there (gaps >= 0.0096 in logits): unexplained yet, noted in issue 53.
      EXPECT_LT(e, 1e-3) << "chunk " << chunk;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
