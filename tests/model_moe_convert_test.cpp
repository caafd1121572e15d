// convert_model on a mixture-of-experts model (qwen3moe): the tiny Qwen3-MoE fixture (HF F16,
// experts stored one by one) written as llama.cpp's convert_hf_to_gguf.py + llama-quantize write
// Qwen3-MoE: its qwen3moe.* keys, the F32 router, each role's experts stacked into one 3-D tensor,
// the per-tensor types of the Q4_K_M mix, and a GGUF input re-quantized. The logits of the
// converted files are checked in engine_moe_convert_test.cpp (the CPU reference is in the engine).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

#include "model/convert.h"
#include "model/gguf_writer.h"
#include "model/model_file.h"
#include "model_test_util.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

const std::string kDir = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/qwen3-moe-f16";

std::vector<uint8_t> bytes_of(const TensorView& t) { return std::vector<uint8_t>(t.data, t.data + t.nbytes); }

// The tensors llama.cpp's qwen3moe loads (llama-model.cpp), by name: GGUF ne. The fixture: d 256,
// 4 heads of 64 (2 kv), 4 experts of 128 rows, vocab 512, untied head, 2 layers.
std::map<std::string, std::vector<uint64_t>> llama_cpp_tensors() {
  std::map<std::string, std::vector<uint64_t>> want = {
      {"token_embd.weight", {256, 512}}, {"output_norm.weight", {256}}, {"output.weight", {256, 512}}};
  for (uint32_t l = 0; l < 2; ++l) {
    auto n = [&](const char* role) { return layer_tensor(l, role); };
    want[n("attn_norm")] = {256};
    want[n("attn_q")] = {256, 256};
    want[n("attn_k")] = {256, 128};
    want[n("attn_v")] = {256, 128};
    want[n("attn_q_norm")] = {64};
    want[n("attn_k_norm")] = {64};
    want[n("attn_output")] = {256, 256};
    want[n("ffn_norm")] = {256};
    want[n("ffn_gate_inp")] = {256, 4};
    want[n("ffn_gate_exps")] = {256, 128, 4};
    want[n("ffn_up_exps")] = {256, 128, 4};
    want[n("ffn_down_exps")] = {128, 256, 4};
  }
  return want;
}

}  // namespace

// F16: the config comes back, and every expert's rows are the checkpoint's bytes, in place in the stack.
TEST(MoeConvert, F16KeepsTheConfigAndEveryExpertsBytes) {
  TempDir dir;
  auto hf = open_model(kDir);
  convert_model(*hf, dir.file("f16.gguf"), GgmlType::F16, nullptr);
  auto m = open_model(dir.file("f16.gguf"));
  const ModelConfig &c = m->config, &h = hf->config;
  EXPECT_EQ(c.arch, Arch::Qwen3Moe);
  EXPECT_EQ(m->gguf->get_string("general.architecture"), "qwen3moe");
  EXPECT_EQ(c.num_experts, 4u);
  EXPECT_EQ(c.num_experts_per_tok, 2u);
  EXPECT_EQ(c.moe_intermediate_size, 128u);
  EXPECT_TRUE(c.norm_topk_prob);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) EXPECT_EQ(c.layer(l).ffn, Ffn::Moe) << l;
  EXPECT_EQ(c.hidden_size, h.hidden_size);
  EXPECT_EQ(c.intermediate_size, h.intermediate_size);
  EXPECT_EQ(c.num_hidden_layers, h.num_hidden_layers);
  EXPECT_EQ(c.num_attention_heads, h.num_attention_heads);
  EXPECT_EQ(c.num_key_value_heads, h.num_key_value_heads);
  EXPECT_EQ(c.head_dim, h.head_dim);
  EXPECT_EQ(c.max_position_embeddings, h.max_position_embeddings);
  EXPECT_FLOAT_EQ(c.rope_theta, h.rope_theta);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, h.rms_norm_eps);
  EXPECT_EQ(c.rope_style, RopeStyle::Neox);  // qwen3moe keeps HF's rows: no Q/K permutation
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.tie_word_embeddings);
  // The keys llama.cpp's converter writes for Qwen3-MoE, by name.
  const std::pair<const char*, uint64_t> keys[] = {
      {"qwen3moe.block_count", 2},          {"qwen3moe.context_length", 512},
      {"qwen3moe.embedding_length", 256},   {"qwen3moe.feed_forward_length", 256},
      {"qwen3moe.attention.head_count", 4}, {"qwen3moe.attention.head_count_kv", 2},
      {"qwen3moe.attention.key_length", 64}, {"qwen3moe.attention.value_length", 64},
      {"qwen3moe.expert_count", 4},         {"qwen3moe.expert_used_count", 2},
      {"qwen3moe.expert_feed_forward_length", 128}, {"general.file_type", 1}};
  for (const auto& [key, v] : keys) EXPECT_EQ(m->gguf->get_uint(key), v) << key;
  EXPECT_FLOAT_EQ(float(m->gguf->get_float("qwen3moe.rope.freq_base")), 1e6f);
  EXPECT_FLOAT_EQ(float(m->gguf->get_float("qwen3moe.attention.layer_norm_rms_epsilon")), 1e-5f);

  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".mlp.";
    for (uint32_t e = 0; e < c.num_experts; ++e) {
      for (auto [role, hf_name] : {std::pair{"ffn_gate", "gate_proj"}, std::pair{"ffn_up", "up_proj"},
                                   std::pair{"ffn_down", "down_proj"}}) {
        const TensorView& want = *hf->safetensors->find(p + "experts." + std::to_string(e) + "." + hf_name + ".weight");
        const TensorView& got = m->get(expert_tensor(l, role, e));
        ASSERT_EQ(got.type, GgmlType::F16);
        EXPECT_EQ(bytes_of(got), bytes_of(want)) << expert_tensor(l, role, e);
        // Expert e's rows sit e experts into the stack, as torch.stack puts them.
        const TensorView& stack = m->get(layer_tensor(l, (std::string(role) + "_exps").c_str()));
        EXPECT_EQ(got.data, stack.data + e * got.nbytes);
      }
    }
    // The router: F32 (the F16 checkpoint's values exactly), [hidden, experts].
    const TensorView& router = m->get(layer_tensor(l, "ffn_gate_inp"));
    EXPECT_EQ(router.type, GgmlType::F32);
    EXPECT_EQ(values(router), values(*hf->safetensors->find(p + "gate.weight")));
  }
}

// The tensor list llama.cpp loads, exactly: names, ne, and the types each file type gives them.
TEST(MoeConvert, TensorsAreTheOnesLlamaCppLoads) {
  TempDir dir;
  auto hf = open_model(kDir);
  const auto want = llama_cpp_tensors();
  // Q4_K_M by llama-quantize's rules, written out: Q4_K, but Q6_K for attn_v and ffn_down in
  // use_more_bits layers (of 2, layer 1), the LM head Q6_K; 128-wide ffn_down rows take no 256-block,
  // so Q4_K -> Q5_0 and Q6_K -> Q8_0 (tensor_type_fallback).
  const std::map<std::string, GgmlType> q4_k_m = {
      {"token_embd.weight", GgmlType::Q4_K},      {"output.weight", GgmlType::Q6_K},
      {"blk.0.attn_v.weight", GgmlType::Q4_K},     {"blk.1.attn_v.weight", GgmlType::Q6_K},
      {"blk.0.ffn_down_exps.weight", GgmlType::Q5_0}, {"blk.1.ffn_down_exps.weight", GgmlType::Q8_0},
      {"blk.1.ffn_gate_exps.weight", GgmlType::Q4_K}, {"blk.1.ffn_up_exps.weight", GgmlType::Q4_K},
      {"blk.1.attn_q.weight", GgmlType::Q4_K},     {"blk.1.attn_output.weight", GgmlType::Q4_K}};
  struct Case {
    const char* name;
    std::function<void(const std::string&)> convert;
    GgmlType matrices;  // every matrix but the router, unless listed in `exceptions`
    uint32_t file_type;
    const std::map<std::string, GgmlType>* exceptions;
  };
  const Case cases[] = {
      {"F16", [&](const std::string& p) { convert_model(*hf, p, GgmlType::F16, nullptr); }, GgmlType::F16, 1, nullptr},
      {"Q8_0", [&](const std::string& p) { convert_model(*hf, p, GgmlType::Q8_0, nullptr); }, GgmlType::Q8_0, 7, nullptr},
      {"Q4_K_M", [&](const std::string& p) { convert_model(*hf, p, QuantMix::Q4_K_M, nullptr); }, GgmlType::Q4_K, 15, &q4_k_m},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const std::string path = dir.file(std::string(k.name) + ".gguf");
    k.convert(path);
    auto g = GgufFile::open(path);
    EXPECT_EQ(g->get_uint("general.file_type"), k.file_type);
    std::map<std::string, std::vector<uint64_t>> got;
    for (const TensorView& t : g->tensors()) {
      got[t.name] = t.ne;
      GgmlType expected = t.ne.size() == 1 || t.name.find("ffn_gate_inp") != std::string::npos ? GgmlType::F32 : k.matrices;
      if (k.exceptions && k.exceptions->count(t.name)) expected = k.exceptions->at(t.name);
      EXPECT_EQ(t.type, expected) << t.name << ": " << type_name(t.type);
    }
    EXPECT_EQ(got, want);
    auto m = open_model(path);  // and it opens, every expert a view of its stack
    EXPECT_EQ(m->get(expert_tensor(1, "ffn_down", 3)).ne, (std::vector<uint64_t>{128, 256}));
  }
}

// A qwen3moe GGUF as the input: re-quantizing it gives the bytes converting the HF directory gives.
TEST(MoeConvert, GgufInputRequantizes) {
  TempDir dir;
  auto hf = open_model(kDir);
  convert_model(*hf, dir.file("f16.gguf"), GgmlType::F16, nullptr);
  convert_model(*hf, dir.file("direct.gguf"), GgmlType::Q8_0, nullptr);
  auto f16 = open_model(dir.file("f16.gguf"));
  convert_model(*f16, dir.file("again.gguf"), GgmlType::Q8_0, nullptr);
  convert_model(*f16, dir.file("mix.gguf"), QuantMix::Q4_K_M, nullptr);
  auto direct = GgufFile::open(dir.file("direct.gguf")), again = GgufFile::open(dir.file("again.gguf"));
  ASSERT_EQ(again->tensors().size(), direct->tensors().size());
  for (const TensorView& t : direct->tensors()) {
    const TensorView* mine = again->find(t.name);
    ASSERT_TRUE(mine) << t.name;
    EXPECT_EQ(mine->ne, t.ne) << t.name;
    EXPECT_EQ(mine->type, t.type) << t.name;
    EXPECT_EQ(bytes_of(*mine), bytes_of(t)) << t.name;
  }
  auto mix = open_model(dir.file("mix.gguf"));
  EXPECT_EQ(mix->config.num_experts, 4u);
  EXPECT_EQ(mix->get("blk.0.ffn_gate_exps.weight").type, GgmlType::Q4_K);
  EXPECT_EQ(mix->get("blk.0.ffn_gate_inp.weight").type, GgmlType::F32);
}

// What llama.cpp's qwen3moe cannot express is refused before a byte is written.
TEST(MoeConvert, RefusesWhatLlamaCppsQwen3MoeCannotSay) {
  TempDir dir;
  auto m = open_model(kDir);
  m->config.norm_topk_prob = false;
  expect_model_error([&] { convert_model(*m, dir.file("x.gguf"), GgmlType::F16, nullptr); },
                     {"norm_topk_prob is false", "renormalises"});
  m->config.norm_topk_prob = true;
  m->config.layer_kinds[1].ffn = Ffn::Dense;
  expect_model_error([&] { convert_model(*m, dir.file("x.gguf"), QuantMix::Q4_K_M, nullptr); },
                     {"layer 1 has a dense FFN", "qwen3moe"});
  // Qwen3.5-MoE is written (model_qwen35_convert_test.cpp), but not without its shared expert.
  auto q35 = open_model(std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/qwen3.5-moe-f16");
  q35->config.shared_expert_intermediate_size = 0;
  expect_model_error([&] { convert_model(*q35, dir.file("x.gguf"), GgmlType::F16, nullptr); },
                     {"no shared expert", "qwen35moe requires one"});
  EXPECT_FALSE(fs::exists(dir.file("x.gguf")));
  EXPECT_FALSE(fs::exists(dir.file("x.gguf.tmp")));
}

// The writer asks a row-range tensor for chunks of about kChunkBytes, never the whole tensor.
TEST(MoeConvert, WriterFillsLargeTensorsInRowChunks) {
  TempDir dir;
  const uint64_t cols = GgufWriter::kChunkBytes / 4 / 2 + 32;  // a little over half a chunk per F32 row
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  GgufWriter w;
  w.set_string("general.architecture", "test");
  w.add_tensor_rows("big", GgmlType::F32, {cols, 3, 2}, [&](uint8_t* out, uint64_t first, uint64_t n) {
    calls.push_back({first, n});
    for (uint64_t r = 0; r < n; ++r)
      for (uint64_t i = 0; i < cols; i += cols - 1) {
        const float v = float(first + r);
        std::memcpy(out + (r * cols + i) * 4, &v, 4);
      }
  });
  w.write(dir.file("w.gguf"));
  EXPECT_EQ(calls, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}));
  auto g = GgufFile::open(dir.file("w.gguf"));
  const TensorView& t = *g->find("big");
  EXPECT_EQ(t.ne, (std::vector<uint64_t>{cols, 3, 2}));
  float last;
  std::memcpy(&last, t.data + (5 * cols + cols - 1) * 4, 4);
  EXPECT_EQ(last, 5.f);
}

// `ztvm info` on the converted file names its experts.
TEST(MoeConvert, InfoPrintsTheExperts) {
  const char* bin = std::getenv("ZTVM_BIN");
  if (!bin || !fs::exists(bin)) GTEST_SKIP() << "ZTVM_BIN not set (ctest sets it)";
  TempDir dir;
  convert_model(*open_model(kDir), dir.file("q8.gguf"), GgmlType::Q8_0, nullptr);
  FILE* p = popen((std::string(bin) + " info " + dir.file("q8.gguf") + " 2>&1").c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_NE(out.find("experts             2 of 4 per token, 128 wide, weights renormalised, in 2 of 2 layers"),
            std::string::npos) << out;
  EXPECT_NE(out.find("blk.0.ffn_down_exps.weight"), std::string::npos) << out;
}
