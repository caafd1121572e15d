// qwen35_layer_tensors and the qwen35 keys. Facts from llama.cpp's convert_hf_to_gguf.py
// (Qwen3NextModel, _LinearAttentionVReorderBase), src/models/qwen35*.cpp (the tensors it loads and
// their shapes) and llama-quant.cpp (what llama-quantize leaves alone).
#include "model/qwen35_layout.h"

#include "model/model_file.h"

namespace ztvm {

uint64_t tiled_vhead_source(uint64_t i, uint32_t nk, uint32_t nv, uint64_t head) {
  const uint64_t p = i / head, per_key = nv / nk;  // output head p = k * nk + g: key head g's k-th
  return ((p % nk) * per_key + p / nk) * head + i % head;
}

std::vector<Qwen35Tensor> qwen35_layer_tensors(const ModelConfig& c, uint32_t l) {
  const uint64_t d = c.hidden_size, nk = c.linear_num_key_heads, nv = c.linear_num_value_heads;
  const uint64_t kd = nk * c.linear_key_head_dim, dv = c.linear_value_head_dim, vd = nv * dv;
  const uint64_t q = uint64_t(c.num_attention_heads) * c.head_dim, kv = uint64_t(c.num_key_value_heads) * c.head_dim;
  std::vector<Qwen35Tensor> out;
  auto add = [&](const char* role, const char* suffix, TensorRole r, std::vector<uint64_t> ne, VHeadOrder v = {},
                 const char* source_role = nullptr) {
    Qwen35Tensor t;
    t.name = layer_tensor(l, role, suffix);
    t.source = layer_tensor(l, source_role ? source_role : role, suffix);
    t.role = r, t.ne = std::move(ne), t.vheads = v;
    t.constant = 1;
    out.push_back(std::move(t));
    return &out.back();
  };
  add("attn_norm", "weight", TensorRole::Other, {d});
  if (c.layer(l).mixer == Mixer::GatedDeltaNet) {
    // in_proj_qkv: q, k, then v rows, the conv's channels in that order; in_proj_z the output gate.
    add("attn_qkv", "weight", TensorRole::AttnQkv, {d, 2 * kd + vd}, {2 * kd, dv});
    add("attn_gate", "weight", TensorRole::Other, {d, vd}, {0, dv});
    add("ssm_conv1d", "weight", TensorRole::Unquantized, {c.linear_conv_kernel_dim, 2 * kd + vd}, {2 * kd, dv});
    add("ssm_dt", "bias", TensorRole::Other, {nv}, {0, 1})->constant = 0;
    add("ssm_a", "", TensorRole::Other, {nv}, {0, 1})->constant = -1;  // A = -exp(A_log): a decay, < 0
    add("ssm_beta", "weight", TensorRole::Other, {d, nv}, {0, 1});      // in_proj_b
    add("ssm_alpha", "weight", TensorRole::Other, {d, nv}, {0, 1});     // in_proj_a
    add("ssm_norm", "weight", TensorRole::Other, {dv});                  // one per value head dim: kept
    add("ssm_out", "weight", TensorRole::Other, {vd, d}, {0, 0, dv});    // out_proj: its columns move
  } else {
    add("attn_q", "weight", TensorRole::AttnQ, {d, 2 * q});  // each head's query rows, then its gate's
    add("attn_k", "weight", TensorRole::AttnK, {d, kv});
    add("attn_v", "weight", TensorRole::AttnV, {d, kv});
    add("attn_q_norm", "weight", TensorRole::Other, {c.head_dim});
    add("attn_k_norm", "weight", TensorRole::Other, {c.head_dim});
    add("attn_output", "weight", TensorRole::AttnOutput, {q, d});
  }
  // HF's post_attention_layernorm, the pre-FFN norm (canonically ffn_norm).
  add("post_attention_norm", "weight", TensorRole::Other, {d}, {}, "ffn_norm");
  if (c.layer(l).ffn == Ffn::Dense) {
    const uint64_t ff = c.intermediate_size;
    add("ffn_gate", "weight", TensorRole::FfnGate, {d, ff});
    add("ffn_up", "weight", TensorRole::FfnUp, {d, ff});
    add("ffn_down", "weight", TensorRole::FfnDown, {ff, d});
    return out;
  }
  // The router (F32), each role's experts stacked (gate and up apart), then the shared expert and
  // its one-row gate, which the converter keeps as HF's [1, d] and F32.
  const uint64_t fe = c.moe_intermediate_size, fs = c.shared_expert_intermediate_size, E = c.num_experts;
  add("ffn_gate_inp", "weight", TensorRole::FfnGateInp, {d, E});
  add("ffn_gate_exps", "weight", TensorRole::FfnGate, {d, fe, E})->expert_role = "ffn_gate";
  add("ffn_up_exps", "weight", TensorRole::FfnUp, {d, fe, E})->expert_role = "ffn_up";
  add("ffn_down_exps", "weight", TensorRole::FfnDown, {fe, d, E})->expert_role = "ffn_down";
  add("ffn_gate_inp_shexp", "weight", TensorRole::Unquantized, {d, 1});
  add("ffn_gate_shexp", "weight", TensorRole::FfnGate, {d, fs});
  add("ffn_up_shexp", "weight", TensorRole::FfnUp, {d, fs});
  add("ffn_down_shexp", "weight", TensorRole::FfnDown, {fs, d});
  return out;
}

std::vector<int32_t> qwen35_rope_sections(uint32_t rotary_dim) {
  const int32_t n = int32_t(rotary_dim / 2);
  return {(n + 2) / 3, (n + 1) / 3, n / 3, 0};
}

uint32_t qwen35_full_attention_interval(const ModelConfig& c) {
  uint32_t every = 0;
  for (uint32_t l = 0; l < c.num_hidden_layers && !every; l++)
    if (c.layer(l).mixer != Mixer::GatedDeltaNet) every = l + 1;
  if (!every) return c.num_hidden_layers + 1;  // all DeltaNet (synth --layers): an interval past the last
  for (uint32_t l = 0; l < c.num_hidden_layers; l++)
    if ((c.layer(l).mixer == Mixer::GatedDeltaNet) != ((l + 1) % every != 0)) return 0;
  return every;
}

void write_qwen35_metadata(GgufWriter& w, const ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  // Qwen3NextModel's names for the DeltaNet's shapes.
  w.set_u32(a + "ssm.conv_kernel", c.linear_conv_kernel_dim);
  w.set_u32(a + "ssm.state_size", c.linear_key_head_dim);
  w.set_u32(a + "ssm.group_count", c.linear_num_key_heads);
  w.set_u32(a + "ssm.time_step_rank", c.linear_num_value_heads);
  w.set_u32(a + "ssm.inner_size", c.linear_num_value_heads * c.linear_value_head_dim);
  // The converter writes config.json's full_attention_interval (default 4); llama.cpp prefers a
  // per-layer attention.recurrent_layers, for layers no interval describes.
  if (const uint32_t every = qwen35_full_attention_interval(c)) {
    w.set_u32(a + "full_attention_interval", every);
  } else {
    std::vector<int64_t> recurrent;
    for (uint32_t l = 0; l < c.num_hidden_layers; l++) recurrent.push_back(c.layer(l).mixer == Mixer::GatedDeltaNet);
    w.set(a + "attention.recurrent_layers", GgufValue::of_ints(GgufValueType::Bool, recurrent));
  }
  const std::vector<int32_t> sections = qwen35_rope_sections(c.rotary_dim);
  w.set_i32_array(a + "rope.dimension_sections", sections);
  if (c.shared_expert_intermediate_size)
    w.set_u32(a + "expert_shared_feed_forward_length", c.shared_expert_intermediate_size);
}

}  // namespace ztvm
