// convert_model: stories260K re-quantized matches llama-quantize byte for byte; an HF llama built
// from stories260K (with transformers' own Q/K permutation) converts back to llama.cpp's exact
// bytes; Phi-3 / Qwen round trips (Q4_K, Q5_K, Q6_K); the K-quant fallbacks; and the RoPE math
// behind the permutation.
#include <gtest/gtest.h>

#include <cmath>

#include "model/convert.h"
#include "model/gguf_writer.h"
#include "model/model_file.h"
#include "model_test_util.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

std::vector<uint8_t> bytes_of(const TensorView& t) { return std::vector<uint8_t>(t.data, t.data + t.nbytes); }

// transformers' convert_llama_weights_to_hf permute (Meta/GGUF layout -> HF):
// w.view(n_heads, rows / n_heads / 2, 2, cols).transpose(1, 2).reshape(rows, cols)
std::vector<float> hf_permute(const std::vector<float>& w, uint64_t n_heads, uint64_t rows, uint64_t cols) {
  const uint64_t half = rows / n_heads / 2;
  std::vector<float> out(w.size());
  for (uint64_t h = 0; h < n_heads; ++h)
    for (uint64_t i = 0; i < half; ++i)
      for (uint64_t s = 0; s < 2; ++s)
        for (uint64_t c = 0; c < cols; ++c)  // out[h][s][i] = in[h][i][s]
          out[((h * 2 + s) * half + i) * cols + c] = w[((h * half + i) * 2 + s) * cols + c];
  return out;
}

// Rotates one head vector x (length d) at position pos, in either RoPE convention.
std::vector<float> rope(const std::vector<float>& x, int pos, float theta, RopeStyle style) {
  const size_t d = x.size();
  std::vector<float> y(d);
  for (size_t i = 0; i < d / 2; ++i) {
    const double angle = pos * std::pow(theta, -2.0 * double(i) / double(d));
    const size_t a = style == RopeStyle::Normal ? 2 * i : i, b = style == RopeStyle::Normal ? 2 * i + 1 : i + d / 2;
    y[a] = float(x[a] * std::cos(angle) - x[b] * std::sin(angle));
    y[b] = float(x[a] * std::sin(angle) + x[b] * std::cos(angle));
  }
  return y;
}

}  // namespace

// llama-quantize's Q8_0 file is our Q8_0 conversion of the f32 file, tensor for tensor.
TEST(Convert, StoriesToQ8_0And_Q4_0MatchLlamaQuantize) {
  TempDir dir;
  auto in = open_model(kStories + "stories260K-f32.gguf");
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0}) {
    SCOPED_TRACE(type_name(type));
    const std::string out = dir.file(std::string(type_name(type)) + ".gguf");
    convert_model(*in, out, type, nullptr);
    auto ours = GgufFile::open(out);
    auto ref = GgufFile::open(kStories + (type == GgmlType::Q8_0 ? "stories260K-Q8_0.gguf" : "stories260K-Q4_0.gguf"));
    EXPECT_EQ(ours->tensors().size(), ref->tensors().size());
    for (const TensorView& t : ref->tensors()) {
      const TensorView* mine = ours->find(t.name);
      ASSERT_TRUE(mine) << t.name;
      EXPECT_EQ(mine->ne, t.ne) << t.name;
      // llama-quantize stores the Q4_0 file's output.weight as Q8_0 (it wanted Q6_K); we keep Q4_0.
      if (type == GgmlType::Q4_0 && t.name == "output.weight") continue;
      EXPECT_EQ(mine->type, t.type) << t.name;
      EXPECT_EQ(bytes_of(*mine), bytes_of(t)) << t.name;
    }
    for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"})
      EXPECT_EQ(ours->find_value(key)->summary(1000), ref->find_value(key)->summary(1000)) << key;
    for (const char* key : {"llama.context_length", "llama.embedding_length", "llama.feed_forward_length",
                            "llama.attention.head_count", "llama.attention.head_count_kv", "llama.block_count",
                            "llama.rope.dimension_count", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
      EXPECT_EQ(ours->get_uint(key), ref->get_uint(key)) << key;
    EXPECT_EQ(ours->get_uint("general.file_type"), ref->get_uint("general.file_type"));
  }
}

// stories260K as an HF checkpoint (Q/K permuted the way transformers' converter does), converted
// back: every tensor must be byte-identical to llama.cpp's f32 GGUF.
TEST(Convert, HfLlamaRoundTripUndoesTheTransformersPermutation) {
  TempDir dir;
  auto ref = open_model(kStories + "stories260K-f32.gguf");
  const ModelConfig& rc = ref->config;
  std::vector<StTensor> ts;
  auto hf = [&](const std::string& hf_name, const std::string& gguf_name, uint64_t permute_heads = 0) {
    const TensorView& t = ref->get(gguf_name);
    std::vector<float> v = values(t);
    if (permute_heads) v = hf_permute(v, permute_heads, t.rows(), t.cols());
    std::vector<uint64_t> shape(t.ne.rbegin(), t.ne.rend());
    ts.push_back({hf_name, shape, v});
  };
  hf("model.embed_tokens.weight", "token_embd.weight");
  hf("model.norm.weight", "output_norm.weight");
  hf("lm_head.weight", "output.weight");
  for (uint32_t l = 0; l < rc.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    hf(p + "input_layernorm.weight", layer_tensor(l, "attn_norm"));
    hf(p + "self_attn.q_proj.weight", layer_tensor(l, "attn_q"), rc.num_attention_heads);
    hf(p + "self_attn.k_proj.weight", layer_tensor(l, "attn_k"), rc.num_key_value_heads);
    hf(p + "self_attn.v_proj.weight", layer_tensor(l, "attn_v"));
    hf(p + "self_attn.o_proj.weight", layer_tensor(l, "attn_output"));
    hf(p + "post_attention_layernorm.weight", layer_tensor(l, "ffn_norm"));
    hf(p + "mlp.gate_proj.weight", layer_tensor(l, "ffn_gate"));
    hf(p + "mlp.up_proj.weight", layer_tensor(l, "ffn_up"));
    hf(p + "mlp.down_proj.weight", layer_tensor(l, "ffn_down"));
  }
  const std::string hf_dir = dir.file("stories-hf");
  fs::create_directories(hf_dir);
  write_safetensors(hf_dir + "/model.safetensors", ts);
  nlohmann::json cfg = {{"model_type", "llama"},         {"hidden_size", rc.hidden_size},
                        {"num_hidden_layers", rc.num_hidden_layers}, {"intermediate_size", rc.intermediate_size},
                        {"num_attention_heads", rc.num_attention_heads}, {"num_key_value_heads", rc.num_key_value_heads},
                        {"rms_norm_eps", 1e-5},          {"max_position_embeddings", 128},
                        {"vocab_size", 512},             {"tie_word_embeddings", false},
                        {"bos_token_id", 1},             {"eos_token_id", 2}};
  write_text(hf_dir + "/config.json", cfg.dump());

  auto in = open_model(hf_dir);
  EXPECT_EQ(in->config.rope_style, RopeStyle::Neox);
  auto vocab = GgufFile::open(kStories + "stories260K-Q8_0.gguf");
  const std::string out = dir.file("back.gguf");
  convert_model(*in, out, GgmlType::F32, vocab.get());
  auto back = open_model(out);
  EXPECT_EQ(back->config.rope_style, RopeStyle::Normal);
  EXPECT_EQ(back->gguf->get_string_array("tokenizer.ggml.tokens"), vocab->get_string_array("tokenizer.ggml.tokens"));
  for (const TensorView& t : ref->gguf->tensors()) {
    const TensorView* mine = back->find(t.name);
    ASSERT_TRUE(mine) << t.name;
    EXPECT_EQ(mine->ne, t.ne) << t.name;
    EXPECT_EQ(bytes_of(*mine), bytes_of(t)) << t.name;
  }
}

// The permutation is what makes adjacent-pair RoPE on GGUF rows equal HF's rotate-half RoPE.
TEST(Convert, PermutationTurnsNeoxRopeIntoNormalRope) {
  const uint64_t head_dim = 16, n_heads = 3;
  const std::vector<float> q_hf = random_values(head_dim * n_heads, 5, 1.f);
  std::vector<float> q_gguf(q_hf.size());
  for (uint64_t r = 0; r < q_hf.size(); ++r) q_gguf[r] = q_hf[llama_permuted_row(r, head_dim)];
  for (int pos : {0, 1, 7, 100}) {
    for (uint64_t h = 0; h < n_heads; ++h) {
      const std::vector<float> a = rope(rows_of(q_hf, 1, h * head_dim, head_dim), pos, 10000.f, RopeStyle::Neox);
      const std::vector<float> b = rope(rows_of(q_gguf, 1, h * head_dim, head_dim), pos, 10000.f, RopeStyle::Normal);
      for (uint64_t r = 0; r < head_dim; ++r) EXPECT_NEAR(b[r], a[llama_permuted_row(r, head_dim)], 1e-5);
    }
  }
}

TEST(Convert, Phi3IsWrittenFusedAndReadBackSplit) {
  TempDir dir;
  HfSpec spec;
  spec.model_type = "phi3";
  spec.kv_heads = 4;
  spec.extra = {{"max_position_embeddings", 1024},
                {"original_max_position_embeddings", 256},
                {"rope_scaling", {{"type", "longrope"}, {"short_factor", {1, 1, 1, 1, 1, 1, 1, 2}},
                                  {"long_factor", {2, 2, 2, 2, 2, 2, 2, 4}}}}};
  auto hf = write_hf_model(dir.file("phi"), spec);
  auto in = open_model(dir.file("phi"));
  convert_model(*in, dir.file("phi.gguf"), GgmlType::F16, nullptr);
  auto g = GgufFile::open(dir.file("phi.gguf"));
  EXPECT_EQ(g->get_string("general.architecture"), "phi3");
  EXPECT_EQ(g->get_string("tokenizer.ggml.model"), "no_vocab");
  EXPECT_EQ(g->find("blk.0.attn_qkv.weight")->ne, (std::vector<uint64_t>{64, 192}));
  EXPECT_EQ(g->find("blk.0.ffn_up.weight")->ne, (std::vector<uint64_t>{64, 192}));
  EXPECT_EQ(g->find("blk.0.ffn_gate.weight"), nullptr);
  EXPECT_EQ(g->find("blk.0.attn_norm.weight")->type, GgmlType::F32);
  auto back = open_model(dir.file("phi.gguf"));
  EXPECT_EQ(back->config.rope_style, RopeStyle::Neox);
  EXPECT_EQ(back->config.rope_freq_factors, in->config.rope_freq_factors);
  EXPECT_EQ(back->config.rope_freq_factors_long, in->config.rope_freq_factors_long);
  EXPECT_FLOAT_EQ(back->config.rope_attn_factor, in->config.rope_attn_factor);
  EXPECT_EQ(back->config.rope_original_context, 256u);
  auto f16 = [](std::vector<float> v) {
    for (float& x : v) x = f16_to_f32(f32_to_f16(x));
    return v;
  };
  const std::vector<float>& gate_up = hf["model.layers.1.mlp.gate_up_proj.weight"];
  EXPECT_EQ(values(back->get("blk.1.ffn_gate.weight")), f16(rows_of(gate_up, 64, 0, 96)));
  EXPECT_EQ(values(back->get("blk.1.ffn_up.weight")), f16(rows_of(gate_up, 64, 96, 96)));
  EXPECT_EQ(values(back->get("blk.1.attn_v.weight")), f16(rows_of(hf["model.layers.1.self_attn.qkv_proj.weight"], 64, 128, 64)));
  EXPECT_EQ(values(back->get("blk.1.attn_norm.weight")), hf["model.layers.1.input_layernorm.weight"]);
}

TEST(Convert, Qwen3ToQ4KWithQ6KHead) {
  TempDir dir;
  HfSpec spec;
  spec.model_type = "qwen3";
  spec.hidden = 256;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.head_dim = 64;
  spec.ff = 512;
  spec.vocab = 100;
  spec.tie = true;
  spec.dtype = "BF16";
  auto hf = write_hf_model(dir.file("q3"), spec);
  auto in = open_model(dir.file("q3"));
  std::vector<std::string> progress;
  ConvertOptions options;
  options.progress = [&](size_t, size_t, const std::string& name, GgmlType) { progress.push_back(name); };
  convert_model(*in, dir.file("q3.gguf"), GgmlType::Q4_K, nullptr, options);
  auto out = open_model(dir.file("q3.gguf"));
  EXPECT_EQ(progress.size(), out->gguf->tensors().size());
  EXPECT_TRUE(out->config.qk_norm);
  EXPECT_TRUE(out->config.tie_word_embeddings);
  EXPECT_EQ(out->config.head_dim, 64u);
  EXPECT_EQ(out->gguf->get_uint("general.file_type"), gguf_file_type(GgmlType::Q4_K));
  EXPECT_EQ(out->get("token_embd.weight").type, GgmlType::Q6_K);  // the tied LM head
  EXPECT_EQ(out->get("blk.0.attn_q_norm.weight").type, GgmlType::F32);
  for (const auto& [gguf_name, hf_name] : std::vector<std::pair<std::string, std::string>>{
           {"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight"},
           {"blk.1.ffn_down.weight", "model.layers.1.mlp.down_proj.weight"},
           {"token_embd.weight", "model.embed_tokens.weight"}}) {
    const TensorView& t = out->get(gguf_name);
    const double e = nmse(values(t), hf[hf_name]);
    std::printf("  %-24s %-5s NMSE %.3g\n", gguf_name.c_str(), type_name(t.type), e);
    EXPECT_LT(e, t.type == GgmlType::Q6_K ? 2e-3 : 1.2e-2) << gguf_name;
  }
  EXPECT_EQ(values(out->get("blk.1.attn_k_norm.weight")), hf["model.layers.1.self_attn.k_norm.weight"]);
}

// Q5_K and Q6_K files (llama.cpp's Q5_K_S and Q6_K mixes): K-quant matrices where rows are 256-wide,
// a Q6_K LM head, the file-type id, and values close to the BF16 source.
TEST(Convert, Qwen3ToQ5KAndQ6K) {
  TempDir dir;
  HfSpec spec;
  spec.model_type = "qwen3";
  spec.hidden = 256;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.head_dim = 64;
  spec.ff = 512;
  spec.vocab = 100;
  spec.tie = false;
  spec.dtype = "BF16";
  auto hf = write_hf_model(dir.file("q3"), spec);
  auto in = open_model(dir.file("q3"));
  struct Case {
    GgmlType type;
    uint32_t file_type;
    double bound;  // NMSE of the matrices of `type` (measured: Q5_K 1.2e-3, Q6_K 2.8e-4)
  };
  for (const Case& c : {Case{GgmlType::Q5_K, 16, 1.6e-3}, Case{GgmlType::Q6_K, 18, 4e-4}}) {
    SCOPED_TRACE(type_name(c.type));
    const std::string path = dir.file(std::string(type_name(c.type)) + ".gguf");
    convert_model(*in, path, c.type, nullptr);
    auto out = open_model(path);
    EXPECT_EQ(out->gguf->get_uint("general.file_type"), c.file_type);
    EXPECT_EQ(gguf_file_type(c.type), c.file_type);
    EXPECT_EQ(out->get("output.weight").type, GgmlType::Q6_K);
    EXPECT_EQ(out->get("blk.0.attn_norm.weight").type, GgmlType::F32);
    for (const auto& [gguf_name, hf_name] : std::vector<std::pair<std::string, std::string>>{
             {"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight"},
             {"blk.1.ffn_down.weight", "model.layers.1.mlp.down_proj.weight"},
             {"token_embd.weight", "model.embed_tokens.weight"},
             {"output.weight", "lm_head.weight"}}) {
      const TensorView& t = out->get(gguf_name);
      if (gguf_name != "output.weight") {
        EXPECT_EQ(t.type, c.type) << gguf_name;
      }
      const double e = nmse(values(t), hf[hf_name]);
      std::printf("  %-24s %-5s NMSE %.3g\n", gguf_name.c_str(), type_name(t.type), e);
      EXPECT_LT(e, t.type == GgmlType::Q6_K ? 4e-4 : c.bound) << gguf_name;
    }
  }
}

// stories260K's 64-wide rows take no 256-element block: Q5_K falls back to Q5_1 (as llama.cpp's
// tensor_type_fallback), the 172-wide ffn_down to F16; the lower-bit types likewise.
TEST(Convert, StoriesKQuantFallbacks) {
  TempDir dir;
  auto in = open_model(kStories + "stories260K-f32.gguf");
  for (auto [type, narrow] : {std::pair{GgmlType::Q5_K, GgmlType::Q5_1}, std::pair{GgmlType::Q3_K, GgmlType::Q4_0},
                              std::pair{GgmlType::IQ4_XS, GgmlType::IQ4_NL}}) {
    SCOPED_TRACE(type_name(type));
    const std::string path = dir.file(std::string(type_name(type)) + ".gguf");
    convert_model(*in, path, type, nullptr);
    auto out = open_model(path);
    EXPECT_EQ(out->get("blk.0.attn_q.weight").type, narrow);
    EXPECT_EQ(out->get("blk.0.ffn_down.weight").type, GgmlType::F16);
    EXPECT_EQ(out->get("output.weight").type, GgmlType::Q8_0);  // Q6_K wanted, 64-wide rows
    EXPECT_EQ(out->gguf->get_uint("general.file_type"), gguf_file_type(type));
    const double e = nmse(values(out->get("blk.1.attn_q.weight")), values(in->get("blk.1.attn_q.weight")));
    std::printf("  %-6s blk.1.attn_q.weight as %-6s NMSE %.3g\n", type_name(type), type_name(narrow), e);
    EXPECT_LT(e, narrow == GgmlType::Q5_1 ? 1.6e-3 : 8e-3) << e;  // measured 1.2e-3; 6.3e-3 / 5.2e-3
  }
}

TEST(Convert, LlamaBiasAndQwen2Biases) {
  TempDir dir;
  HfSpec llama;
  llama.bias = true;
  auto hf = write_hf_model(dir.file("llama"), llama);
  convert_model(*open_model(dir.file("llama")), dir.file("llama.gguf"), GgmlType::F32, nullptr);
  auto back = open_model(dir.file("llama.gguf"));
  EXPECT_TRUE(back->config.attn_bias);
  // Q and K (weights and biases) come back permuted within each 16-wide head; V untouched.
  const std::vector<float> qb = values(back->get("blk.0.attn_q.bias"));
  const std::vector<float> qw = values(back->get("blk.0.attn_k.weight"));
  const std::vector<float>& hf_qb = hf["model.layers.0.self_attn.q_proj.bias"];
  const std::vector<float>& hf_kw = hf["model.layers.0.self_attn.k_proj.weight"];
  for (uint64_t r = 0; r < qb.size(); ++r) EXPECT_EQ(qb[r], hf_qb[llama_permuted_row(r, 16)]);
  for (uint64_t r = 0; r < 32; ++r)
    EXPECT_EQ(rows_of(qw, 64, r, 1), rows_of(hf_kw, 64, llama_permuted_row(r, 16), 1)) << r;
  EXPECT_EQ(values(back->get("blk.0.attn_v.bias")), hf["model.layers.0.self_attn.v_proj.bias"]);

  HfSpec qwen2;
  qwen2.model_type = "qwen2";
  auto hq = write_hf_model(dir.file("qwen2"), qwen2);
  convert_model(*open_model(dir.file("qwen2")), dir.file("qwen2.gguf"), GgmlType::F32, nullptr);
  auto q2 = open_model(dir.file("qwen2.gguf"));
  EXPECT_EQ(q2->config.rope_style, RopeStyle::Neox);
  EXPECT_EQ(values(q2->get("blk.1.attn_q.bias")), hq["model.layers.1.self_attn.q_proj.bias"]);    // not permuted
  EXPECT_EQ(values(q2->get("blk.1.attn_q.weight")), hq["model.layers.1.self_attn.q_proj.weight"]);
}

TEST(Convert, TypeFallbacksAndErrors) {
  EXPECT_EQ(convert_matrix_type(GgmlType::Q4_K, 256), GgmlType::Q4_K);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q4_K, 64), GgmlType::Q4_0);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q4_K, 172), GgmlType::F16);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q6_K, 96), GgmlType::Q8_0);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q8_0, 172), GgmlType::F16);
  EXPECT_EQ(convert_matrix_type(GgmlType::BF16, 172), GgmlType::BF16);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q5_K, 512), GgmlType::Q5_K);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q5_K, 96), GgmlType::Q5_1);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q5_K, 100), GgmlType::F16);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q2_K, 64), GgmlType::Q4_0);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q3_K, 64), GgmlType::Q4_0);
  EXPECT_EQ(convert_matrix_type(GgmlType::IQ4_XS, 64), GgmlType::IQ4_NL);
  EXPECT_EQ(convert_matrix_type(GgmlType::Q5_0, 64), GgmlType::Q5_0);
  EXPECT_EQ(convert_head_type(GgmlType::Q5_K), GgmlType::Q6_K);
  EXPECT_EQ(convert_head_type(GgmlType::Q4_0), GgmlType::Q4_0);
  EXPECT_EQ(convert_head_type(GgmlType::Q8_0), GgmlType::Q8_0);
  // llama.h's LLAMA_FTYPE_MOSTLY_* ids.
  for (auto [type, id] : {std::pair{GgmlType::Q4_1, 3u}, std::pair{GgmlType::Q5_0, 8u}, std::pair{GgmlType::Q5_1, 9u},
                          std::pair{GgmlType::Q2_K, 10u}, std::pair{GgmlType::Q3_K, 11u}, std::pair{GgmlType::Q4_K, 14u},
                          std::pair{GgmlType::Q5_K, 16u}, std::pair{GgmlType::Q6_K, 18u}, std::pair{GgmlType::IQ4_NL, 25u},
                          std::pair{GgmlType::IQ4_XS, 30u}}) {
    EXPECT_EQ(gguf_file_type(type), id) << type_name(type);
  }

  TempDir dir;
  auto in = open_model(kStories + "stories260K-f32.gguf");
  // MXFP4 has a quantizer but no llama.cpp file type of its own outside MoE mixes; IQ2_XXS none.
  expect_model_error([&] { convert_model(*in, dir.file("x.gguf"), GgmlType::MXFP4, nullptr); },
                     {"cannot write type MXFP4", "Q5_K", "IQ4_XS"});
  EXPECT_THROW(convert_model(*in, dir.file("x.gguf"), GgmlType::IQ2_XXS, nullptr), ModelError);
  auto vocab = GgufFile::open(kVocab + "ggml-vocab-llama-spm.gguf");
  try {
    convert_model(*in, dir.file("x.gguf"), GgmlType::F16, vocab.get());
    ADD_FAILURE() << "vocabulary size mismatch accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary has 32000 tokens"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.file("x.gguf")));
  EXPECT_FALSE(fs::exists(dir.file("x.gguf.tmp")));
}
