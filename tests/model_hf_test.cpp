// Hugging Face directories (written by the test: config.json + safetensors) load with the right
// config in both config.json dialects, canonical names, split Phi-3 views, and clear errors.
#include <gtest/gtest.h>

#include <cmath>

#include <filesystem>
#include <fstream>

#include "model/convert.h"
#include "model/model_file.h"
#include "model/safetensors.h"
#include "model_test_util.h"

using namespace ztvm;
using namespace ztvm::test;

TEST(Hf, LlamaTransformers4WithLlama3Rope) {
  TempDir dir;
  HfSpec spec;
  spec.head_dim = 0;
  spec.extra = {{"rope_theta", 500000.0},
                {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                                  {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}},
                {"eos_token_id", {2, 3}}};
  const std::string path = dir.file("llama");
  auto hf = write_hf_model(path, spec);
  write_text(path + "/generation_config.json", R"({"bos_token_id": 1, "eos_token_id": [3, 4]})");

  auto m = open_model(path);
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.hidden_size, 64u);
  EXPECT_EQ(c.num_hidden_layers, 2u);
  EXPECT_EQ(c.num_attention_heads, 4u);
  EXPECT_EQ(c.num_key_value_heads, 2u);
  EXPECT_EQ(c.head_dim, 16u);
  EXPECT_EQ(c.rotary_dim, 16u);
  EXPECT_EQ(c.intermediate_size, 96u);
  EXPECT_EQ(c.vocab_size, 80u);
  EXPECT_EQ(c.rope_style, RopeStyle::Neox);  // HF weights are not permuted
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.f);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_EQ(c.max_position_embeddings, 256u);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(c.name, "llama");
  // llama3 factors: 1 for the highest frequencies, `factor` for the lowest, monotonic between.
  ASSERT_EQ(c.rope_freq_factors.size(), 8u);
  EXPECT_FLOAT_EQ(c.rope_freq_factors.front(), 1.f);
  EXPECT_FLOAT_EQ(c.rope_freq_factors.back(), 32.f);
  for (size_t i = 1; i < c.rope_freq_factors.size(); ++i) EXPECT_GE(c.rope_freq_factors[i], c.rope_freq_factors[i - 1]);

  const TensorView& embd = m->get("token_embd.weight");
  EXPECT_EQ(embd.ne, (std::vector<uint64_t>{64, 80}));  // HF [vocab, hidden] -> ggml {hidden, vocab}
  EXPECT_EQ(values(embd), hf["model.embed_tokens.weight"]);
  EXPECT_EQ(m->get("blk.1.attn_k.weight").ne, (std::vector<uint64_t>{64, 32}));
  EXPECT_EQ(values(m->get("blk.1.attn_k.weight")), hf["model.layers.1.self_attn.k_proj.weight"]);
  EXPECT_EQ(values(m->get("blk.0.ffn_down.weight")), hf["model.layers.0.mlp.down_proj.weight"]);
  EXPECT_EQ(values(m->get("output.weight")), hf["lm_head.weight"]);
  EXPECT_EQ(values(m->get("output_norm.weight")), hf["model.norm.weight"]);
  EXPECT_EQ(m->find("blk.0.attn_q.bias"), nullptr);
}

TEST(Hf, Qwen3Transformers5Bf16WithExplicitHeadDim) {
  TempDir dir;
  HfSpec spec;
  spec.model_type = "qwen3";
  spec.head_dim = 32;  // 4 heads x 32 = 128 != hidden 64
  spec.transformers5 = true;
  spec.dtype = "BF16";
  spec.tie = true;
  auto hf = write_hf_model(dir.file("q3"), spec);
  auto m = open_model(dir.file("q3"));
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.arch, Arch::Qwen3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attn_bias);
  EXPECT_EQ(c.head_dim, 32u);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(m->find("output.weight"), nullptr);
  const TensorView& q = m->get("blk.1.attn_q.weight");
  EXPECT_EQ(q.type, GgmlType::BF16);
  EXPECT_EQ(q.ne, (std::vector<uint64_t>{64, 128}));
  EXPECT_EQ(m->get("blk.1.attn_output.weight").ne, (std::vector<uint64_t>{128, 64}));
  EXPECT_EQ(values(q), hf["model.layers.1.self_attn.q_proj.weight"]);
  EXPECT_EQ(values(m->get("blk.0.attn_k_norm.weight")), hf["model.layers.0.self_attn.k_norm.weight"]);
}

// A sentence-transformers package (Qwen3-Embedding's layout) names its pooling in the Pooling module's
// config.json, found through modules.json; a model without one names none. Converting keeps it.
TEST(Hf, SentenceTransformersPoolingIsRead) {
  TempDir dir;
  HfSpec spec;
  spec.model_type = "qwen3";
  spec.tie = true;
  write_hf_model(dir.file("plain"), spec);
  EXPECT_EQ(open_model(dir.file("plain"))->config.pooling, Pooling::Unset);
  write_hf_model(dir.file("st"), spec);
  std::filesystem::create_directories(dir.file("st") + "/pool");
  std::ofstream(dir.file("st") + "/modules.json")
      << R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "pool", "type": "sentence_transformers.models.Pooling"},
             {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  std::ofstream(dir.file("st") + "/pool/config.json")
      << R"({"word_embedding_dimension": 64, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": false,
             "pooling_mode_lasttoken": true})";
  auto m = open_model(dir.file("st"));
  EXPECT_EQ(m->config.pooling, Pooling::Last);
  convert_model(*m, dir.file("st.gguf"), GgmlType::F32, nullptr);
  EXPECT_EQ(open_model(dir.file("st.gguf"))->config.pooling, Pooling::Last);
  std::ofstream(dir.file("st") + "/pool/config.json") << R"({"pooling_mode_mean_tokens": true})";
  EXPECT_EQ(open_model(dir.file("st"))->config.pooling, Pooling::Mean);
}

TEST(Hf, Qwen2ShardedWithBiasesAndImplicitTie) {
  TempDir dir;
  HfSpec spec;
  spec.model_type = "qwen2";
  spec.tie = true;
  spec.write_tie_key = false;  // no key and no lm_head: tied
  spec.shards = 3;
  spec.dtype = "F16";
  auto hf = write_hf_model(dir.file("q2"), spec);
  auto st = SafetensorsDir::open(dir.file("q2"));
  EXPECT_EQ(st->files().size(), 3u);
  auto m = open_model(dir.file("q2"));
  EXPECT_TRUE(m->config.tie_word_embeddings);
  EXPECT_TRUE(m->config.attn_bias);
  EXPECT_EQ(values(m->get("blk.1.attn_v.bias")), hf["model.layers.1.self_attn.v_proj.bias"]);
  EXPECT_EQ(values(m->get("blk.1.ffn_up.weight")), hf["model.layers.1.mlp.up_proj.weight"]);
  EXPECT_EQ(m->get("blk.1.ffn_up.weight").type, GgmlType::F16);
}

TEST(Hf, Phi3FusedTensorsAreSplitViews) {
  TempDir dir;
  HfSpec spec;
  spec.model_type = "phi3";
  spec.heads = 4;
  spec.kv_heads = 4;
  spec.extra = {{"partial_rotary_factor", 0.5},
                {"max_position_embeddings", 1024},
                {"original_max_position_embeddings", 256},
                {"rope_scaling", {{"type", "longrope"}, {"short_factor", {1.0, 1.5, 2.0, 2.5}},
                                  {"long_factor", {3.0, 3.5, 4.0, 4.5}}}}};
  auto hf = write_hf_model(dir.file("phi"), spec);
  auto m = open_model(dir.file("phi"));
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.arch, Arch::Phi3);
  EXPECT_EQ(c.rotary_dim, 8u);
  EXPECT_EQ(c.rope_freq_factors, (std::vector<float>{1.0f, 1.5f, 2.0f, 2.5f}));
  EXPECT_EQ(c.rope_freq_factors_long, (std::vector<float>{3.0f, 3.5f, 4.0f, 4.5f}));
  EXPECT_EQ(c.rope_original_context, 256u);
  EXPECT_FLOAT_EQ(c.rope_attn_factor, float(std::sqrt(1 + std::log(4.0) / std::log(256.0))));
  const std::vector<float>& qkv = hf["model.layers.1.self_attn.qkv_proj.weight"];
  const std::vector<float>& gate_up = hf["model.layers.1.mlp.gate_up_proj.weight"];
  EXPECT_EQ(values(m->get("blk.1.attn_q.weight")), rows_of(qkv, 64, 0, 64));
  EXPECT_EQ(values(m->get("blk.1.attn_k.weight")), rows_of(qkv, 64, 64, 64));
  EXPECT_EQ(values(m->get("blk.1.attn_v.weight")), rows_of(qkv, 64, 128, 64));
  EXPECT_EQ(values(m->get("blk.1.ffn_gate.weight")), rows_of(gate_up, 64, 0, 96));
  EXPECT_EQ(values(m->get("blk.1.ffn_up.weight")), rows_of(gate_up, 64, 96, 96));
  EXPECT_EQ(m->get("blk.1.ffn_gate_up.weight").ne, (std::vector<uint64_t>{64, 192}));
  EXPECT_EQ(m->get("blk.1.attn_qkv.weight").ne, (std::vector<uint64_t>{64, 192}));
}

TEST(Hf, Errors) {
  TempDir dir;
  auto make = [&](const std::string& name, HfSpec spec) {
    write_hf_model(dir.file(name), spec);
    return dir.file(name);
  };
  HfSpec mamba;
  mamba.extra = {{"model_type", "mamba"}};
  expect_model_error([&] { open_model(make("mamba", mamba)); },
                     {"config.json", "unknown architecture 'mamba'", "supported: llama, qwen2, qwen3, phi3"});

  HfSpec yarn;
  yarn.extra = {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}};
  expect_model_error([&] { open_model(make("yarn", yarn)); }, {"RoPE type 'yarn' is not supported"});

  HfSpec vocab;
  vocab.extra = {{"vocab_size", 81}};
  expect_model_error([&] { open_model(make("vocab", vocab)); }, {"token_embd.weight", "81 rows", "got 80"});

  HfSpec missing_lm;
  missing_lm.tie = true;
  missing_lm.write_tie_key = false;
  missing_lm.extra = {{"tie_word_embeddings", false}};
  expect_model_error([&] { open_model(make("nolm", missing_lm)); }, {"missing tensor output.weight"});

  // Wrong shape: q_proj with 48 rows where 64 are expected.
  const std::string shape = make("shape", HfSpec{});
  write_safetensors(shape + "/extra.safetensors", {});  // an empty shard is fine
  {
    std::vector<StTensor> ts;
    auto st = SafetensorsDir::open(shape);
    for (const TensorView& t : st->tensors()) {
      std::vector<uint64_t> hf_shape(t.ne.rbegin(), t.ne.rend());
      std::vector<float> v = values(t);
      if (t.name == "model.layers.0.self_attn.q_proj.weight") {
        hf_shape = {48, 64};
        v.resize(48 * 64);
      }
      ts.push_back({t.name, hf_shape, v});
    }
    st.reset();
    write_safetensors(shape + "/model.safetensors", ts);
  }
  expect_model_error([&] { open_model(shape); }, {"tensor blk.0.attn_q.weight: expected shape [64, 64], got [64, 48]"});

  // Unsupported dtype, data offsets past the end, a header that is not JSON, a truncated file.
  const std::string bad = make("dtype", HfSpec{});
  write_safetensors(bad + "/model.safetensors", {{"model.embed_tokens.weight", {80, 64}, std::vector<float>(80 * 64), "I64"}});
  expect_model_error([&] { open_model(bad); }, {"model.embed_tokens.weight", "dtype I64 is not supported"});

  const std::string trunc = make("trunc", HfSpec{});
  std::vector<uint8_t> bytes = read_bytes(trunc + "/model.safetensors");
  write_bytes(trunc + "/model.safetensors", std::vector<uint8_t>(bytes.begin(), bytes.end() - 100));
  expect_model_error([&] { open_model(trunc); }, {"model.safetensors", "outside the data section", "truncated"});
  write_bytes(trunc + "/model.safetensors", std::vector<uint8_t>(bytes.begin(), bytes.begin() + 5));
  expect_model_error([&] { open_model(trunc); }, {"truncated"});
  std::vector<uint8_t> garbage = bytes;
  garbage[8] = '[';
  garbage[9] = '}';
  write_bytes(trunc + "/model.safetensors", garbage);
  expect_model_error([&] { open_model(trunc); }, {"invalid JSON header"});
  uint64_t huge = 1ull << 40;
  std::memcpy(bytes.data(), &huge, 8);
  write_bytes(trunc + "/model.safetensors", bytes);
  expect_model_error([&] { open_model(trunc); }, {"header length", "exceeds"});

  const std::string unknown = make("unknown", HfSpec{});
  write_safetensors(unknown + "/more.safetensors", {{"model.layers.0.mlp.experts.0.weight", {2, 2}, {1, 2, 3, 4}}});
  expect_model_error([&] { open_model(unknown); }, {"unexpected tensor 'model.layers.0.mlp.experts.0.weight'"});

  fs::create_directories(dir.file("empty"));
  expect_model_error([&] { open_model(dir.file("empty")); }, {"no config.json"});
  write_text(dir.file("empty") + "/config.json", "{}");
  expect_model_error([&] { open_model(dir.file("empty")); }, {"no *.safetensors files"});
  write_text(unknown + "/config.json", "{\"model_type\": ");
  expect_model_error([&] { open_model(unknown); }, {"config.json", "invalid JSON"});
  write_text(unknown + "/config.json", "{\"model_type\": \"llama\", \"hidden_size\": \"64\"}");
  expect_model_error([&] { open_model(unknown); }, {"config.json", "'hidden_size'", "expected a non-negative integer"});
}
