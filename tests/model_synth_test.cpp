// synth_model: files that open_model reads back with the shape's config, llama-quantize's tensor
// types (checked against llama.cpp-made files: stories260K's Q4_0/Q8_0 and the byte sizes of the
// H200 benchmark files in BENCH_PROTOCOL.md), random blocks with sane values, and determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <thread>

#include "model/gguf_writer.h"
#include "model/model_file.h"
#include "model/synth.h"
#include "model_test_util.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

const std::string kPhi3Vocab = kVocab + "ggml-vocab-phi-3.gguf";

TensorRole role_of(const std::string& name) {
  if (name == "token_embd.weight") return TensorRole::TokenEmbd;
  if (name == "output.weight") return TensorRole::Output;
  const std::pair<const char*, TensorRole> roles[] = {
      {".ffn_gate_inp.", TensorRole::FfnGateInp}, {".ffn_gate_exps.", TensorRole::FfnGate},
      {".ffn_up_exps.", TensorRole::FfnUp},       {".ffn_down_exps.", TensorRole::FfnDown},
      {".attn_qkv.", TensorRole::AttnQkv},
      {".attn_q.", TensorRole::AttnQ},        {".attn_k.", TensorRole::AttnK},      {".attn_v.", TensorRole::AttnV},
      {".attn_output.", TensorRole::AttnOutput}, {".ffn_gate.", TensorRole::FfnGate}, {".ffn_up.", TensorRole::FfnUp},
      {".ffn_down.", TensorRole::FfnDown}};
  for (const auto& [key, role] : roles)
    if (name.find(key) != std::string::npos) return role;
  throw std::runtime_error("no role for " + name);
}

uint32_t layer_of(const std::string& name) { return name.rfind("blk.", 0) == 0 ? uint32_t(std::stoul(name.substr(4))) : 0; }

// A small config of the given architecture (dimensions multiples of 256 where K-quants need it).
ModelConfig small(Arch arch) {
  ModelConfig c = synth_shape("tiny");
  if (arch == Arch::Qwen3) c.arch = arch, c.arch_name = "qwen3", c.qk_norm = true, c.rope_style = RopeStyle::Neox;
  if (arch == Arch::Phi3) {
    c.arch = arch, c.arch_name = "phi3", c.rope_style = RopeStyle::Neox, c.tie_word_embeddings = false;
    c.num_key_value_heads = c.num_attention_heads;
  }
  return c;
}

}  // namespace

TEST(Synth, TinyShapesLoadWithTheirConfigAndTheVocabulary) {
  TempDir dir;
  auto vocab = GgufFile::open(kPhi3Vocab);
  const uint64_t n_tokens = vocab->find_value("tokenizer.ggml.tokens")->array_size();
  for (Arch arch : {Arch::Llama, Arch::Qwen3, Arch::Phi3}) {
    for (QuantMix mix : {QuantMix::Q4_0, QuantMix::Q4_K_M, QuantMix::Q8_0, QuantMix::F16, QuantMix::Q5_K_M,
                         QuantMix::Q3_K_M, QuantMix::IQ4_XS}) {
      const ModelConfig c = small(arch);
      SCOPED_TRACE(c.arch_name + " " + quant_mix_name(mix));
      const std::string path = dir.file("m.gguf");
      synth_model(c, mix, vocab.get(), path);
      auto m = open_model(path);
      const ModelConfig& got = m->config;
      EXPECT_EQ(got.arch, arch);
      EXPECT_EQ(got.vocab_size, n_tokens);  // vocab_size 0 in "tiny": the vocabulary's size
      EXPECT_EQ(got.hidden_size, c.hidden_size);
      EXPECT_EQ(got.intermediate_size, c.intermediate_size);
      EXPECT_EQ(got.num_hidden_layers, c.num_hidden_layers);
      EXPECT_EQ(got.num_attention_heads, c.num_attention_heads);
      EXPECT_EQ(got.num_key_value_heads, c.num_key_value_heads);
      EXPECT_EQ(got.head_dim, c.head_dim);
      EXPECT_EQ(got.tie_word_embeddings, c.tie_word_embeddings);
      EXPECT_EQ(got.qk_norm, c.qk_norm);
      EXPECT_EQ(got.rope_style, c.rope_style);
      EXPECT_EQ(m->gguf->get_uint("general.file_type"), quant_mix_file_type(mix));
      EXPECT_EQ(m->find("blk.0.attn_qkv.weight") != nullptr, arch == Arch::Phi3);  // fused, split on load
      // Every tokenizer key is the vocabulary's, unchanged.
      for (const auto& [key, value] : vocab->metadata()) {
        if (key.rfind("tokenizer.", 0) != 0) continue;
        EXPECT_EQ(m->gguf->find_value(key)->summary(), value.summary()) << key;
      }
      // The written types are the rule's, tensor by tensor.
      for (const TensorView& t : m->gguf->tensors()) {
        if (t.ne.size() == 1) {
          EXPECT_EQ(t.type, GgmlType::F32) << t.name;
          continue;
        }
        EXPECT_EQ(t.type, quant_mix_type(mix, role_of(t.name), layer_of(t.name), c.num_hidden_layers,
                                         c.tie_word_embeddings, t.cols(),
                                         c.num_attention_heads / c.num_key_value_heads)) << t.name;
      }
    }
  }
}

// llama-quantize made stories260K-Q4_0/Q8_0.gguf (d 64, tied): our rule must pick its types,
// including the LM head's Q6_K -> Q8_0 fallback on 64-element rows.
TEST(Synth, RuleMatchesLlamaQuantizeOnStories) {
  for (auto [file, mix] : {std::pair{"stories260K-Q4_0.gguf", QuantMix::Q4_0}, std::pair{"stories260K-Q8_0.gguf", QuantMix::Q8_0}}) {
    auto m = open_model(kStories + file);
    for (const TensorView& t : m->gguf->tensors()) {
      if (t.ne.size() == 1) continue;
      EXPECT_EQ(t.type, quant_mix_type(mix, role_of(t.name), layer_of(t.name), m->config.num_hidden_layers,
                                       m->config.tie_word_embeddings, t.cols()))
          << file << " " << t.name;
    }
  }
}

// llama-quantize (llama.cpp 80fb11a, no importance matrix) on an F16 synth of Llama-3.2-1B (16
// layers, GQA 4, tied head): the type of every tensor of its Q5_K_M, Q3_K_M, IQ4_XS and Q4_K_M files
// (tests/fixtures/quant_mix, read back by gguf-py) against our rule's plan for the same shape.
TEST(Synth, MixesMatchLlamaQuantizeOnLlama1B) {
  const ModelConfig c = synth_shape("llama-3.2-1b");
  for (QuantMix mix : {QuantMix::Q5_K_M, QuantMix::Q3_K_M, QuantMix::IQ4_XS, QuantMix::Q4_K_M}) {
    const std::string path = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/quant_mix/llama-3.2-1b-" + quant_mix_name(mix) + ".types";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::map<std::string, std::string> want;
    for (std::string name, type; in >> name >> type;) want[name] = type;
    std::map<std::string, std::string> got;
    for (const SynthTensor& t : synth_plan(c, mix)) got[t.name] = type_name(t.type);
    got.erase("rope_freqs.weight"), want.erase("rope_freqs.weight");  // Llama 3's frequency factors: F32 in both
    EXPECT_EQ(got, want) << quant_mix_name(mix);
    EXPECT_GT(want.size(), 140u);
  }
}

// BENCH_PROTOCOL.md's H200 files (llama.cpp-made, same vocabularies): Q4_K_M minus Q4_0 bytes is
// exactly the extra Q6_K in the use_more_bits layers; the Q4_0 file is our data plus metadata.
TEST(Synth, RealShapesMatchTheBenchmarkFileSizes) {
  struct Ref {
    const char* shape;
    uint64_t q4_0, q4_k_m;
  };
  for (const Ref& r : {Ref{"llama-3.2-1b", 770924800ull, 807690496ull}, Ref{"qwen3-4b", 2369546432ull, 2497280192ull}}) {
    SCOPED_TRACE(r.shape);
    const ModelConfig c = synth_shape(r.shape);
    const uint64_t q4_0 = synth_data_bytes(synth_plan(c, QuantMix::Q4_0));
    const uint64_t q4_k_m = synth_data_bytes(synth_plan(c, QuantMix::Q4_K_M));
    EXPECT_EQ(q4_k_m - q4_0, r.q4_k_m - r.q4_0);
    EXPECT_LT(q4_0, r.q4_0);
    EXPECT_GT(q4_0 + 12'000'000, r.q4_0);  // the tokenizer metadata is 6-8 MB
  }
  const std::vector<SynthTensor> phi = synth_plan(synth_shape("phi-3-mini"), QuantMix::Q4_K_M);
  EXPECT_EQ(phi.front().type, GgmlType::Q4_K);  // untied embedding: not the LM head
  EXPECT_EQ(phi.back().name, "output.weight");
  EXPECT_EQ(phi.back().type, GgmlType::Q6_K);
}

TEST(Synth, LlamaRopeFactorsAndNormsRoundTrip) {
  TempDir dir;
  ModelConfig c = synth_shape("llama-3.2-1b");
  c.hidden_size = 256, c.num_attention_heads = 4, c.num_key_value_heads = 2, c.intermediate_size = 512;
  c.num_hidden_layers = 1, c.vocab_size = 512;
  synth_model(c, QuantMix::Q4_K_M, nullptr, dir.file("l.gguf"));
  auto m = open_model(dir.file("l.gguf"));
  EXPECT_EQ(m->config.rope_freq_factors, c.rope_freq_factors);
  EXPECT_EQ(m->config.rope_freq_factors.size(), 32u);
  EXPECT_FLOAT_EQ(m->config.rope_theta, 500000.f);
  EXPECT_EQ(m->gguf->get_string("tokenizer.ggml.model"), "no_vocab");
  for (float v : values(m->get("blk.0.ffn_norm.weight"))) EXPECT_EQ(v, 1.f);
}

// Random blocks decode (with our reference dequantizers) to finite values near N(0, 0.02).
TEST(Synth, RandomBlocksHaveSaneValues) {
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    SCOPED_TRACE(type_name(t));
    const uint64_t cols = 1024, rows = 64;
    std::vector<uint8_t> bytes(row_bytes(t, cols) * rows);
    fill_random_rows(t, cols, 0, rows, 42, bytes.data());
    std::vector<float> row(cols);
    double sum = 0, sq = 0;
    for (uint64_t r = 0; r < rows; ++r) {
      dequantize_row(t, bytes.data() + r * row_bytes(t, cols), row.data(), cols);
      for (float v : row) {
        ASSERT_TRUE(std::isfinite(v));
        sum += v, sq += double(v) * v;
      }
    }
    const double n = double(cols * rows), mean = sum / n, stddev = std::sqrt(sq / n - mean * mean);
    EXPECT_LT(std::abs(mean), 0.003);  // Q4_0/Q6_K codes are centred half a step low: -0.11 sigma
    EXPECT_GT(stddev, 0.015);
    EXPECT_LT(stddev, 0.025);
  }
}

TEST(Synth, SameSeedSameBytesWhateverTheThreads) {
  TempDir dir;
  const ModelConfig c = small(Arch::Qwen3);
  SynthOptions one, many, other;
  one.threads = 1;
  many.threads = 7;
  other.seed = 2;
  synth_model(c, QuantMix::Q4_K_M, nullptr, dir.file("a.gguf"), one);
  synth_model(c, QuantMix::Q4_K_M, nullptr, dir.file("b.gguf"), many);
  synth_model(c, QuantMix::Q4_K_M, nullptr, dir.file("c.gguf"), other);
  EXPECT_EQ(read_bytes(dir.file("a.gguf")), read_bytes(dir.file("b.gguf")));
  EXPECT_NE(read_bytes(dir.file("a.gguf")), read_bytes(dir.file("c.gguf")));
  // Rows differ from each other (no repeated pattern a cache could exploit).
  auto m = open_model(dir.file("a.gguf"));
  const TensorView& t = m->get("blk.0.ffn_down.weight");
  const uint64_t rb = row_bytes(t.type, t.cols());
  EXPECT_NE(std::vector<uint8_t>(t.data, t.data + rb), std::vector<uint8_t>(t.data + rb, t.data + 2 * rb));
}

TEST(Synth, ShortVocabularyIsPaddedLongerIsRefused) {
  TempDir dir;
  auto vocab = GgufFile::open(kPhi3Vocab);
  const uint64_t n = vocab->find_value("tokenizer.ggml.tokens")->array_size();
  ModelConfig c = synth_shape("tiny");
  c.vocab_size = uint32_t(n + 3);
  synth_model(c, QuantMix::Q8_0, vocab.get(), dir.file("p.gguf"));
  auto m = open_model(dir.file("p.gguf"));
  EXPECT_EQ(m->config.vocab_size, n + 3);
  const std::vector<std::string> tokens = m->gguf->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), n + 3);
  EXPECT_EQ(tokens[n], "[PAD" + std::to_string(n) + "]");
  EXPECT_EQ(tokens[n - 1], vocab->get_string_array("tokenizer.ggml.tokens")[n - 1]);
  EXPECT_EQ(m->gguf->get_int_array("tokenizer.ggml.token_type").back(), 5);  // LLAMA_TOKEN_TYPE_UNUSED
  EXPECT_EQ(m->gguf->get_float_array("tokenizer.ggml.scores").size(), n + 3);

  c.vocab_size = uint32_t(n - 1);
  EXPECT_THROW(synth_model(c, QuantMix::Q8_0, vocab.get(), dir.file("q.gguf")), ModelError);
}

// synth's tiny qwen3moe in every mixture: the experts come back stacked as llama.cpp lays them out,
// with the rule's types (the router F32, the _exps tensors their dense role's), and the router is
// random (not ones, rows distinct) so routing has something to choose by.
TEST(Synth, TinyMoeLoadsWithItsExperts) {
  TempDir dir;
  const ModelConfig c = synth_shape("tiny-moe");
  for (QuantMix mix : {QuantMix::Q4_0, QuantMix::Q4_K_M, QuantMix::Q8_0, QuantMix::F16, QuantMix::Q5_K_M,
                       QuantMix::Q3_K_M, QuantMix::IQ4_XS}) {
    SCOPED_TRACE(quant_mix_name(mix));
    synth_model(c, mix, nullptr, dir.file("m.gguf"));
    auto m = open_model(dir.file("m.gguf"));
    const ModelConfig& got = m->config;
    EXPECT_EQ(got.arch, Arch::Qwen3Moe);
    EXPECT_EQ(got.num_experts, 4u);
    EXPECT_EQ(got.num_experts_per_tok, 2u);
    EXPECT_EQ(got.moe_intermediate_size, 256u);
    EXPECT_TRUE(got.qk_norm);
    for (uint32_t l = 0; l < got.num_hidden_layers; ++l) EXPECT_EQ(got.layer(l).ffn, Ffn::Moe) << l;
    EXPECT_EQ(m->get("blk.1.ffn_gate_exps.weight").ne, (std::vector<uint64_t>{256, 256, 4}));
    EXPECT_EQ(m->get("blk.1.ffn_down_exps.weight").ne, (std::vector<uint64_t>{256, 256, 4}));
    EXPECT_EQ(m->get(expert_tensor(1, "ffn_up", 3)).ne, (std::vector<uint64_t>{256, 256}));
    for (const TensorView& t : m->gguf->tensors()) {
      if (t.ne.size() == 1) continue;
      EXPECT_EQ(t.type, quant_mix_type(mix, role_of(t.name), layer_of(t.name), c.num_hidden_layers, false, t.cols(),
                                       c.num_attention_heads / c.num_key_value_heads, c.num_experts)) << t.name;
    }
    const TensorView& router = m->get("blk.0.ffn_gate_inp.weight");
    EXPECT_EQ(router.type, GgmlType::F32);
    const std::vector<float> r = values(router);
    EXPECT_NE(rows_of(r, 256, 0, 1), rows_of(r, 256, 1, 1));
    double sq = 0;
    for (float v : r) sq += double(v) * v;
    EXPECT_NEAR(std::sqrt(sq / double(r.size())), 0.02, 0.003);
  }
}

// Qwen3-30B-A3B's plan: llama.cpp's tensor list (3 + 12 a layer), the Q4_K_M rule on the stacked
// experts (ffn_down_exps Q6_K in the 24 use_more_bits layers of 48), and its size.
TEST(Synth, Qwen3_30B_A3BPlan) {
  const ModelConfig c = synth_shape("qwen3-30b-a3b");
  EXPECT_EQ(c.num_experts, 128u);
  EXPECT_EQ(c.num_experts_per_tok, 8u);
  EXPECT_EQ(c.moe_intermediate_size, 768u);
  const std::vector<SynthTensor> plan = synth_plan(c, QuantMix::Q4_K_M);
  EXPECT_EQ(plan.size(), 3u + 48u * 12u);
  std::map<std::string, const SynthTensor*> by_name;
  for (const SynthTensor& t : plan) by_name[t.name] = &t;
  EXPECT_EQ(by_name.at("blk.0.ffn_gate_exps.weight")->ne, (std::vector<uint64_t>{2048, 768, 128}));
  EXPECT_EQ(by_name.at("blk.0.ffn_down_exps.weight")->ne, (std::vector<uint64_t>{768, 2048, 128}));
  EXPECT_EQ(by_name.at("blk.0.ffn_gate_inp.weight")->ne, (std::vector<uint64_t>{2048, 128}));
  EXPECT_EQ(by_name.at("blk.0.ffn_gate_inp.weight")->type, GgmlType::F32);
  EXPECT_EQ(by_name.at("blk.0.attn_k.weight")->type, GgmlType::Q4_K);  // 128 experts: not Mixtral's Q8_0
  EXPECT_EQ(by_name.at("blk.20.ffn_up_exps.weight")->type, GgmlType::Q4_K);
  EXPECT_EQ(by_name.at("output.weight")->type, GgmlType::Q6_K);
  EXPECT_EQ(by_name.at("token_embd.weight")->type, GgmlType::Q4_K);
  int q6_down = 0;
  for (uint32_t l = 0; l < 48; ++l) q6_down += by_name.at(layer_tensor(l, "ffn_down_exps"))->type == GgmlType::Q6_K;
  EXPECT_EQ(q6_down, 24);
  const uint64_t bytes = synth_data_bytes(plan);
  std::printf("  qwen3-30b-a3b Q4_K_M: %llu data bytes\n", (unsigned long long)bytes);
  EXPECT_GT(bytes, 18'000'000'000ull);
  EXPECT_LT(bytes, 19'000'000'000ull);
}

// llama-quantize's rules that depend on the experts: the router is never quantized, and a model of
// exactly 8 experts (Mixtral) gets Q8_0 attn_v / attn_k and a Q5_K attn_output; 128 experts do not.
TEST(Synth, ExpertRulesOfTheMixes) {
  auto type = [](QuantMix mix, TensorRole role, uint32_t n_expert) {
    return quant_mix_type(mix, role, 10, 32, false, 4096, 4, n_expert);
  };
  for (QuantMix mix : {QuantMix::Q4_0, QuantMix::Q4_K_M, QuantMix::Q8_0, QuantMix::F16, QuantMix::IQ4_XS})
    EXPECT_EQ(type(mix, TensorRole::FfnGateInp, 128), GgmlType::F32) << quant_mix_name(mix);
  EXPECT_EQ(type(QuantMix::Q4_K_M, TensorRole::AttnV, 8), GgmlType::Q8_0);
  EXPECT_EQ(type(QuantMix::Q4_0, TensorRole::AttnK, 8), GgmlType::Q8_0);
  EXPECT_EQ(type(QuantMix::Q3_K_M, TensorRole::AttnOutput, 8), GgmlType::Q5_K);
  EXPECT_EQ(type(QuantMix::Q4_0, TensorRole::AttnOutput, 8), GgmlType::Q4_0);
  EXPECT_EQ(type(QuantMix::Q4_K_M, TensorRole::AttnV, 128), GgmlType::Q4_K);  // layer 10 of 32: not more bits
  EXPECT_EQ(type(QuantMix::Q4_K_M, TensorRole::AttnK, 128), GgmlType::Q4_K);
  EXPECT_EQ(type(QuantMix::Q3_K_M, TensorRole::AttnOutput, 128), GgmlType::Q4_K);
}

TEST(Synth, UnknownNamesAreErrors) {
  EXPECT_THROW(synth_shape("llama-7b"), ModelError);
  EXPECT_THROW(parse_quant_mix("IQ2_XXS"), ModelError);
  EXPECT_EQ(parse_quant_mix("q5_k_m"), QuantMix::Q5_K_M);
  EXPECT_EQ(parse_quant_mix("q4_k_m"), QuantMix::Q4_K_M);
}
