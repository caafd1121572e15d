// open_model: source detection, canonical names, fused-tensor splitting, and validation of every
// tensor's shape and type against the config, so the engine can trust what it is handed.
#include "model/model_file.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include "model/model_error.h"

namespace ztvm {

namespace fs = std::filesystem;

namespace {

struct ArchName {
  Arch arch;
  const char* name;
};
constexpr ArchName kArchs[] = {{Arch::Llama, "llama"},       {Arch::Qwen2, "qwen2"},   {Arch::Qwen3, "qwen3"},
                               {Arch::Phi3, "phi3"},         {Arch::Qwen3Moe, "qwen3moe"}, {Arch::Qwen35, "qwen35"},
                               {Arch::Qwen35Moe, "qwen35moe"}};

// Rows [first, first + count) of a 2-D tensor: a contiguous byte range, whatever the type.
TensorView row_slice(const TensorView& t, const std::string& name, uint64_t first, uint64_t count) {
  TensorView v = t;
  v.name = name;
  const uint64_t rb = row_bytes(t.type, t.cols());
  v.ne = {t.cols(), count};
  v.data = t.data + first * rb;
  v.nbytes = count * rb;
  return v;
}

// A sparse layer's experts as 2-D views (expert_tensor), from GGUF's three stacked tensors
// [d, ff, E], [d, ff, E], [ff, d, E] or transformers 5's two, [d, 2 ff, E] (each expert's gate rows,
// then its up rows) and [ff, d, E]. HF checkpoints that store the experts one by one name them so
// already (map_hf_tensors).
void split_experts(ModelFile& m, uint32_t l) {
  const ModelConfig& c = m.config;
  const uint64_t E = c.num_experts, ff = c.moe_intermediate_size, d = c.hidden_size;
  auto stacked = [&](const char* role, uint64_t cols, uint64_t rows) {
    const std::string name = layer_tensor(l, role);
    const TensorView* t = m.find(name);
    const std::vector<uint64_t> shape = {cols, rows, E};
    if (!t) throw ModelError(m.path + ": missing tensor " + name + " (expected shape " + shape_to_string(shape) + ")");
    if (t->ne != shape)
      throw ModelError(m.path + ": tensor " + name + ": expected shape " + shape_to_string(shape) + ", got " + t->shape_str());
    return *t;
  };
  auto views = [&](const TensorView& t, const char* role, uint64_t first, uint64_t rows, uint64_t stride) {
    for (uint32_t e = 0; e < E; e++)
      m.tensors[expert_tensor(l, role, e)] = row_slice(t, expert_tensor(l, role, e), e * stride + first, rows);
  };
  if (m.from_hf() && !m.find(layer_tensor(l, "ffn_gate_up_exps"))) return;
  if (m.find(layer_tensor(l, "ffn_gate_up_exps"))) {
    const TensorView t = stacked("ffn_gate_up_exps", d, 2 * ff);
    views(t, "ffn_gate", 0, ff, 2 * ff);
    views(t, "ffn_up", ff, ff, 2 * ff);
  } else {
    views(stacked("ffn_gate_exps", d, ff), "ffn_gate", 0, ff, ff);
    views(stacked("ffn_up_exps", d, ff), "ffn_up", 0, ff, ff);
  }
  views(stacked("ffn_down_exps", ff, d), "ffn_down", 0, d, d);
}

// Phi-3 stores Q, K, V as one matrix and gate, up as another; expose the parts as views.
void split_fused(ModelFile& m) {
  const ModelConfig& c = m.config;
  const uint64_t q_rows = uint64_t(c.num_attention_heads) * c.head_dim;
  const uint64_t kv_rows = uint64_t(c.num_key_value_heads) * c.head_dim;
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    if (c.layer(l).ffn == Ffn::Moe) split_experts(m, l);
    // GGUF phi3 names the fused gate+up tensor ffn_up; recognise it by its doubled row count.
    const std::string up = layer_tensor(l, "ffn_up");
    if (c.arch == Arch::Phi3 && m.gguf && !m.find(layer_tensor(l, "ffn_gate"))) {
      auto it = m.tensors.find(up);
      if (it != m.tensors.end() && it->second.ne.size() == 2 && it->second.rows() == 2ull * c.intermediate_size) {
        TensorView fused = it->second;
        fused.name = layer_tensor(l, "ffn_gate_up");
        m.tensors.erase(it);
        m.tensors[fused.name] = fused;
      }
    }
    // A gated DeltaNet's attn_qkv is its conv's input projection, not attention's fused Q, K, V.
    const Mixer mixer = c.layer(l).mixer;
    const TensorView* qkv = mixer == Mixer::GatedDeltaNet ? nullptr : m.find(layer_tensor(l, "attn_qkv"));
    if (qkv) {
      const uint64_t q = mixer == Mixer::GatedAttention ? 2 * q_rows : q_rows;  // queries and their gates
      if (qkv->ne.size() != 2 || qkv->cols() != c.hidden_size || qkv->rows() != q + 2 * kv_rows)
        throw ModelError(m.path + ": tensor " + qkv->name + ": expected shape " +
                         shape_to_string({c.hidden_size, q + 2 * kv_rows}) + ", got " + qkv->shape_str());
      const TensorView fused = *qkv;
      m.tensors[layer_tensor(l, "attn_q")] = row_slice(fused, layer_tensor(l, "attn_q"), 0, q);
      m.tensors[layer_tensor(l, "attn_k")] = row_slice(fused, layer_tensor(l, "attn_k"), q, kv_rows);
      m.tensors[layer_tensor(l, "attn_v")] = row_slice(fused, layer_tensor(l, "attn_v"), q + kv_rows, kv_rows);
    }
    if (const TensorView* gate_up = m.find(layer_tensor(l, "ffn_gate_up"))) {
      const uint64_t ff = c.intermediate_size;
      if (gate_up->ne.size() != 2 || gate_up->cols() != c.hidden_size || gate_up->rows() != 2 * ff)
        throw ModelError(m.path + ": tensor " + gate_up->name + ": expected shape " +
                         shape_to_string({c.hidden_size, 2 * ff}) + ", got " + gate_up->shape_str());
      const TensorView fused = *gate_up;
      m.tensors[layer_tensor(l, "ffn_gate")] = row_slice(fused, layer_tensor(l, "ffn_gate"), 0, ff);  // gate first
      m.tensors[up] = row_slice(fused, up, ff, ff);
    }
  }
}

// An F32 tensor made at load, its bytes kept by the ModelFile, in place of `name`.
void put_f32(ModelFile& m, const std::string& name, const std::vector<float>& v) {
  std::vector<uint8_t>& bytes = m.requantized.emplace_back(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  TensorView t;
  t.name = name, t.type = GgmlType::F32, t.ne = {v.size()}, t.data = bytes.data(), t.nbytes = bytes.size();
  m.tensors[name] = t;
}

std::vector<float> floats_of(const ModelFile& m, const TensorView& t) {
  if (!type_supported(t.type))
    throw ModelError(m.path + ": tensor " + t.name + ": type " + type_name(t.type) + " is not supported");
  std::vector<float> out(t.elements());
  for (uint64_t r = 0; r < t.rows(); ++r)
    dequantize_row(t.type, t.data + r * row_bytes(t.type, t.cols()), out.data() + r * t.cols(), t.cols());
  return out;
}

// Qwen3.5's tensors as llama.cpp's converter stores them, whichever the source: HF's (1 + w)
// RMSNorm weights become 1 + w and A_log becomes A = -exp(A_log) (both F32, tiny), and the shapes
// lose their unit axes (conv1d [K, 1, C], the shared expert's gate [d, 1]); GGUF's pre-FFN norm,
// post_attention_norm, takes the name every other architecture's has, ffn_norm. The value heads'
// order (grouped in HF, tiled in GGUF) stays as stored: config.linear_v_heads_tiled says which.
void canonical_qwen35(ModelFile& m) {
  const ModelConfig& c = m.config;
  auto drop_unit_axes = [&](const std::string& name) {
    auto it = m.tensors.find(name);
    if (it == m.tensors.end()) return;
    std::vector<uint64_t> ne;
    for (uint64_t x : it->second.ne)
      if (x != 1) ne.push_back(x);
    if (!ne.empty() && it->second.ne.size() > 1) it->second.ne = ne;
  };
  auto plus_one = [&](const std::string& name) {
    if (const TensorView* t = m.find(name)) {
      std::vector<float> w = floats_of(m, *t);
      for (float& x : w) x += 1.f;  // exact in f32 for f16/bf16 w of the size norms have
      put_f32(m, name, w);
    }
  };
  if (m.from_hf()) plus_one("output_norm.weight");
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) {
    drop_unit_axes(layer_tensor(l, "ssm_conv1d"));
    drop_unit_axes(layer_tensor(l, "ffn_gate_inp_shexp"));
    if (!m.from_hf()) {
      auto it = m.tensors.find(layer_tensor(l, "post_attention_norm"));
      if (it == m.tensors.end()) continue;
      TensorView t = it->second;
      t.name = layer_tensor(l, "ffn_norm");
      m.tensors.erase(it);
      m.tensors[t.name] = t;
      continue;
    }
    for (const char* role : {"attn_norm", "ffn_norm", "attn_q_norm", "attn_k_norm"}) plus_one(layer_tensor(l, role));
    if (const TensorView* a = m.find(layer_tensor(l, "ssm_a", ""))) {
      std::vector<float> A = floats_of(m, *a);
      for (float& x : A) x = -std::exp(x);
      put_f32(m, a->name, A);
    }
  }
}

void check_config(const ModelFile& m) {
  const ModelConfig& c = m.config;
  auto fail = [&](const std::string& what) { throw ModelError(m.path + ": invalid config: " + what); };
  if (c.hidden_size == 0 || c.num_hidden_layers == 0 || c.intermediate_size == 0 || c.head_dim == 0)
    fail("hidden_size, num_hidden_layers, intermediate_size and head_dim must be > 0");
  if (c.num_key_value_heads == 0 || c.num_attention_heads % c.num_key_value_heads != 0)
    fail("num_attention_heads " + std::to_string(c.num_attention_heads) + " is not a multiple of num_key_value_heads " +
         std::to_string(c.num_key_value_heads));
  if (c.rotary_dim == 0 || c.rotary_dim > c.head_dim || c.rotary_dim % 2 != 0)
    fail("rotary_dim " + std::to_string(c.rotary_dim) + " must be even and in 2.." + std::to_string(c.head_dim));
  bool sparse = false;
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) sparse |= c.layer(l).ffn == Ffn::Moe;
  if (sparse && (c.moe_intermediate_size == 0 || c.num_experts_per_tok == 0 || c.num_experts_per_tok > c.num_experts))
    fail("experts: " + std::to_string(c.num_experts_per_tok) + " of " + std::to_string(c.num_experts) + " per token, " +
         std::to_string(c.moe_intermediate_size) + " wide: expected 1..experts of them and a width > 0");
  bool deltanet = false, gated = false;
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) {
    deltanet |= c.layer(l).mixer == Mixer::GatedDeltaNet;
    gated |= c.layer(l).mixer == Mixer::GatedAttention;
  }
  const uint32_t nk = c.linear_num_key_heads, nv = c.linear_num_value_heads;
  if (deltanet && (nk == 0 || nv % nk != 0 || c.linear_key_head_dim == 0 || c.linear_value_head_dim == 0 ||
                   c.linear_conv_kernel_dim < 2))
    fail("gated DeltaNet: " + std::to_string(nk) + " key heads of " + std::to_string(c.linear_key_head_dim) + ", " +
         std::to_string(nv) + " value heads of " + std::to_string(c.linear_value_head_dim) + ", conv kernel " +
         std::to_string(c.linear_conv_kernel_dim) + ": expected value heads a multiple of key heads, dims > 0, kernel >= 2");
  if (gated && c.attn_bias) fail("gated attention with q/k/v biases is not supported");
  for (const auto* factors : {&c.rope_freq_factors, &c.rope_freq_factors_long})
    if (!factors->empty() && factors->size() != c.rotary_dim / 2)
      fail("RoPE frequency factors: expected " + std::to_string(c.rotary_dim / 2) + " values, got " +
           std::to_string(factors->size()));
}

// Every tensor the forward pass reads: present (unless optional), the expected shape, a type we compute with.
void check_tensors(const ModelFile& m) {
  const ModelConfig& c = m.config;
  const uint64_t d = c.hidden_size, ff = c.intermediate_size, v = c.vocab_size;
  const uint64_t q = uint64_t(c.num_attention_heads) * c.head_dim, kv = uint64_t(c.num_key_value_heads) * c.head_dim;
  auto expect = [&](const std::string& name, std::vector<uint64_t> shape, bool required) {
    const TensorView* t = m.find(name);
    if (!t) {
      if (required && name == "token_embd.weight") throw ModelError(m.path + ": missing tensor " + name);
      if (required) throw ModelError(m.path + ": missing tensor " + name + " (expected shape " + shape_to_string(shape) + ")");
      return;
    }
    if (t->ne != shape)
      throw ModelError(m.path + ": tensor " + name + ": expected shape " + shape_to_string(shape) + ", got " + t->shape_str());
    if (!type_supported(t->type))
      throw ModelError(m.path + ": tensor " + name + ": type " + type_name(t->type) +
                       " is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, "
                       "Q6_K, IQ4_NL, IQ4_XS, MXFP4)");
  };
  expect("token_embd.weight", {d, v}, true);
  expect("output_norm.weight", {d}, true);
  expect("output.weight", {d, v}, !c.tie_word_embeddings);
  expect("rope_freqs.weight", {c.rotary_dim / 2}, false);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    auto n = [&](const char* role, const char* suffix = "weight") { return layer_tensor(l, role, suffix); };
    const Mixer mixer = c.layer(l).mixer;
    expect(n("attn_norm"), {d}, true);
    if (mixer == Mixer::GatedDeltaNet) {
      // Conv channels q | k | v; the state is [value heads][key dim][value dim].
      const uint64_t kd = uint64_t(c.linear_num_key_heads) * c.linear_key_head_dim;
      const uint64_t vd = uint64_t(c.linear_num_value_heads) * c.linear_value_head_dim, nv = c.linear_num_value_heads;
      expect(n("attn_qkv"), {d, 2 * kd + vd}, true);
      expect(n("attn_gate"), {d, vd}, true);
      expect(n("ssm_beta"), {d, nv}, true);
      expect(n("ssm_alpha"), {d, nv}, true);
      expect(n("ssm_conv1d"), {c.linear_conv_kernel_dim, 2 * kd + vd}, true);
      expect(n("ssm_dt", "bias"), {nv}, true);
      expect(n("ssm_a", ""), {nv}, true);
      expect(n("ssm_norm"), {c.linear_value_head_dim}, true);
      expect(n("ssm_out"), {vd, d}, true);
    } else {
      const uint64_t qw = mixer == Mixer::GatedAttention ? 2 * q : q;  // gated: each head's query, then its gate
      expect(n("attn_q"), {d, qw}, true);
      expect(n("attn_k"), {d, kv}, true);
      expect(n("attn_v"), {d, kv}, true);
      expect(n("attn_output"), {q, d}, true);
      expect(n("attn_q", "bias"), {q}, c.attn_bias);
      expect(n("attn_k", "bias"), {kv}, c.attn_bias);
      expect(n("attn_v", "bias"), {kv}, c.attn_bias);
      expect(n("attn_q_norm"), {c.head_dim}, c.qk_norm);
      expect(n("attn_k_norm"), {c.head_dim}, c.qk_norm);
    }
    expect(n("ffn_norm"), {d}, true);
    if (c.layer(l).ffn == Ffn::Moe) {
      const uint64_t fe = c.moe_intermediate_size, fs = c.shared_expert_intermediate_size;
      expect(n("ffn_gate_inp"), {d, c.num_experts}, true);
      for (uint32_t e = 0; e < c.num_experts; e++) {
        expect(expert_tensor(l, "ffn_gate", e), {d, fe}, true);
        expect(expert_tensor(l, "ffn_up", e), {d, fe}, true);
        expect(expert_tensor(l, "ffn_down", e), {fe, d}, true);
      }
      if (fs) {
        expect(n("ffn_gate_inp_shexp"), {d}, true);
        expect(n("ffn_gate_shexp"), {d, fs}, true);
        expect(n("ffn_up_shexp"), {d, fs}, true);
        expect(n("ffn_down_shexp"), {fs, d}, true);
      }
      continue;
    }
    expect(n("ffn_gate"), {d, ff}, true);
    expect(n("ffn_up"), {d, ff}, true);
    expect(n("ffn_down"), {ff, d}, true);
  }
}

// A split GGUF (split.count > 1): the parts are NAME-%05d-of-%05d.gguf, numbered from 1; the first
// holds the metadata. Opened from another part, the model is reopened from the first.
void open_split_parts(ModelFile& m) {
  const uint64_t count = m.gguf->get_uint("split.count");
  static const std::regex re(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)");
  std::smatch match;
  const std::string given = m.gguf->path();
  if (!std::regex_match(given, match, re) || std::stoull(match[3].str()) != count)
    throw ModelError(given + ": part of a GGUF split into " + std::to_string(count) +
                     " files, but its name is not NAME-0000K-of-" + std::to_string(100000 + count).substr(1) +
                     ".gguf, so the other parts cannot be found");
  auto part_path = [&](uint64_t k) {
    char tail[40];
    std::snprintf(tail, sizeof tail, "-%05llu-of-%05llu.gguf", (unsigned long long)k, (unsigned long long)count);
    return match[1].str() + tail;
  };
  if (m.gguf->get_uint("split.no", 0) != 0) {  // not the first: start from the first
    m.path = part_path(1);
    if (!fs::exists(m.path)) throw ModelError(given + ": its first part " + m.path + " is missing");
    m.gguf = GgufFile::open(m.path);
  }
  for (uint64_t k = 2; k <= count; k++) {
    const std::string p = part_path(k);
    if (!fs::exists(p))
      throw ModelError(m.path + ": part " + std::to_string(k) + " of " + std::to_string(count) + " is missing: " + p);
    auto part = GgufFile::open(p);
    if (part->get_uint("split.count", 1) != count || part->get_uint("split.no", 0) != k - 1)
      throw ModelError(p + ": split.count / split.no say it is not part " + std::to_string(k) + " of " + std::to_string(count));
    m.gguf_parts.push_back(std::move(part));
  }
}
}  // namespace

const char* supported_architectures() { return "llama, qwen2, qwen3, phi3, qwen3moe, qwen35, qwen35moe"; }

Arch parse_arch(const std::string& name, const std::string& source) {
  for (const ArchName& a : kArchs)
    if (name == a.name) return a.arch;
  throw ModelError(source + ": unknown architecture '" + name + "' (supported: " + supported_architectures() + ")");
}

std::string layer_tensor(uint32_t layer, const char* role, const char* suffix) {
  return "blk." + std::to_string(layer) + "." + role + (*suffix ? "." : "") + suffix;
}

std::string expert_tensor(uint32_t layer, const char* role, uint32_t expert) {
  return "blk." + std::to_string(layer) + "." + role + "_exps." + std::to_string(expert);
}

const TensorView* ModelFile::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

const TensorView& ModelFile::get(const std::string& name) const {
  const TensorView* t = find(name);
  if (!t) throw ModelError(path + ": missing tensor '" + name + "'");
  return *t;
}

std::unique_ptr<ModelFile> open_model(const std::string& path) {
  auto m = std::make_unique<ModelFile>();
  m->path = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "config.json"))
      throw ModelError(path + ": not a model directory (no config.json)");
    m->safetensors = SafetensorsDir::open(path);
    m->config = config_from_hf(path, m->safetensors.get());
    m->tensors = map_hf_tensors(*m->safetensors, m->config);
    // The embedding defines the vocabulary; config.json must agree with it.
    if (const TensorView* e = m->find("token_embd.weight")) {
      if (m->config.vocab_size != 0 && e->ne.size() == 2 && m->config.vocab_size != e->rows())
        throw ModelError(path + ": tensor token_embd.weight (model.embed_tokens.weight): expected " +
                         std::to_string(m->config.vocab_size) + " rows (config vocab_size), got " + std::to_string(e->rows()));
      m->config.vocab_size = uint32_t(e->rows());
    }
  } else {
    m->gguf = GgufFile::open(path);
    if (m->gguf->get_uint("split.count", 1) > 1) open_split_parts(*m);
    for (const TensorView& t : m->gguf->tensors()) m->tensors[t.name] = t;
    for (const auto& part : m->gguf_parts)
      for (const TensorView& t : part->tensors())
        if (!m->tensors.emplace(t.name, t).second)
          throw ModelError(part->path() + ": tensor '" + t.name + "' is also in another part");
    if (const GgufValue* n = m->gguf->find_value("split.tensors.count"); n && (uint64_t)n->integer != m->tensors.size())
      throw ModelError(m->path + ": the parts hold " + std::to_string(m->tensors.size()) + " tensors, split.tensors.count says " +
                       std::to_string(n->integer));
    m->config = config_from_gguf(*m->gguf, &m->tensors);
  }
  if (m->config.arch == Arch::Qwen35 || m->config.arch == Arch::Qwen35Moe) canonical_qwen35(*m);
  check_config(*m);
  split_fused(*m);
  check_tensors(*m);
  return m;
}

}  // namespace ztvm
