// ModelConfig from GGUF metadata, keyed as llama.cpp writes it: "<arch>.embedding_length", ...
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "model/model_error.h"
#include "model/model_file.h"

namespace ztvm {

namespace {

uint32_t to_u32(const GgufFile& g, const std::string& key, uint64_t v) {
  if (v > std::numeric_limits<uint32_t>::max())
    throw ModelError(g.path() + ": key '" + key + "': value " + std::to_string(v) + " does not fit 32 bits");
  return uint32_t(v);
}

// A hyperparameter llama.cpp allows per layer (an array): we require one value for all layers.
uint32_t uniform_u32(const GgufFile& g, const std::string& key, std::optional<uint64_t> dflt) {
  const GgufValue* v = g.find_value(key);
  if (!v || v->type != GgufValueType::Array) return to_u32(g, key, g.get_uint(key, dflt));
  const std::vector<int64_t> values = g.get_int_array(key);
  if (values.empty()) throw ModelError(g.path() + ": key '" + key + "': empty per-layer array");
  for (int64_t x : values)
    if (x != values[0])
      throw ModelError(g.path() + ": key '" + key + "': per-layer values differ (" + v->summary(8) +
                       "), which ztvm does not support");
  if (values[0] < 0) throw ModelError(g.path() + ": key '" + key + "': negative value " + std::to_string(values[0]));
  return to_u32(g, key, uint64_t(values[0]));
}

std::vector<float> tensor_as_floats(const GgufFile& g, const TensorView& t) {
  if (!type_supported(t.type))
    throw ModelError(g.path() + ": tensor " + t.name + ": type " + type_name(t.type) + " is not supported");
  std::vector<float> out(t.elements());
  for (uint64_t r = 0; r < t.rows(); ++r)
    dequantize_row(t.type, t.data + r * row_bytes(t.type, t.cols()), out.data() + r * t.cols(), t.cols());
  return out;
}

// llama.cpp's qwen35 / qwen35moe (src/models/qwen35*.cpp): the gated DeltaNet's shapes as ssm.*
// keys (state_size: key head dim, group_count: key heads, time_step_rank: value heads, inner_size:
// value heads x value head dim), its layers from attention.recurrent_layers or, as llama.cpp falls
// back, all but every full_attention_interval-th (default 4). Its converter reorders the value
// heads to tiled order. rope.dimension_sections (M-RoPE) is ignored: a text's positions are the same
// in every section, where M-RoPE is plain RoPE over rope.dimension_count dims.
void qwen35_from_gguf(const GgufFile& g, uint64_t shared, ModelConfig* c) {
  const std::string a = c->arch_name + ".";
  c->linear_conv_kernel_dim = to_u32(g, a + "ssm.conv_kernel", g.get_uint(a + "ssm.conv_kernel"));
  c->linear_key_head_dim = to_u32(g, a + "ssm.state_size", g.get_uint(a + "ssm.state_size"));
  c->linear_num_key_heads = to_u32(g, a + "ssm.group_count", g.get_uint(a + "ssm.group_count"));
  c->linear_num_value_heads = to_u32(g, a + "ssm.time_step_rank", g.get_uint(a + "ssm.time_step_rank"));
  const uint64_t inner = g.get_uint(a + "ssm.inner_size");
  if (c->linear_num_value_heads == 0 || inner % c->linear_num_value_heads != 0)
    throw ModelError(g.path() + ": key '" + a + "ssm.inner_size': " + std::to_string(inner) +
                     " is not a multiple of ssm.time_step_rank " + std::to_string(c->linear_num_value_heads));
  c->linear_value_head_dim = to_u32(g, a + "ssm.inner_size", inner / c->linear_num_value_heads);
  c->linear_v_heads_tiled = true;
  c->layer_kinds.resize(c->num_hidden_layers);
  const std::string rec = a + "attention.recurrent_layers";
  if (const GgufValue* v = g.find_value(rec)) {
    const std::vector<int64_t> flags = g.get_int_array(rec);
    if (flags.size() < c->num_hidden_layers)  // MTP layers may follow the trunk's
      throw ModelError(g.path() + ": key '" + rec + "': " + v->summary(8) + " names fewer than block_count layers");
    for (uint32_t l = 0; l < c->num_hidden_layers; l++)
      c->layer_kinds[l].mixer = flags[l] ? Mixer::GatedDeltaNet : Mixer::GatedAttention;
  } else {
    const uint64_t every = g.get_uint(a + "full_attention_interval", 4);
    if (every == 0) throw ModelError(g.path() + ": key '" + a + "full_attention_interval' is 0");
    for (uint32_t l = 0; l < c->num_hidden_layers; l++)
      c->layer_kinds[l].mixer = (l + 1) % every ? Mixer::GatedDeltaNet : Mixer::GatedAttention;
  }
  if (c->arch != Arch::Qwen35Moe) return;
  // llama.cpp's build_moe_ffn for qwen35moe: softmax over the experts, the top-k renormalised.
  c->num_experts = to_u32(g, a + "expert_count", g.get_uint(a + "expert_count"));
  c->num_experts_per_tok = to_u32(g, a + "expert_used_count", g.get_uint(a + "expert_used_count"));
  c->moe_intermediate_size = to_u32(g, a + "expert_feed_forward_length", g.get_uint(a + "expert_feed_forward_length"));
  c->shared_expert_intermediate_size = to_u32(g, a + "expert_shared_feed_forward_length", shared);
  c->norm_topk_prob = true;
  for (LayerKind& k : c->layer_kinds) k.ffn = Ffn::Moe;
}

}  // namespace

ModelConfig config_from_gguf(const GgufFile& g, const std::map<std::string, TensorView>* tensors) {
  // A split file's tensors are spread over its parts: the caller's table has them all.
  auto find = [&](const std::string& name) -> const TensorView* {
    if (!tensors) return g.find(name);
    auto it = tensors->find(name);
    return it == tensors->end() ? nullptr : &it->second;
  };
  ModelConfig c;
  c.arch_name = g.get_string("general.architecture");
  c.arch = parse_arch(c.arch_name, g.path());
  const std::string a = c.arch_name + ".";
  c.name = g.find_string("general.name").value_or(std::filesystem::path(g.path()).stem().string());

  c.hidden_size = to_u32(g, a + "embedding_length", g.get_uint(a + "embedding_length"));
  c.num_hidden_layers = to_u32(g, a + "block_count", g.get_uint(a + "block_count"));
  const bool qwen35 = c.arch == Arch::Qwen35 || c.arch == Arch::Qwen35Moe;
  // llama.cpp's qwen35moe has no dense FFN and its converter may write no feed_forward_length:
  // the shared expert's width stands in, as in hf_config.cpp.
  const uint64_t shared = g.get_uint(a + "expert_shared_feed_forward_length", 0);
  c.intermediate_size = uniform_u32(g, a + "feed_forward_length", c.arch == Arch::Qwen35Moe ? std::optional(shared) : std::nullopt);
  c.num_attention_heads = uniform_u32(g, a + "attention.head_count", {});
  c.num_key_value_heads = uniform_u32(g, a + "attention.head_count_kv", c.num_attention_heads);
  if (c.num_attention_heads == 0)
    throw ModelError(g.path() + ": key '" + a + "attention.head_count': expected > 0, got 0");
  c.head_dim = to_u32(g, a + "attention.key_length",
                      g.get_uint(a + "attention.key_length", c.hidden_size / c.num_attention_heads));
  const uint64_t value_length = g.get_uint(a + "attention.value_length", c.head_dim);
  if (value_length != c.head_dim)
    throw ModelError(g.path() + ": key '" + a + "attention.value_length': expected " + std::to_string(c.head_dim) +
                     " (= key_length), got " + std::to_string(value_length));
  c.rotary_dim = to_u32(g, a + "rope.dimension_count", g.get_uint(a + "rope.dimension_count", c.head_dim));
  c.rope_theta = float(g.get_float(a + "rope.freq_base", 10000.0));
  c.rms_norm_eps = float(g.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  c.max_position_embeddings = to_u32(g, a + "context_length", g.get_uint(a + "context_length", 2048));
  // llama.cpp's converter permutes Q/K rows of `llama` so that adjacent-pair RoPE applies; the
  // other architectures keep HF's layout and rotate halves.
  c.rope_style = c.arch == Arch::Llama ? RopeStyle::Normal : RopeStyle::Neox;
  c.qk_norm = c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe || qwen35;
  c.tie_word_embeddings = find("output.weight") == nullptr;
  c.attn_bias = find("blk.0.attn_q.bias") != nullptr;

  // RoPE scaling. Llama 3 carries its factors as a tensor; Phi-3 longrope as two tensors plus an
  // attention factor. Linear/YaRN scaling would change positions silently: refuse it.
  const std::string scaling = g.find_string(a + "rope.scaling.type").value_or("none");
  const double scale_factor = g.get_float(a + "rope.scaling.factor", 1.0);
  if (scaling != "none" && !(scaling == "linear" && scale_factor == 1.0) && scaling != "longrope")
    throw ModelError(g.path() + ": key '" + a + "rope.scaling.type': '" + scaling +
                     "' RoPE scaling is not supported (supported: none, llama3 factors, Phi-3 longrope)");
  if (const TensorView* t = find("rope_freqs.weight")) c.rope_freq_factors = tensor_as_floats(g, *t);
  if (const TensorView* t = find("rope_factors_short.weight")) c.rope_freq_factors = tensor_as_floats(g, *t);
  if (const TensorView* t = find("rope_factors_long.weight")) c.rope_freq_factors_long = tensor_as_floats(g, *t);
  c.rope_attn_factor = float(g.get_float(a + "rope.scaling.attn_factor", 1.0));
  c.rope_original_context = to_u32(g, a + "rope.scaling.original_context_length",
                                   g.get_uint(a + "rope.scaling.original_context_length", 0));

  // Embedding models say how their states pool (llama.cpp's numbering: 0 none, 1 mean, 2 cls, 3 last,
  // 4 rank). None and rank are not embeddings of a text: left unset, as for a model that names none.
  switch (g.get_uint(a + "pooling_type", 0)) {
    case 1: c.pooling = Pooling::Mean; break;
    case 2: c.pooling = Pooling::Cls; break;
    case 3: c.pooling = Pooling::Last; break;
    default: break;
  }

  // Token ids; -1 / absent when the file has none.
  c.bos_token_id = int32_t(g.get_int("tokenizer.ggml.bos_token_id", -1));
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    const int64_t id = g.get_int(key, -1);
    if (id >= 0 && std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end())
      c.eos_token_ids.push_back(int32_t(id));
  }
  if (const TensorView* t = find("token_embd.weight")) c.vocab_size = uint32_t(t->rows());

  // Mixture of experts (llama.cpp's qwen3moe): the layers with a router are sparse. llama.cpp
  // renormalises Qwen3-MoE's top-k weights always (its converter writes no key for it).
  if (c.arch == Arch::Qwen3Moe) {
    c.num_experts = to_u32(g, a + "expert_count", g.get_uint(a + "expert_count"));
    c.num_experts_per_tok = to_u32(g, a + "expert_used_count", g.get_uint(a + "expert_used_count"));
    c.moe_intermediate_size = to_u32(g, a + "expert_feed_forward_length", g.get_uint(a + "expert_feed_forward_length"));
    c.norm_topk_prob = true;
    c.layer_kinds.resize(c.num_hidden_layers);
    for (uint32_t l = 0; l < c.num_hidden_layers; l++)
      if (find(layer_tensor(l, "ffn_gate_inp"))) c.layer_kinds[l].ffn = Ffn::Moe;
  }
  if (qwen35) qwen35_from_gguf(g, shared, &c);
  return c;
}

}  // namespace ztvm
