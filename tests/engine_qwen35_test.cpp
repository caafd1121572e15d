// Qwen3.5 (issue 53): gated DeltaNet and gated attention layers, dense and with a mixture of experts
// plus a gated shared expert. Tiny random models made by tools/make_fixtures.py with transformers
// 5.17 open from their HF directories with each layer's kind, and the CPU reference forward pass
// (src/reference/model.cpp) matches transformers' logits and greedy tokens, in one pass or token by
// token with its state carried. The same weights written as llama.cpp's converter writes qwen35 /
// qwen35moe GGUFs (its names, value heads in tiled order, 1 + w norms, A = -exp(A_log)) open to the
// same config and logits. Both run in the GPU forward pass too (engine_qwen35_gpu_test).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_test_util.h"
#include "engine/forward.h"
#include "engine/npy.h"
#include "gpu/device.h"
#include "model/gguf_writer.h"
#include "model/model_error.h"
#include "model/model_file.h"
#include "model_test_util.h"
#include "reference/model.h"
#include "reference/ops.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

const std::string kFixtures = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/";
const std::string kDense = kFixtures + "qwen3.5-f16", kMoe = kFixtures + "qwen3.5-moe-f16";

std::vector<int32_t> read_ids(const std::string& path) {  // ids.txt, greedy24.txt: space separated
  std::ifstream f(path);
  return {std::istream_iterator<int32_t>(f), std::istream_iterator<int32_t>()};
}

TEST(Qwen35, DirectoryOpensWithItsLayerKinds) {
  auto m = open_model(kDense);
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.arch, Arch::Qwen35);
  EXPECT_EQ(c.arch_name, "qwen35");
  ASSERT_EQ(c.num_hidden_layers, 2u);
  EXPECT_EQ(c.layer(0), (LayerKind{Mixer::GatedDeltaNet, Ffn::Dense}));
  EXPECT_EQ(c.layer(1), (LayerKind{Mixer::GatedAttention, Ffn::Dense}));
  EXPECT_EQ(c.linear_num_key_heads, 2u);
  EXPECT_EQ(c.linear_key_head_dim, 64u);
  EXPECT_EQ(c.linear_num_value_heads, 4u);
  EXPECT_EQ(c.linear_value_head_dim, 64u);
  EXPECT_EQ(c.linear_conv_kernel_dim, 4u);
  EXPECT_FALSE(c.linear_v_heads_tiled);
  EXPECT_EQ(c.head_dim, 64u);
  EXPECT_EQ(c.rotary_dim, 16u);  // partial_rotary_factor 0.25
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.num_experts, 0u);
  // llama.cpp's names and shapes; the conv's unit axis dropped; A = -exp(A_log) and 1 + w norms as F32.
  EXPECT_EQ(m->get("blk.0.attn_qkv.weight").ne, (std::vector<uint64_t>{256, 512}));
  EXPECT_EQ(m->get("blk.0.attn_gate.weight").ne, (std::vector<uint64_t>{256, 256}));
  EXPECT_EQ(m->get("blk.0.ssm_conv1d.weight").ne, (std::vector<uint64_t>{4, 512}));
  EXPECT_EQ(m->get("blk.0.ssm_out.weight").ne, (std::vector<uint64_t>{256, 256}));
  EXPECT_EQ(m->get("blk.1.attn_q.weight").ne, (std::vector<uint64_t>{256, 512}));  // queries and gates
  EXPECT_EQ(m->find("blk.1.attn_qkv.weight"), nullptr);
  const std::vector<float> a_log = values(*m->safetensors->find("model.layers.0.linear_attn.A_log"));
  const TensorView& a = m->get("blk.0.ssm_a");
  ASSERT_EQ(a.type, GgmlType::F32);
  for (size_t i = 0; i < a_log.size(); i++) EXPECT_FLOAT_EQ(values(a)[i], -std::exp(a_log[i])) << i;
  const std::vector<float> norm = values(*m->safetensors->find("model.layers.1.self_attn.q_norm.weight"));
  for (size_t i = 0; i < norm.size(); i++) EXPECT_EQ(values(m->get("blk.1.attn_q_norm.weight"))[i], 1.f + norm[i]) << i;
  // The DeltaNet's output norm multiplies by its weight as stored.
  EXPECT_EQ(m->get("blk.0.ssm_norm.weight").data, m->safetensors->find("model.layers.0.linear_attn.norm.weight")->data);
}

TEST(Qwen35, MoeDirectoryOpensWithItsExperts) {
  auto m = open_model(kMoe);
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.arch, Arch::Qwen35Moe);
  EXPECT_EQ(c.arch_name, "qwen35moe");
  EXPECT_EQ(c.layer(0), (LayerKind{Mixer::GatedDeltaNet, Ffn::Moe}));
  EXPECT_EQ(c.layer(1), (LayerKind{Mixer::GatedAttention, Ffn::Moe}));
  EXPECT_EQ(c.num_experts, 4u);
  EXPECT_EQ(c.num_experts_per_tok, 2u);
  EXPECT_EQ(c.moe_intermediate_size, 128u);
  EXPECT_EQ(c.shared_expert_intermediate_size, 128u);
  EXPECT_TRUE(c.norm_topk_prob);  // transformers' router always renormalises
  EXPECT_EQ(m->get(expert_tensor(1, "ffn_up", 3)).ne, (std::vector<uint64_t>{256, 128}));
  EXPECT_EQ(m->get(expert_tensor(0, "ffn_down", 2)).ne, (std::vector<uint64_t>{128, 256}));
  EXPECT_EQ(m->get("blk.0.ffn_gate_inp_shexp.weight").ne, (std::vector<uint64_t>{256}));
  EXPECT_EQ(m->get("blk.1.ffn_down_shexp.weight").ne, (std::vector<uint64_t>{128, 256}));
}

// The multimodal checkpoints (model_type qwen3_5, Qwen3_5ForConditionalGeneration) nest the text
// model's config under text_config and its tensors under model.language_model, beside a vision tower
// and an MTP head: the fixture so repacked opens to the same config and logits.
TEST(Qwen35, MultimodalWrapperOpensAsItsTextModel) {
  TempDir tmp;
  std::ifstream f(kDense + "/config.json");
  const nlohmann::json text = nlohmann::json::parse(f);
  const nlohmann::json wrapper = {{"model_type", "qwen3_5"}, {"architectures", {"Qwen3_5ForConditionalGeneration"}},
                                  {"text_config", text}, {"vision_config", {{"hidden_size", 8}}},
                                  {"tie_word_embeddings", false}};
  write_text(tmp.file("config.json"), wrapper.dump(2));
  auto st = SafetensorsDir::open(kDense);
  std::vector<StTensor> tensors = {{"model.visual.patch_embed.proj.weight", {8, 8}, std::vector<float>(64, 1.f), "F16"},
                                   {"mtp.fc.weight", {8, 8}, std::vector<float>(64, 1.f), "F16"}};
  for (const TensorView& t : st->tensors()) {
    std::string name = t.name;
    if (name.rfind("model.", 0) == 0) name = "model.language_model." + name.substr(6);
    tensors.push_back({name, std::vector<uint64_t>(t.ne.rbegin(), t.ne.rend()), values(t), "F16"});
  }
  write_safetensors(tmp.file("model.safetensors"), tensors);
  auto wrapped = open_model(tmp.path.string()), plain = open_model(kDense);
  ModelConfig want = plain->config;
  want.name = wrapped->config.name;
  EXPECT_TRUE(wrapped->config == want);
  const std::vector<int32_t> ids = read_ids(kDense + "/ids.txt");
  EXPECT_EQ(ref::forward_logits(*wrapped, ids), ref::forward_logits(*plain, ids));
}

// Logits in one pass against transformers', then 24 greedy tokens, each one step on the state.
void expect_matches_transformers(const std::string& dir, const char* label) {
  auto m = open_model(dir);
  const std::vector<int32_t> ids = read_ids(dir + "/ids.txt"), want_greedy = read_ids(dir + "/greedy24.txt");
  const NpyArray want = read_npy(dir + "/logits.npy");
  ref::State state;
  const std::vector<float> logits = ref::forward_logits(*m, ids, state);
  ASSERT_EQ(logits.size(), want.data.size());
  const double e = nmse(logits, want.data);
  std::printf("  %s (HF F16, CPU reference): logits NMSE vs transformers %.3g\n", label, e);
  EXPECT_LT(e, 1e-5);
  const uint32_t vocab = m->config.vocab_size;
  std::vector<int32_t> greedy = {(int32_t)ref::argmax(logits.data() + logits.size() - vocab, vocab)};
  while (greedy.size() < want_greedy.size()) {
    const std::vector<float> next = ref::forward_logits(*m, {greedy.back()}, state);
    greedy.push_back((int32_t)ref::argmax(next.data(), vocab));
  }
  EXPECT_EQ(greedy, want_greedy);
}

TEST(Qwen35, ReferenceMatchesTransformers) { expect_matches_transformers(kDense, "qwen3.5"); }
TEST(Qwen35, MoeReferenceMatchesTransformers) { expect_matches_transformers(kMoe, "qwen3.5-moe"); }

// The recurrence carried between passes (the conv's last inputs, the DeltaNet's state, the keys and
// values) gives what one pass over the whole sequence gives: token by token, and in two chunks.
TEST(Qwen35, StateCarriedTokenByTokenEqualsOnePass) {
  for (const std::string& dir : {kDense, kMoe}) {
    SCOPED_TRACE(dir);
    auto m = open_model(dir);
    const std::vector<int32_t> ids = read_ids(dir + "/ids.txt");
    const std::vector<float> whole = ref::forward_logits(*m, ids);
    ref::State one_by_one, halves;
    std::vector<float> stepped, chunked;
    for (int32_t id : ids) {
      const std::vector<float> l = ref::forward_logits(*m, {id}, one_by_one);
      stepped.insert(stepped.end(), l.begin(), l.end());
    }
    for (auto [from, to] : {std::pair<size_t, size_t>{0, 5}, {5, ids.size()}}) {
      const std::vector<float> l = ref::forward_logits(*m, std::vector<int32_t>(ids.begin() + from, ids.begin() + to), halves);
      chunked.insert(chunked.end(), l.begin(), l.end());
    }
    EXPECT_EQ(one_by_one.pos, ids.size());
    ASSERT_EQ(stepped.size(), whole.size());
    EXPECT_LT(nmse(stepped, whole), 1e-12);
    EXPECT_LT(nmse(chunked, whole), 1e-12);
  }
}

// The delta rule on one head from a zero state, g = 0, beta = 1: S = k v^T, so out = v (k . q) for
// the normalised k and q / sqrt(dk); and the conv's state makes two calls one.
TEST(Qwen35, DeltaRuleAndConvTwins) {
  const ref::DeltaShape s{1, 4, 1, 3, false};
  const std::vector<float> qkv = {1, 2, 3, 4, /* k */ 0, 0, 3, 4, /* v */ 1, -2, 0.5f};
  std::vector<float> state(12, 0.f), out(3);
  const float g = 0.f, beta = 1.f;
  ref::gated_delta_rule_step(qkv.data(), &g, &beta, state.data(), out.data(), s);
  const double kq = (3 * 3 + 4 * 4) / std::sqrt(30.0) / 5.0 / 2.0;  // normalised k . q / sqrt(4)
  for (int j = 0; j < 3; j++) EXPECT_NEAR(out[j], qkv[8 + j] * kq, 1e-6) << j;
  const std::vector<float> x = random_values(5 * 3, 7, 1.f), w = random_values(3 * 4, 8, 1.f);
  std::vector<float> st_whole, st_parts;
  const std::vector<float> whole = ref::causal_conv1d(x, w, 3, 4, &st_whole);
  std::vector<float> parts = ref::causal_conv1d(std::vector<float>(x.begin(), x.begin() + 6), w, 3, 4, &st_parts);
  const std::vector<float> rest = ref::causal_conv1d(std::vector<float>(x.begin() + 6, x.end()), w, 3, 4, &st_parts);
  parts.insert(parts.end(), rest.begin(), rest.end());
  EXPECT_EQ(parts, whole);
  EXPECT_EQ(st_parts, st_whole);
  // The first output sees only x[0]: silu(w[c][K - 1] x[0][c]).
  for (int c = 0; c < 3; c++) {
    const double y = (double)w[c * 4 + 3] * x[c];
    EXPECT_NEAR(whole[c], y / (1 + std::exp(-y)), 1e-6) << c;
  }
}

// llama.cpp's converter (conversion/qwen.py, Qwen3_5TextModel / Qwen3_5MoeTextModel) on an HF
// directory, reduced to these fixtures: its keys and names, 1 + w for every RMSNorm but the
// DeltaNet's, A = -exp(A_log), the conv squeezed, the routers, the conv and 1-D tensors F32, the
// experts stacked (gate and up apart), and the value heads (rows of in_proj_qkv's v part,
// in_proj_z, in_proj_a/b, the conv's v channels, A_log, dt_bias; columns of out_proj) from grouped
// to tiled order.
class LlamaCppConverter {
 public:
  explicit LlamaCppConverter(const std::string& dir) : dir_(dir) {
    std::ifstream f(dir + "/config.json");
    cfg_ = nlohmann::json::parse(f);
    nk_ = cfg_["linear_num_key_heads"], nv_ = cfg_["linear_num_value_heads"];
    dk_ = cfg_["linear_key_head_dim"], dv_ = cfg_["linear_value_head_dim"];
  }

  void write(const std::string& out) {
    const bool moe = cfg_.contains("num_experts");
    const std::string arch = moe ? "qwen35moe" : "qwen35", a = arch + ".";
    auto u32 = [&](const char* key) { return cfg_[key].get<uint32_t>(); };
    GgufWriter w;
    w.set_string("general.architecture", arch);
    w.set_string("general.name", "tiny-" + arch);
    w.set_u32(a + "block_count", u32("num_hidden_layers"));
    w.set_u32(a + "context_length", u32("max_position_embeddings"));
    w.set_u32(a + "embedding_length", u32("hidden_size"));
    w.set_u32(a + "feed_forward_length", u32("intermediate_size"));
    w.set_u32(a + "attention.head_count", u32("num_attention_heads"));
    w.set_u32(a + "attention.head_count_kv", u32("num_key_value_heads"));
    w.set_u32(a + "attention.key_length", u32("head_dim"));
    w.set_u32(a + "attention.value_length", u32("head_dim"));
    w.set_f32(a + "rope.freq_base", cfg_["rope_parameters"]["rope_theta"].get<float>());
    w.set_f32(a + "attention.layer_norm_rms_epsilon", cfg_["rms_norm_eps"].get<float>());
    w.set_u32(a + "rope.dimension_count", uint32_t(u32("head_dim") * cfg_["partial_rotary_factor"].get<double>()));
    w.set_i32_array(a + "rope.dimension_sections", {11, 11, 10, 0});
    w.set_u32(a + "ssm.conv_kernel", u32("linear_conv_kernel_dim"));
    w.set_u32(a + "ssm.state_size", dk_);
    w.set_u32(a + "ssm.group_count", nk_);
    w.set_u32(a + "ssm.time_step_rank", nv_);
    w.set_u32(a + "ssm.inner_size", nv_ * dv_);
    w.set_u32(a + "full_attention_interval", 2);  // the fixtures' layer_types: linear, full
    if (moe) {
      w.set_u32(a + "expert_count", u32("num_experts"));
      w.set_u32(a + "expert_used_count", u32("num_experts_per_tok"));
      w.set_u32(a + "expert_feed_forward_length", u32("moe_intermediate_size"));
      w.set_u32(a + "expert_shared_feed_forward_length", u32("shared_expert_intermediate_size"));
    }
    w.set_u32("tokenizer.ggml.bos_token_id", u32("bos_token_id"));
    w.set_u32("tokenizer.ggml.eos_token_id", u32("eos_token_id"));
    auto st = SafetensorsDir::open(dir_);
    for (const TensorView& t : st->tensors()) convert(t, w);
    for (auto& [name, stack] : experts_) {  // expert by expert, as save_pretrained writes them: stacked
      std::vector<float> all;
      for (const std::vector<float>& e : stack.values) all.insert(all.end(), e.begin(), e.end());
      w.add_tensor_f32(name, stack.type, {stack.ne[0], stack.ne[1], stack.values.size()}, all);
    }
    w.write(out);
  }

 private:
  // Heads of head_rows rows each (of `cols` values), grouped [nk][nv / nk] -> tiled [nv / nk][nk].
  std::vector<float> tiled(const std::vector<float>& m, uint64_t cols, uint64_t head_rows) const {
    const uint32_t r = nv_ / nk_;
    const uint64_t block = head_rows * cols;
    std::vector<float> out(m.size());
    for (uint32_t kh = 0; kh < nk_; kh++)
      for (uint32_t j = 0; j < r; j++)
        std::copy(m.begin() + long((kh * r + j) * block), m.begin() + long((kh * r + j + 1) * block),
                  out.begin() + long((j * nk_ + kh) * block));
    return out;
  }

  void convert(const TensorView& t, GgufWriter& w) {
    std::vector<float> v = values(t);
    std::vector<uint64_t> ne = t.ne;
    auto put = [&](const std::string& name, GgmlType type) { w.add_tensor_f32(name, type, ne, v); };
    auto plus_one = [&](const std::string& name) {
      for (float& x : v) x += 1.f;
      put(name, GgmlType::F32);
    };
    const std::string& n = t.name;
    if (n == "model.embed_tokens.weight") return put("token_embd.weight", t.type);
    if (n == "model.norm.weight") return plus_one("output_norm.weight");
    if (n == "lm_head.weight") return put("output.weight", t.type);
    const size_t dot = n.find('.', 13);
    const std::string L = "blk." + n.substr(13, dot - 13) + ".", rest = n.substr(dot + 1);
    static const std::map<std::string, std::string> kPlain = {
        {"self_attn.q_proj.weight", "attn_q.weight"},     {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},     {"self_attn.o_proj.weight", "attn_output.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},      {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},      {"mlp.experts.down_proj", "ffn_down_exps.weight"},
        {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
        {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
        {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"}};
    static const std::map<std::string, std::string> kNorms = {
        {"input_layernorm.weight", "attn_norm.weight"}, {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"}, {"self_attn.k_norm.weight", "attn_k_norm.weight"}};
    const uint64_t kd = uint64_t(nk_) * dk_, d = t.cols();
    if (auto it = kPlain.find(rest); it != kPlain.end()) return put(L + it->second, t.type);
    if (auto it = kNorms.find(rest); it != kNorms.end()) return plus_one(L + it->second);
    if (rest == "mlp.gate.weight") return put(L + "ffn_gate_inp.weight", GgmlType::F32);
    if (rest == "mlp.shared_expert_gate.weight") return put(L + "ffn_gate_inp_shexp.weight", GgmlType::F32);  // [d, 1]
    if (rest.rfind("mlp.experts.", 0) == 0 && std::isdigit((unsigned char)rest[12])) {  // mlp.experts.E.up_proj.weight
      const size_t at = rest.find('.', 12);
      const size_t e = std::stoul(rest.substr(12, at - 12));
      Stack& stack = experts_[L + "ffn_" + rest.substr(at + 1, rest.find('_', at) - at - 1) + "_exps.weight"];
      stack.type = t.type, stack.ne = ne;
      if (stack.values.size() <= e) stack.values.resize(e + 1);
      stack.values[e] = v;
      return;
    }
    if (rest == "mlp.experts.gate_up_proj") {  // [E][2 ff][d]: each expert's gate rows, then its up rows
      const uint64_t ff = ne[1] / 2, E = ne[2];
      std::vector<float> gate, up;
      for (uint64_t e = 0; e < E; e++) {
        gate.insert(gate.end(), v.begin() + long(e * 2 * ff * d), v.begin() + long((e * 2 + 1) * ff * d));
        up.insert(up.end(), v.begin() + long((e * 2 + 1) * ff * d), v.begin() + long((e + 1) * 2 * ff * d));
      }
      w.add_tensor_f32(L + "ffn_gate_exps.weight", t.type, {d, ff, E}, gate);
      w.add_tensor_f32(L + "ffn_up_exps.weight", t.type, {d, ff, E}, up);
      return;
    }
    if (rest == "linear_attn.in_proj_qkv.weight") {  // q and k rows stay; the v rows by head
      std::vector<float> vpart = tiled(std::vector<float>(v.begin() + long(2 * kd * d), v.end()), d, dv_);
      std::copy(vpart.begin(), vpart.end(), v.begin() + long(2 * kd * d));
      return put(L + "attn_qkv.weight", t.type);
    }
    if (rest == "linear_attn.in_proj_z.weight") return v = tiled(v, d, dv_), put(L + "attn_gate.weight", t.type);
    if (rest == "linear_attn.in_proj_b.weight") return v = tiled(v, d, 1), put(L + "ssm_beta.weight", t.type);
    if (rest == "linear_attn.in_proj_a.weight") return v = tiled(v, d, 1), put(L + "ssm_alpha.weight", t.type);
    if (rest == "linear_attn.dt_bias") return v = tiled(v, 1, 1), put(L + "ssm_dt.bias", GgmlType::F32);
    if (rest == "linear_attn.norm.weight") return put(L + "ssm_norm.weight", GgmlType::F32);
    if (rest == "linear_attn.A_log") {
      for (float& x : v) x = -std::exp(x);
      return v = tiled(v, 1, 1), put(L + "ssm_a", GgmlType::F32);
    }
    if (rest == "linear_attn.conv1d.weight") {  // [C][1][K] -> [C][K]; the v channels by head
      const uint64_t K = ne[0];
      ne = {K, ne[2]};
      std::vector<float> vpart = tiled(std::vector<float>(v.begin() + long(2 * kd * K), v.end()), K, dv_);
      std::copy(vpart.begin(), vpart.end(), v.begin() + long(2 * kd * K));
      return put(L + "ssm_conv1d.weight", GgmlType::F32);
    }
    if (rest == "linear_attn.out_proj.weight") {  // columns by head: each row's [nv][dv] values tiled
      for (uint64_t r = 0; r < t.rows(); r++) {
        const std::vector<float> row = tiled(std::vector<float>(v.begin() + long(r * d), v.begin() + long((r + 1) * d)), 1, dv_);
        std::copy(row.begin(), row.end(), v.begin() + long(r * d));
      }
      return put(L + "ssm_out.weight", t.type);
    }
    FAIL() << "the converter has no rule for " << n;
  }

  struct Stack {
    GgmlType type;
    std::vector<uint64_t> ne;
    std::vector<std::vector<float>> values;  // by expert
  };
  std::string dir_;
  nlohmann::json cfg_;
  uint32_t nk_, nv_, dk_, dv_;
  std::map<std::string, Stack> experts_;
};

TEST(Qwen35, LlamaCppGgufOpensToTheSameConfigAndLogits) {
  for (const std::string& dir : {kDense, kMoe}) {
    SCOPED_TRACE(dir);
    TempDir tmp;
    const std::string path = tmp.file("model.gguf");
    LlamaCppConverter(dir).write(path);
    auto hf = open_model(dir), gguf = open_model(path);
    ModelConfig want = hf->config;
    want.name = gguf->config.name;
    want.linear_v_heads_tiled = true;  // the one difference: the value heads' order
    EXPECT_TRUE(gguf->config.linear_v_heads_tiled);
    EXPECT_EQ(gguf->config.arch_name, want.arch_name);
    EXPECT_EQ(gguf->config.layer_kinds, want.layer_kinds);
    EXPECT_TRUE(gguf->config == want);
    EXPECT_EQ(gguf->get("blk.0.ffn_norm.weight").ne, (std::vector<uint64_t>{256}));  // was post_attention_norm
    const std::vector<int32_t> ids = read_ids(dir + "/ids.txt");
    const std::vector<float> from_gguf = ref::forward_logits(*gguf, ids), from_hf = ref::forward_logits(*hf, ids);
    const double e = nmse(from_gguf, from_hf), et = nmse(from_gguf, read_npy(dir + "/logits.npy").data);
    std::printf("  %s as llama.cpp's GGUF: logits NMSE vs the HF directory %.3g, vs transformers %.3g\n",
                gguf->config.arch_name.c_str(), e, et);
    EXPECT_LT(e, 1e-10);
    EXPECT_LT(et, 1e-5);
    gguf->config.linear_v_heads_tiled = false;  // the value heads read the wrong key heads
    EXPECT_GT(nmse(ref::forward_logits(*gguf, ids), from_hf), 1e-4);
  }
}

// `ztvm info` shows the layer kinds; `ztvm logits` runs both models on the GPU.
TEST(Qwen35, InfoShowsTheLayerKindsAndLogitsRun) {
  if (!std::getenv("ZTVM_BIN")) GTEST_SKIP() << "ZTVM_BIN is not set (CTest sets it)";
  const CliRun info = run_ztvm("info " + kMoe);
  EXPECT_EQ(info.status, 0) << info.err;
  EXPECT_NE(info.out.find("layer kinds         dg "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("2 key heads x 64, 4 value heads x 64 (grouped order), conv kernel 4"), std::string::npos);
  EXPECT_NE(info.out.find("shared expert       128 wide"), std::string::npos);
  TempDir tmp;
  const CliRun logits = run_ztvm("logits -m " + kMoe + " --ids 1,2,3 -o " + tmp.file("l.npy"));
  EXPECT_EQ(logits.status, 0) << logits.err;
  const CliRun dense = run_ztvm("logits -m " + kDense + " --ids 1,2,3 -o " + tmp.file("d.npy"));
  EXPECT_EQ(dense.status, 0) << dense.err;
}

}  // namespace
