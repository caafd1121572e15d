// convert_model and synth on Qwen3.5 (qwen35 / qwen35moe), written as llama.cpp's converter and
// llama-quantize write them: the keys, tensor names and shapes its src/models/qwen35*.cpp load, the
// tensor bytes against the HF checkpoint's (norms 1 + w, A = -exp(A_log), the value heads tiled:
// checked here against a head table written out by hand), llama-quantize's Q4_K_M types, and the
// real models' synth plans. Logits of the converted files: engine_qwen35_convert_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model/convert.h"
#include "model/model_file.h"
#include "model/safetensors.h"
#include "model/synth.h"
#include "model_test_util.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

const std::string kFixtures = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/";
const std::string kDense = kFixtures + "qwen3.5-f16", kMoe = kFixtures + "qwen3.5-moe-f16";

// What llama.cpp's qwen35 / qwen35moe load from the fixtures (d 256, a DeltaNet layer of 2 key heads
// and 4 value heads of 64, then a gated attention layer of 4 heads of 64 (2 kv); FFN 256, or 4
// experts and a shared expert of 128; vocab 512, untied), GGUF ne by name.
std::map<std::string, std::vector<uint64_t>> llama_cpp_tensors(bool moe) {
  std::map<std::string, std::vector<uint64_t>> want = {
      {"token_embd.weight", {256, 512}}, {"output_norm.weight", {256}}, {"output.weight", {256, 512}}};
  for (uint32_t l = 0; l < 2; ++l) {
    auto n = [&](const char* role, const char* suffix = "weight") { return layer_tensor(l, role, suffix); };
    want[n("attn_norm")] = {256};
    want[n("post_attention_norm")] = {256};
    if (l == 0) {
      want[n("attn_qkv")] = {256, 512};  // q 128, k 128, v 256 rows
      want[n("attn_gate")] = {256, 256};
      want[n("ssm_conv1d")] = {4, 512};
      want[n("ssm_dt", "bias")] = {4};
      want[n("ssm_a", "")] = {4};
      want[n("ssm_beta")] = {256, 4};
      want[n("ssm_alpha")] = {256, 4};
      want[n("ssm_norm")] = {64};
      want[n("ssm_out")] = {256, 256};
    } else {
      want[n("attn_q")] = {256, 512};  // queries and their gates
      want[n("attn_k")] = {256, 128};
      want[n("attn_v")] = {256, 128};
      want[n("attn_q_norm")] = {64};
      want[n("attn_k_norm")] = {64};
      want[n("attn_output")] = {256, 256};
    }
    if (!moe) {
      want[n("ffn_gate")] = {256, 256};
      want[n("ffn_up")] = {256, 256};
      want[n("ffn_down")] = {256, 256};
      continue;
    }
    want[n("ffn_gate_inp")] = {256, 4};
    want[n("ffn_gate_exps")] = {256, 128, 4};
    want[n("ffn_up_exps")] = {256, 128, 4};
    want[n("ffn_down_exps")] = {128, 256, 4};
    want[n("ffn_gate_inp_shexp")] = {256, 1};  // HF's [1, d]
    want[n("ffn_gate_shexp")] = {256, 128};
    want[n("ffn_up_shexp")] = {256, 128};
    want[n("ffn_down_shexp")] = {128, 256};
  }
  return want;
}

// Tiled order of the fixtures' 4 value heads over 2 key heads: output head p is HF's head kHead[p]
// (key head 0's first, key head 1's first, key head 0's second, key head 1's second).
constexpr uint64_t kHead[4] = {0, 2, 1, 3};

std::vector<float> hf_values(const SafetensorsDir& st, const std::string& name) {
  const TensorView* t = st.find(name);
  if (!t) throw std::runtime_error("fixture has no " + name);
  return values(*t);
}

}  // namespace

TEST(Qwen35Convert, KeysAndTensorsAreLlamaCpps) {
  for (bool moe : {false, true}) {
    SCOPED_TRACE(moe ? "qwen35moe" : "qwen35");
    TempDir dir;
    auto hf = open_model(moe ? kMoe : kDense);
    convert_model(*hf, dir.file("m.gguf"), GgmlType::F16, nullptr);
    auto g = GgufFile::open(dir.file("m.gguf"));
    const std::string a = moe ? "qwen35moe." : "qwen35.";
    EXPECT_EQ(g->get_string("general.architecture"), moe ? "qwen35moe" : "qwen35");
    const std::pair<const char*, uint64_t> keys[] = {
        {"block_count", 2}, {"context_length", 512}, {"embedding_length", 256}, {"feed_forward_length", 256},
        {"attention.head_count", 4}, {"attention.head_count_kv", 2}, {"attention.key_length", 64},
        {"attention.value_length", 64}, {"rope.dimension_count", 16}, {"ssm.conv_kernel", 4}, {"ssm.state_size", 64},
        {"ssm.group_count", 2}, {"ssm.time_step_rank", 4}, {"ssm.inner_size", 256},
        {"full_attention_interval", 2}};  // layer_types linear, full: every 2nd layer is attention
    for (auto [key, value] : keys) EXPECT_EQ(g->get_uint(a + key), value) << key;
    EXPECT_FLOAT_EQ(float(g->get_float(a + "rope.freq_base")), 1e7f);
    EXPECT_FLOAT_EQ(float(g->get_float(a + "attention.layer_norm_rms_epsilon")), 1e-5f);
    // llama.cpp requires 4 M-RoPE sections; these cover the 8 rotary pairs with the text position.
    EXPECT_EQ(g->get_int_array(a + "rope.dimension_sections"), (std::vector<int64_t>{3, 3, 2, 0}));
    EXPECT_EQ(g->find_value(a + "attention.recurrent_layers"), nullptr);
    if (moe) {
      EXPECT_EQ(g->get_uint(a + "expert_count"), 4u);
      EXPECT_EQ(g->get_uint(a + "expert_used_count"), 2u);
      EXPECT_EQ(g->get_uint(a + "expert_feed_forward_length"), 128u);
      EXPECT_EQ(g->get_uint(a + "expert_shared_feed_forward_length"), 128u);
    }
    std::map<std::string, std::vector<uint64_t>> got;
    for (const TensorView& t : g->tensors()) {
      got[t.name] = t.ne;
      const bool f32 = t.ne.size() == 1 || t.name.find("ssm_conv1d") != std::string::npos ||
                       t.name.find("ffn_gate_inp") != std::string::npos;
      EXPECT_EQ(t.type, f32 ? GgmlType::F32 : GgmlType::F16) << t.name;
    }
    EXPECT_EQ(got, llama_cpp_tensors(moe));
  }
}

// The converted bytes against the checkpoint's own tensors, read straight from its safetensors.
TEST(Qwen35Convert, ValueHeadsTiledNormsPlusOneDecayNegated) {
  TempDir dir;
  auto hf = open_model(kDense);
  convert_model(*hf, dir.file("m.gguf"), GgmlType::F32, nullptr);
  auto m = open_model(dir.file("m.gguf"));
  auto st = SafetensorsDir::open(kDense);
  const std::string L = "model.layers.0.linear_attn.";
  const uint64_t d = 256, dv = 64;
  // in_proj_qkv: q and k rows (256) in place, then the v rows by head.
  const std::vector<float> qkv = hf_values(*st, L + "in_proj_qkv.weight"), got_qkv = values(m->get("blk.0.attn_qkv.weight"));
  EXPECT_EQ(rows_of(got_qkv, d, 0, 256), rows_of(qkv, d, 0, 256));
  for (uint64_t p = 0; p < 4; ++p)
    EXPECT_EQ(rows_of(got_qkv, d, 256 + p * dv, dv), rows_of(qkv, d, 256 + kHead[p] * dv, dv)) << "v head " << p;
  const std::vector<float> z = hf_values(*st, L + "in_proj_z.weight"), got_z = values(m->get("blk.0.attn_gate.weight"));
  const std::vector<float> b = hf_values(*st, L + "in_proj_b.weight"), got_b = values(m->get("blk.0.ssm_beta.weight"));
  const std::vector<float> a = hf_values(*st, L + "in_proj_a.weight"), got_a = values(m->get("blk.0.ssm_alpha.weight"));
  const std::vector<float> A_log = hf_values(*st, L + "A_log"), got_A = values(m->get("blk.0.ssm_a"));
  const std::vector<float> dt = hf_values(*st, L + "dt_bias"), got_dt = values(m->get("blk.0.ssm_dt.bias"));
  for (uint64_t p = 0; p < 4; ++p) {
    SCOPED_TRACE(p);
    EXPECT_EQ(rows_of(got_z, d, p * dv, dv), rows_of(z, d, kHead[p] * dv, dv));
    EXPECT_EQ(rows_of(got_b, d, p, 1), rows_of(b, d, kHead[p], 1));
    EXPECT_EQ(rows_of(got_a, d, p, 1), rows_of(a, d, kHead[p], 1));
    EXPECT_FLOAT_EQ(got_A[p], -std::exp(A_log[kHead[p]]));
    EXPECT_EQ(got_dt[p], dt[kHead[p]]);
  }
  // The conv [C][1][K] squeezed to [C][K]: q, k channels in place, the v channels by head.
  const std::vector<float> conv = hf_values(*st, L + "conv1d.weight"), got_conv = values(m->get("blk.0.ssm_conv1d.weight"));
  EXPECT_EQ(rows_of(got_conv, 4, 0, 256), rows_of(conv, 4, 0, 256));
  for (uint64_t p = 0; p < 4; ++p) EXPECT_EQ(rows_of(got_conv, 4, 256 + p * dv, dv), rows_of(conv, 4, 256 + kHead[p] * dv, dv));
  // out_proj [d][nv dv]: every row's columns by head.
  const std::vector<float> out = hf_values(*st, L + "out_proj.weight"), got_out = values(m->get("blk.0.ssm_out.weight"));
  for (uint64_t r = 0; r < d; r += 37)
    for (uint64_t p = 0; p < 4; ++p)
      for (uint64_t j = 0; j < dv; ++j) ASSERT_EQ(got_out[r * 256 + p * dv + j], out[r * 256 + kHead[p] * dv + j]) << r;
  // The gated RMSNorm's weight is plain; every other RMSNorm's is HF's w, stored as 1 + w.
  EXPECT_EQ(values(m->get("blk.0.ssm_norm.weight")), hf_values(*st, L + "norm.weight"));
  const std::pair<const char*, const char*> norms[] = {
      {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
      {"blk.0.post_attention_norm.weight", "model.layers.0.post_attention_layernorm.weight"},
      {"blk.1.attn_q_norm.weight", "model.layers.1.self_attn.q_norm.weight"},
      {"blk.1.attn_k_norm.weight", "model.layers.1.self_attn.k_norm.weight"},
      {"output_norm.weight", "model.norm.weight"}};
  auto g = GgufFile::open(dir.file("m.gguf"));
  for (auto [gguf_name, hf_name] : norms) {
    std::vector<float> w = hf_values(*st, hf_name);
    for (float& x : w) x += 1.f;
    EXPECT_EQ(values(*g->find(gguf_name)), w) << gguf_name;
  }
  // The gated attention's q_proj (each head's query, then its gate) moves as it is.
  EXPECT_EQ(values(m->get("blk.1.attn_q.weight")), hf_values(*st, "model.layers.1.self_attn.q_proj.weight"));
}

// llama-quantize's Q4_K_M (llama-quant.cpp, no imatrix) on the fixtures: attn_qkv is in the attn_v
// category, one such tensor a layer (attn_qkv or attn_v), so use_more_bits counts layers: of 2,
// layer 1 only; ffn_down (and the experts', the shared expert's) likewise; the DeltaNet's other
// matrices get the default Q4_K, its conv and the routers stay F32; 128-wide rows fall back
// (Q4_K -> Q5_0, Q6_K -> Q8_0).
TEST(Qwen35Convert, Q4_K_MTypesAreLlamaQuantizes) {
  const std::map<std::string, std::string> common = {
      {"token_embd.weight", "Q4_K"}, {"output.weight", "Q6_K"},
      {"blk.0.attn_qkv.weight", "Q4_K"}, {"blk.0.attn_gate.weight", "Q4_K"}, {"blk.0.ssm_conv1d.weight", "F32"},
      {"blk.0.ssm_beta.weight", "Q4_K"}, {"blk.0.ssm_alpha.weight", "Q4_K"}, {"blk.0.ssm_out.weight", "Q4_K"},
      {"blk.1.attn_q.weight", "Q4_K"}, {"blk.1.attn_k.weight", "Q4_K"}, {"blk.1.attn_v.weight", "Q6_K"},
      {"blk.1.attn_output.weight", "Q4_K"}};
  std::map<std::string, std::string> dense = common, moe = common;
  for (uint32_t l = 0; l < 2; ++l) {
    auto n = [&](const char* role) { return layer_tensor(l, role); };
    dense[n("ffn_gate")] = dense[n("ffn_up")] = "Q4_K";
    dense[n("ffn_down")] = l ? "Q6_K" : "Q4_K";
    moe[n("ffn_gate_inp")] = moe[n("ffn_gate_inp_shexp")] = "F32";
    moe[n("ffn_gate_exps")] = moe[n("ffn_up_exps")] = moe[n("ffn_gate_shexp")] = moe[n("ffn_up_shexp")] = "Q4_K";
    moe[n("ffn_down_exps")] = moe[n("ffn_down_shexp")] = l ? "Q8_0" : "Q5_0";
  }
  for (bool is_moe : {false, true}) {
    SCOPED_TRACE(is_moe ? "qwen35moe" : "qwen35");
    TempDir dir;
    convert_model(*open_model(is_moe ? kMoe : kDense), dir.file("m.gguf"), QuantMix::Q4_K_M, nullptr);
    auto g = GgufFile::open(dir.file("m.gguf"));
    EXPECT_EQ(g->get_uint("general.file_type"), 15u);
    std::map<std::string, std::string> got;
    for (const TensorView& t : g->tensors())
      if (t.ne.size() > 1) got[t.name] = type_name(t.type);
    EXPECT_EQ(got, is_moe ? moe : dense);
  }
}

// A GGUF source (value heads tiled already) converts again without moving them a second time.
TEST(Qwen35Convert, GgufInputKeepsItsTiledHeads) {
  TempDir dir;
  convert_model(*open_model(kMoe), dir.file("a.gguf"), GgmlType::F32, nullptr);
  auto a = open_model(dir.file("a.gguf"));
  convert_model(*a, dir.file("b.gguf"), GgmlType::F32, nullptr);
  auto b = GgufFile::open(dir.file("b.gguf"));
  for (const TensorView& t : a->gguf->tensors()) {
    const TensorView* u = b->find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->ne, t.ne) << t.name;
    EXPECT_EQ(values(*u), values(t)) << t.name;
  }
  EXPECT_EQ(b->tensors().size(), a->gguf->tensors().size());
}

// Layers no interval describes are listed one by one, as llama.cpp's attention.recurrent_layers.
TEST(Qwen35Convert, IrregularLayersAreListed) {
  TempDir dir;
  ModelConfig c = synth_shape("tiny-qwen35");
  EXPECT_EQ(c.layer(3).mixer, Mixer::GatedAttention);  // DeltaNet, DeltaNet, DeltaNet, attention: interval 4
  c.layer_kinds[1].mixer = Mixer::GatedAttention;       // DeltaNet, attention, DeltaNet, DeltaNet: no interval
  c.layer_kinds[3].mixer = Mixer::GatedDeltaNet;
  synth_model(c, QuantMix::Q8_0, nullptr, dir.file("m.gguf"));
  auto m = open_model(dir.file("m.gguf"));
  EXPECT_EQ(m->gguf->find_value("qwen35.full_attention_interval"), nullptr);
  EXPECT_EQ(m->gguf->get_int_array("qwen35.attention.recurrent_layers"), (std::vector<int64_t>{1, 0, 1, 1}));
  EXPECT_EQ(m->config.layer_kinds, c.layer_kinds);
  // No attention layer at all (synth --layers 3): an interval no layer reaches.
  c.num_hidden_layers = 3;
  c.layer_kinds.assign(3, LayerKind{Mixer::GatedDeltaNet, Ffn::Dense});
  synth_model(c, QuantMix::Q8_0, nullptr, dir.file("d.gguf"));
  auto all = open_model(dir.file("d.gguf"));
  EXPECT_EQ(all->gguf->get_uint("qwen35.full_attention_interval"), 4u);
  EXPECT_EQ(all->config.layer_kinds, c.layer_kinds);
}

TEST(Qwen35Convert, RefusesWhatLlamaCppCannotLoad) {
  TempDir dir;
  auto m = open_model(kMoe);
  m->config.shared_expert_intermediate_size = 0;
  expect_model_error([&] { convert_model(*m, dir.file("x.gguf"), GgmlType::F16, nullptr); }, {"shared expert"});
  auto d = open_model(kDense);
  d->config.linear_value_head_dim = 32;
  expect_model_error([&] { convert_model(*d, dir.file("y.gguf"), GgmlType::F16, nullptr); }, {"ssm.state_size"});
}

// The real models' plans: llama.cpp's tensor count, the value-head layout's shapes, and the
// use_more_bits layers' Q6_K (16 of 32 layers / 20 of 40: attn_qkv or attn_v, and ffn_down).
TEST(Qwen35Synth, RealShapesPlans) {
  struct Want {
    const char* shape;
    size_t tensors;
    uint32_t layers, q6_v;
    uint64_t min_bytes, max_bytes;
  };
  for (const Want& w : {Want{"qwen3.5-4b", 2 + 24 * 14 + 8 * 11, 32, 16, 2'400'000'000ull, 2'900'000'000ull},
                        Want{"qwen3.6-35b-a3b", 3 + 30 * 19 + 10 * 16, 40, 20, 19'000'000'000ull, 22'000'000'000ull}}) {
    SCOPED_TRACE(w.shape);
    const ModelConfig c = synth_shape(w.shape);
    const std::vector<SynthTensor> plan = synth_plan(c, QuantMix::Q4_K_M);
    EXPECT_EQ(plan.size(), w.tensors);
    std::map<std::string, const SynthTensor*> by;
    for (const SynthTensor& t : plan) by[t.name] = &t;
    const uint64_t d = c.hidden_size;
    EXPECT_EQ(by.at("blk.0.attn_qkv.weight")->ne, (std::vector<uint64_t>{d, 2 * 16 * 128 + 32 * 128}));
    EXPECT_EQ(by.at("blk.0.ssm_conv1d.weight")->ne, (std::vector<uint64_t>{4, 8192}));
    EXPECT_EQ(by.at("blk.0.ssm_conv1d.weight")->type, GgmlType::F32);
    EXPECT_EQ(by.at("blk.0.ssm_out.weight")->ne, (std::vector<uint64_t>{4096, d}));
    EXPECT_EQ(by.at("blk.3.attn_q.weight")->ne, (std::vector<uint64_t>{d, 2 * 16 * 256}));
    EXPECT_EQ(by.at("blk.3.attn_k.weight")->ne, (std::vector<uint64_t>{d, uint64_t(c.num_key_value_heads) * 256}));
    EXPECT_EQ(by.count("blk.2.attn_q.weight"), 0u);
    EXPECT_FLOAT_EQ(by.at("blk.0.ssm_a")->value, -1.f);
    uint32_t q6_v = 0, q6_down = 0;
    for (uint32_t l = 0; l < w.layers; ++l) {
      const bool attention = (l + 1) % 4 == 0;
      q6_v += by.at(layer_tensor(l, attention ? "attn_v" : "attn_qkv"))->type == GgmlType::Q6_K;
      q6_down += by.at(layer_tensor(l, c.num_experts ? "ffn_down_exps" : "ffn_down"))->type == GgmlType::Q6_K;
    }
    EXPECT_EQ(q6_v, w.q6_v);
    EXPECT_EQ(q6_down, w.q6_v);
    const uint64_t bytes = synth_data_bytes(plan);
    std::printf("  %s Q4_K_M: %zu tensors, %llu data bytes\n", w.shape, plan.size(), (unsigned long long)bytes);
    EXPECT_GT(bytes, w.min_bytes);
    EXPECT_LT(bytes, w.max_bytes);
  }
  const std::vector<SynthTensor> dense = synth_plan(synth_shape("qwen3.5-4b"), QuantMix::Q4_K_M);
  EXPECT_EQ(dense.front().type, GgmlType::Q6_K);  // tied: the embedding is the LM head
  const std::vector<SynthTensor> moe = synth_plan(synth_shape("qwen3.6-35b-a3b"), QuantMix::Q4_K_M);
  EXPECT_EQ(moe.front().type, GgmlType::Q4_K);
  EXPECT_EQ(moe.back().name, "output.weight");
}

// synth's tiny Qwen3.5 shapes in every mixture load back with their config and the rule's types.
TEST(Qwen35Synth, TinyShapesLoad) {
  TempDir dir;
  for (const char* shape : {"tiny-qwen35", "tiny-qwen35moe"}) {
    for (QuantMix mix : {QuantMix::Q4_K_M, QuantMix::Q8_0, QuantMix::Q4_0, QuantMix::F16}) {
      SCOPED_TRACE(std::string(shape) + " " + quant_mix_name(mix));
      ModelConfig c = synth_shape(shape);
      c.vocab_size = 1024;
      synth_model(c, mix, nullptr, dir.file("m.gguf"));
      auto m = open_model(dir.file("m.gguf"));
      ModelConfig want = c;
      want.name = m->config.name;
      EXPECT_TRUE(m->config == want) << m->config.arch_name;
      for (const TensorView& t : m->gguf->tensors()) {
        const bool f32 = t.name.find("ssm_conv1d") != std::string::npos || t.name.find("ffn_gate_inp") != std::string::npos;
        EXPECT_TRUE(!f32 || t.type == GgmlType::F32) << t.name;
      }
    }
  }
}
