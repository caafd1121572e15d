// synth_model: shapes, the tensor plan, and random blocks written in parallel row ranges.
#include "model/synth.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <thread>

#include "model/gguf_meta.h"
#include "model/gguf_writer.h"
#include "model/model_error.h"
#include "model/model_file.h"
#include "model/qwen35_layout.h"

namespace ztvm {

namespace {

// Target standard deviation of every weight matrix (transformers' initializer_range).
constexpr double kSigma = 0.02;

// splitmix64: one multiply-xorshift step per 8 random bytes, and a good seed mixer.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  void bytes(uint8_t* p, size_t n) {
    for (; n >= 8; n -= 8, p += 8) {
      const uint64_t v = next();
      std::memcpy(p, &v, 8);
    }
    if (n) {
      const uint64_t v = next();
      std::memcpy(p, &v, n);
    }
  }
};

void put_f16(uint8_t* p, double v) {
  const uint16_t h = f32_to_f16(float(v));
  std::memcpy(p, &h, 2);
}

// One row of random blocks. Each layout is the one quant.h / quant_k.cpp decode; the scale terms
// divide kSigma by the standard deviation of the code distribution so values come out near kSigma.
void fill_row(GgmlType t, uint64_t cols, Rng& rng, uint8_t* out) {
  const uint64_t blocks = cols / block_elems(t);
  switch (t) {
    case GgmlType::F32:
    case GgmlType::F16:
      for (uint64_t i = 0; i < cols; ++i) {
        const float v = float((2 * rng.uniform() - 1) * kSigma * std::sqrt(3.0));  // uniform, std kSigma
        if (t == GgmlType::F32) std::memcpy(out + 4 * i, &v, 4);
        else put_f16(out + 2 * i, v);
      }
      return;
    case GgmlType::Q4_0:  // { f16 d; u8 qs[16] }: x = d * (nibble - 8); codes have std 4.61
      for (uint64_t b = 0; b < blocks; ++b, out += 18) {
        put_f16(out, kSigma / 4.61 * (0.5 + rng.uniform()));
        rng.bytes(out + 2, 16);
      }
      return;
    case GgmlType::Q8_0:  // { f16 d; i8 qs[32] }: x = d * q; codes have std 73.9
      for (uint64_t b = 0; b < blocks; ++b, out += 34) {
        put_f16(out, kSigma / 73.9 * (0.5 + rng.uniform()));
        rng.bytes(out + 2, 32);
      }
      return;
    case GgmlType::Q4_K:  // { f16 d, dmin; u8 scales[12]; u8 qs[128] }: x = d*sc*q - dmin*m
      for (uint64_t b = 0; b < blocks; ++b, out += 144) {
        // sc = m = s in 32..63 and dmin = 7.5 d make x = d*s*(q - 7.5): zero mean, std d*45.6*4.61.
        uint8_t s[8];
        for (uint8_t& v : s) v = uint8_t(32 + rng.next() % 32);
        const double d = kSigma / (45.6 * 4.61);
        put_f16(out, d);
        put_f16(out + 2, 7.5 * d);
        uint8_t* sc = out + 4;  // 6-bit pairs: j < 4 in bytes j (sc) and j+4 (m); j >= 4 split
        for (int j = 0; j < 4; ++j) {
          sc[j] = uint8_t(s[j] | ((s[j + 4] >> 4) << 6));
          sc[j + 4] = uint8_t(s[j] | ((s[j + 4] >> 4) << 6));
          sc[j + 8] = uint8_t((s[j + 4] & 15) | ((s[j + 4] & 15) << 4));
        }
        rng.bytes(out + 16, 128);
      }
      return;
    case GgmlType::Q6_K:  // { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }: x = d*scale*(q - 32)
      for (uint64_t b = 0; b < blocks; ++b, out += 210) {
        rng.bytes(out, 192);  // uniform 6-bit codes: q - 32 has std 18.48
        for (int k = 0; k < 16; ++k) out[192 + k] = uint8_t(4 + rng.next() % 16);  // rms scale 12.4
        put_f16(out + 208, kSigma / (12.4 * 18.48));
      }
      return;
    default: {  // the other quantized types: random values of std kSigma through the CPU quantizer
      if (!type_supported(t)) throw ModelError(std::string("synth: cannot write random ") + type_name(t) + " blocks");
      std::vector<float> v(cols);
      for (float& x : v) x = float((2 * rng.uniform() - 1) * kSigma * std::sqrt(3.0));
      quantize_row(t, v.data(), out, cols);
      return;
    }
  }
}

uint64_t name_hash(const std::string& s) {  // FNV-1a: a per-tensor stream independent of order
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Rows [first, first + rows) of one tensor on `threads` threads; each row's stream depends only on
// (seed, row).
void fill_parallel(GgmlType t, uint64_t cols, uint64_t first, uint64_t rows, uint64_t seed, uint8_t* out, unsigned threads) {
  const uint64_t rb = row_bytes(t, cols);
  const uint64_t n_threads = std::clamp<uint64_t>(rows * cols / (1 << 18), 1, threads);
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(n_threads);
  for (uint64_t k = 0; k < n_threads; ++k) {
    const uint64_t begin = rows * k / n_threads, end = rows * (k + 1) / n_threads;
    auto work = [&, k, begin, end] {
      try {
        fill_random_rows(t, cols, first + begin, end - begin, seed, out + begin * rb);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    };
    if (n_threads == 1) work();
    else pool.emplace_back(work);
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

void fill_random_rows(GgmlType t, uint64_t cols, uint64_t first_row, uint64_t n_rows, uint64_t seed, uint8_t* out) {
  const uint64_t rb = row_bytes(t, cols);
  for (uint64_t r = 0; r < n_rows; ++r) {
    Rng rng{Rng{seed ^ ((first_row + r) * 0xD1B54A32D192ED03ull)}.next()};
    fill_row(t, cols, rng, out + r * rb);
  }
}

const char* synth_shape_names() { return "llama-3.2-1b, qwen3-4b, phi-3-mini, qwen3-30b-a3b, qwen3.5-4b, qwen3.6-35b-a3b"; }

ModelConfig synth_shape(const std::string& name) {
  ModelConfig c;
  auto dims = [&](uint32_t vocab, uint32_t d, uint32_t ff, uint32_t layers, uint32_t heads, uint32_t kv, uint32_t hd) {
    c.vocab_size = vocab, c.hidden_size = d, c.intermediate_size = ff, c.num_hidden_layers = layers;
    c.num_attention_heads = heads, c.num_key_value_heads = kv, c.head_dim = hd, c.rotary_dim = hd;
  };
  // Experts in every layer (decoder_sparse_step 1, no mlp_only_layers), top-k renormalised.
  auto experts = [&](uint32_t n, uint32_t per_token, uint32_t ff) {
    c.num_experts = n, c.num_experts_per_tok = per_token, c.moe_intermediate_size = ff, c.norm_topk_prob = true;
    c.layer_kinds.assign(c.num_hidden_layers, LayerKind{Mixer::Attention, Ffn::Moe});
  };
  // Qwen3.5: gated DeltaNet layers (nk key heads, nv value heads, both `dim` wide, a 4-tap conv) with
  // a gated attention layer every 4th (full_attention_interval), a quarter of each head rotated.
  auto qwen35 = [&](bool moe, uint32_t nk, uint32_t nv, uint32_t dim) {
    c.arch = moe ? Arch::Qwen35Moe : Arch::Qwen35, c.arch_name = moe ? "qwen35moe" : "qwen35";
    c.linear_conv_kernel_dim = 4, c.linear_num_key_heads = nk, c.linear_num_value_heads = nv;
    c.linear_key_head_dim = dim, c.linear_value_head_dim = dim, c.linear_v_heads_tiled = true;  // as GGUF stores them
    c.rotary_dim = c.head_dim / 4, c.qk_norm = true;
    const Ffn ffn = moe ? Ffn::Moe : Ffn::Dense;
    c.layer_kinds.assign(c.num_hidden_layers, LayerKind{Mixer::GatedDeltaNet, ffn});
    for (uint32_t l = 3; l < c.num_hidden_layers; l += 4) c.layer_kinds[l].mixer = Mixer::GatedAttention;
  };
  if (name == "llama-3.2-1b") {  // meta-llama/Llama-3.2-1B config.json
    c.arch = Arch::Llama, c.arch_name = "llama", c.name = "Llama-3.2-1B";
    dims(128256, 2048, 8192, 16, 32, 8, 64);
    c.rope_theta = 500000.f, c.rms_norm_eps = 1e-5f, c.max_position_embeddings = 131072;
    c.tie_word_embeddings = true, c.bos_token_id = 128000, c.eos_token_ids = {128001};
    c.rope_freq_factors = llama3_rope_factors(c.rotary_dim, c.rope_theta, 32.f, 1.f, 4.f, 8192.f);
  } else if (name == "qwen3-4b") {  // Qwen/Qwen3-4B config.json
    c.arch = Arch::Qwen3, c.arch_name = "qwen3", c.name = "Qwen3-4B";
    dims(151936, 2560, 9728, 36, 32, 8, 128);
    c.rope_theta = 1000000.f, c.rms_norm_eps = 1e-6f, c.max_position_embeddings = 40960;
    c.tie_word_embeddings = true, c.qk_norm = true, c.bos_token_id = 151643, c.eos_token_ids = {151645};
  } else if (name == "phi-3-mini") {  // microsoft/Phi-3-mini-4k-instruct config.json
    c.arch = Arch::Phi3, c.arch_name = "phi3", c.name = "Phi-3-mini-4k";
    dims(32064, 3072, 8192, 32, 32, 32, 96);
    c.rope_theta = 10000.f, c.rms_norm_eps = 1e-5f, c.max_position_embeddings = 4096;
    c.bos_token_id = 1, c.eos_token_ids = {32000};
  } else if (name == "qwen3-30b-a3b") {  // Qwen/Qwen3-30B-A3B config.json
    c.arch = Arch::Qwen3Moe, c.arch_name = "qwen3moe", c.name = "Qwen3-30B-A3B";
    dims(151936, 2048, 6144, 48, 32, 4, 128);
    experts(128, 8, 768);
    c.rope_theta = 1000000.f, c.rms_norm_eps = 1e-6f, c.max_position_embeddings = 40960;
    c.tie_word_embeddings = false, c.qk_norm = true, c.bos_token_id = 151643, c.eos_token_ids = {151645};
  } else if (name == "qwen3.5-4b") {  // Qwen/Qwen3.5-4B config.json (text_config)
    c.name = "Qwen3.5-4B";
    dims(248320, 2560, 9216, 32, 16, 4, 256);
    qwen35(false, 16, 32, 128);
    c.rope_theta = 10000000.f, c.rms_norm_eps = 1e-6f, c.max_position_embeddings = 262144;
    c.tie_word_embeddings = true;
  } else if (name == "qwen3.6-35b-a3b") {  // Qwen/Qwen3.6-35B-A3B (text_config; Qwen3.5-35B-A3B's shapes)
    c.name = "Qwen3.6-35B-A3B";
    dims(248320, 2048, 512, 40, 16, 2, 256);
    experts(256, 8, 512);
    c.shared_expert_intermediate_size = 512;
    qwen35(true, 16, 32, 128);
    c.rope_theta = 10000000.f, c.rms_norm_eps = 1e-6f, c.max_position_embeddings = 262144;
    c.tie_word_embeddings = false;
  } else if (name == "tiny-qwen35" || name == "tiny-qwen35moe") {  // for tests: 4 layers, the 4th attention
    const bool moe = name == "tiny-qwen35moe";
    c.name = name;
    dims(0, 256, 512, 4, 4, 2, 64);
    if (moe) experts(4, 2, 256), c.shared_expert_intermediate_size = 256;
    qwen35(moe, 2, 4, 64);
    c.rope_theta = 10000000.f, c.rms_norm_eps = 1e-6f;
  } else if (name == "tiny-moe") {  // for tests: a 2-layer qwen3moe, 4 experts of 256 rows, 2 a token
    c.arch = Arch::Qwen3Moe, c.arch_name = "qwen3moe", c.name = "tiny-moe";
    dims(0, 256, 512, 2, 8, 4, 32);
    experts(4, 2, 256);
    c.rope_theta = 1000000.f, c.rms_norm_eps = 1e-6f, c.qk_norm = true;
  } else if (name == "tiny") {  // for tests: every dimension a multiple of 256 where K-quants need it
    c.arch = Arch::Llama, c.arch_name = "llama", c.name = "tiny";
    dims(0, 256, 512, 2, 8, 4, 32);
    c.max_position_embeddings = 2048;
    c.tie_word_embeddings = true;
  } else {
    throw ModelError("synth: unknown shape '" + name + "' (expected one of: " + synth_shape_names() + ")");
  }
  c.rope_style = c.arch == Arch::Llama ? RopeStyle::Normal : RopeStyle::Neox;  // as GGUF stores each
  return c;
}

std::vector<SynthTensor> synth_plan(const ModelConfig& c, QuantMix mix) {
  const uint64_t d = c.hidden_size, ff = c.intermediate_size, v = c.vocab_size, nl = c.num_hidden_layers;
  const uint64_t q = uint64_t(c.num_attention_heads) * c.head_dim, kv = uint64_t(c.num_key_value_heads) * c.head_dim;
  const bool fused = c.arch == Arch::Phi3;
  std::vector<SynthTensor> plan;
  // experts > 0: that many [cols, rows] matrices stacked into one 3-D tensor (a layer's ffn_*_exps).
  auto matrix = [&](std::string name, TensorRole role, uint32_t layer, uint64_t cols, uint64_t rows, uint64_t experts = 0) {
    const uint32_t gqa = c.num_attention_heads / std::max(1u, c.num_key_value_heads);
    const GgmlType t = quant_mix_type(mix, role, layer, uint32_t(nl), c.tie_word_embeddings, cols, gqa, c.num_experts);
    std::vector<uint64_t> ne = {cols, rows};
    if (experts) ne.push_back(experts);
    plan.push_back({std::move(name), t, std::move(ne)});
  };
  auto norm = [&](std::string name, uint64_t n) { plan.push_back({std::move(name), GgmlType::F32, {n}, true}); };

  matrix("token_embd.weight", TensorRole::TokenEmbd, 0, d, v);
  const bool qwen35 = c.arch == Arch::Qwen35 || c.arch == Arch::Qwen35Moe;
  for (uint32_t l = 0; l < nl; ++l) {
    if (qwen35) {
      for (Qwen35Tensor& t : qwen35_layer_tensors(c, l)) {
        if (t.ne.size() == 1) {
          plan.push_back({std::move(t.name), GgmlType::F32, std::move(t.ne), true, t.constant});
          continue;
        }
        const uint32_t gqa = c.num_attention_heads / std::max(1u, c.num_key_value_heads);
        const GgmlType type = quant_mix_type(mix, t.role, l, uint32_t(nl), c.tie_word_embeddings, t.ne[0], gqa, c.num_experts);
        plan.push_back({std::move(t.name), type, std::move(t.ne)});
      }
      continue;
    }
    norm(layer_tensor(l, "attn_norm"), d);
    if (fused) {
      matrix(layer_tensor(l, "attn_qkv"), TensorRole::AttnQkv, l, d, q + 2 * kv);
    } else {
      matrix(layer_tensor(l, "attn_q"), TensorRole::AttnQ, l, d, q);
      matrix(layer_tensor(l, "attn_k"), TensorRole::AttnK, l, d, kv);
      matrix(layer_tensor(l, "attn_v"), TensorRole::AttnV, l, d, kv);
    }
    if (c.qk_norm) {
      norm(layer_tensor(l, "attn_q_norm"), c.head_dim);
      norm(layer_tensor(l, "attn_k_norm"), c.head_dim);
    }
    matrix(layer_tensor(l, "attn_output"), TensorRole::AttnOutput, l, q, d);
    norm(layer_tensor(l, "ffn_norm"), d);
    if (c.layer(l).ffn == Ffn::Moe) {  // llama.cpp's qwen3moe: the router (F32), then the stacked experts
      const uint64_t fe = c.moe_intermediate_size, E = c.num_experts;
      matrix(layer_tensor(l, "ffn_gate_inp"), TensorRole::FfnGateInp, l, d, E);
      matrix(layer_tensor(l, "ffn_gate_exps"), TensorRole::FfnGate, l, d, fe, E);
      matrix(layer_tensor(l, "ffn_up_exps"), TensorRole::FfnUp, l, d, fe, E);
      matrix(layer_tensor(l, "ffn_down_exps"), TensorRole::FfnDown, l, fe, d, E);
      continue;
    }
    if (fused) {
      matrix(layer_tensor(l, "ffn_up"), TensorRole::FfnUp, l, d, 2 * ff);  // llama.cpp's phi3: gate rows, then up
    } else {
      matrix(layer_tensor(l, "ffn_gate"), TensorRole::FfnGate, l, d, ff);
      matrix(layer_tensor(l, "ffn_up"), TensorRole::FfnUp, l, d, ff);
    }
    matrix(layer_tensor(l, "ffn_down"), TensorRole::FfnDown, l, ff, d);
  }
  norm("output_norm.weight", d);
  if (!c.tie_word_embeddings) matrix("output.weight", TensorRole::Output, 0, d, v);
  return plan;
}

uint64_t synth_data_bytes(const std::vector<SynthTensor>& plan) {
  uint64_t total = 0;
  for (const SynthTensor& t : plan) total += row_bytes(t.type, t.ne[0]) * tensor_rows(t);
  return total;
}

void synth_model(ModelConfig c, QuantMix mix, const GgufFile* vocab, const std::string& out_path,
                 const SynthOptions& options) {
  if (c.vocab_size == 0) {
    const GgufValue* tokens = vocab ? vocab->find_value("tokenizer.ggml.tokens") : nullptr;
    c.vocab_size = tokens ? uint32_t(tokens->array_size()) : 512;
  }
  GgufWriter w;
  const bool quantized = mix != QuantMix::F16;
  write_config_metadata(w, c, quant_mix_file_type(mix), quantized,
                        options.name.empty() ? c.name + " (random weights)" : options.name);
  copy_tokenizer_metadata(w, c, vocab, out_path, /*pad_to_vocab=*/true);
  add_rope_factor_tensors(w, c);

  const unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<GgmlType> written_types(w.tensor_count(), GgmlType::F32);
  for (const SynthTensor& t : synth_plan(c, mix)) {
    written_types.push_back(t.type);
    if (t.ones) {
      w.add_tensor_f32(t.name, GgmlType::F32, t.ne, std::vector<float>(t.ne[0], t.value));
      continue;
    }
    // In row ranges: a row's bytes depend only on (seed, row), so chunking changes nothing.
    const uint64_t seed = Rng{options.seed ^ name_hash(t.name)}.next();
    w.add_tensor_rows(t.name, t.type, t.ne, [t, seed, threads](uint8_t* out, uint64_t first, uint64_t n) {
      fill_parallel(t.type, t.ne[0], first, n, seed, out, threads);
    });
  }
  GgufWriter::ProgressFn progress;
  if (options.progress)
    progress = [&](size_t i, size_t n, const std::string& name) { options.progress(i, n, name, written_types[i]); };
  w.write(out_path, progress);
}

}  // namespace ztvm
