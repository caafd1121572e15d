#include "reference/model.h"

#include "reference/ops.h"

#include "engine/gpu_layout.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ztvm::ref {

static WeightRef weight(const ModelFile& m, const std::string& name) {
  const TensorView& t = m.get(name);
  return WeightRef{t.type, t.data, (uint32_t)t.rows(), (uint32_t)t.cols()};
}

static std::vector<float> vec(const ModelFile& m, const std::string& name) {
  return weight(m, name).row(0);
}

// Every element of a tensor, rows after rows.
static std::vector<float> all_of(const ModelFile& m, const std::string& name) {
  const WeightRef w = weight(m, name);
  std::vector<float> out;
  for (uint32_t r = 0; r < w.rows; r++) {
    const std::vector<float> row = w.row(r);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

// int8_x: the GPU's short passes read a quantized matrix's input as int8 units.
static std::vector<float> twin_matmul(const WeightRef& w, const std::vector<float>& x, bool int8_x) {
  const bool q8 = int8_x && w.cols % 32 == 0 && int8_dot_type(w.type);
  return ref::matmul(w, q8 ? quantize_q8(x) : x);
}

namespace {

// One pass over T tokens at positions state.pos.. : a method per block kind, each taking the
// normed input xb [T, hidden] and returning the block's output, to be added to the residual.
class Pass {
 public:
  Pass(const ModelFile& m, State& st, bool gpu_twin) : m_(m), c_(m.config), st_(st), gpu_twin_(gpu_twin) {}

  std::vector<float> matmul(const std::string& name, const std::vector<float>& x) const {
    return twin_matmul(weight(m_, name), x, gpu_twin_);
  }
  // silu(gate x) * (up x)
  std::vector<float> gated(const std::string& gate, const std::string& up, const std::vector<float>& x) const {
    std::vector<float> g = matmul(gate, x), u = matmul(up, x);
    for (size_t i = 0; i < g.size(); i++) g[i] = (float)(g[i] / (1.0 + std::exp(-(double)g[i])) * u[i]);
    return g;
  }

  // Softmax attention over this and the earlier tokens; gated (Qwen3.5): attn_q emits each head's
  // query and gate, and the output is att * sigmoid(gate).
  std::vector<float> attention(uint32_t l, const std::vector<float>& xb, bool gated_out) {
    const uint32_t T = tokens(xb), hd = c_.head_dim, nh = c_.num_attention_heads, nkv = c_.num_key_value_heads;
    const uint32_t qkvw = (nh + 2 * nkv) * hd;
    const AttnShape s{hd, nh, nkv, c_.rotary_dim, c_.rope_style == RopeStyle::Neox, c_.qk_norm, c_.rms_norm_eps};
    std::vector<float> q = matmul(layer_tensor(l, "attn_q"), xb), gate;
    if (gated_out) split_q_gate(std::vector<float>(q), nh, hd, &q, &gate);
    const std::vector<float> k = matmul(layer_tensor(l, "attn_k"), xb), v = matmul(layer_tensor(l, "attn_v"), xb);
    std::vector<float> aux(2 * hd + qkvw, 0.f);
    std::fill(aux.begin(), aux.begin() + 2 * hd, 1.f);
    auto put = [&](const std::string& name, size_t at) {
      if (!m_.find(name)) return;
      std::vector<float> w = vec(m_, name);
      std::copy(w.begin(), w.end(), aux.begin() + at);
    };
    put(layer_tensor(l, "attn_q_norm"), 0);
    put(layer_tensor(l, "attn_k_norm"), hd);
    put(layer_tensor(l, "attn_q", "bias"), 2 * hd);
    put(layer_tensor(l, "attn_k", "bias"), 2 * hd + nh * hd);
    put(layer_tensor(l, "attn_v", "bias"), 2 * hd + (nh + nkv) * hd);
    LayerState& ls = st_.layers[l];
    std::vector<float> att;
    for (uint32_t t = 0; t < T; t++) {
      const uint32_t pos = st_.pos + t;
      std::vector<float> row(qkvw);  // [q | k | v] as the GPU's fused QKV lays it out
      std::copy(&q[t * nh * hd], &q[(t + 1) * nh * hd], row.begin());
      std::copy(&k[t * nkv * hd], &k[(t + 1) * nkv * hd], row.begin() + nh * hd);
      std::copy(&v[t * nkv * hd], &v[(t + 1) * nkv * hd], row.begin() + (nh + nkv) * hd);
      rope_qkv(row.data(), aux, c_.attn_bias, s, pos, c_.rope_theta, c_.rope_freq_factors);
      if (gpu_twin_) round_to_f16(row.data() + nh * hd, 2 * nkv * hd);  // k and v as the KV cache keeps them
      ls.keys.insert(ls.keys.end(), row.begin() + nh * hd, row.begin() + (nh + nkv) * hd);
      ls.values.insert(ls.values.end(), row.begin() + (nh + nkv) * hd, row.end());
      std::vector<float> o = ref::attention(row.data(), ls.keys, ls.values, pos, s);
      att.insert(att.end(), o.begin(), o.end());
    }
    if (gated_out) sigmoid_gate(att, gate);
    return matmul(layer_tensor(l, "attn_output"), att);
  }

  // Gated DeltaNet: conv1d + SiLU over q|k|v, the gated delta rule token by token (the state carried
  // in st_), the gated RMSNorm with z, the output projection.
  std::vector<float> deltanet(uint32_t l, const std::vector<float>& xb) {
    const DeltaShape s{c_.linear_num_key_heads, c_.linear_key_head_dim, c_.linear_num_value_heads,
                       c_.linear_value_head_dim, c_.linear_v_heads_tiled};
    const uint32_t T = tokens(xb), C = s.channels(), vd = s.nv * s.dv;
    const std::vector<float> qkv = matmul(layer_tensor(l, "attn_qkv"), xb);  // [T, C]
    const std::vector<float> z = matmul(layer_tensor(l, "attn_gate"), xb);   // [T, vd]
    const std::vector<float> b = matmul(layer_tensor(l, "ssm_beta"), xb);    // [T, nv]
    const std::vector<float> a = matmul(layer_tensor(l, "ssm_alpha"), xb);   // [T, nv]
    LayerState& ls = st_.layers[l];
    const std::vector<float> conv =
        causal_conv1d(qkv, all_of(m_, layer_tensor(l, "ssm_conv1d")), C, c_.linear_conv_kernel_dim, &ls.conv);
    const std::vector<float> A = vec(m_, layer_tensor(l, "ssm_a", "")), dt = vec(m_, layer_tensor(l, "ssm_dt", "bias"));
    ls.ssm.resize((size_t)s.nv * s.dk * s.dv, 0.f);
    std::vector<float> o((size_t)T * vd), g(s.nv), beta(s.nv);
    for (uint32_t t = 0; t < T; t++) {
      deltanet_gates(&a[t * s.nv], &b[t * s.nv], A, dt, s.nv, g.data(), beta.data());
      gated_delta_rule_step(&conv[(size_t)t * C], g.data(), beta.data(), ls.ssm.data(), &o[(size_t)t * vd], s);
    }
    o = gated_rmsnorm(o, z, vec(m_, layer_tensor(l, "ssm_norm")), s.dv, c_.rms_norm_eps);  // per value head
    return matmul(layer_tensor(l, "ssm_out"), o);
  }

  std::vector<float> dense_ffn(uint32_t l, const std::vector<float>& xb) const {
    return matmul(layer_tensor(l, "ffn_down"), gated(layer_tensor(l, "ffn_gate"), layer_tensor(l, "ffn_up"), xb));
  }

  // A sparse FFN: per token, the router's softmax over the experts, the num_experts_per_tok most
  // likely (ties: the lower index), their weights renormalised over those (norm_topk_prob), and the
  // sum of those experts' FFNs so weighted; plus a shared expert's FFN * sigmoid(its gate . x).
  std::vector<float> moe_ffn(uint32_t l, const std::vector<float>& xb) const {
    const uint32_t d = c_.hidden_size, E = c_.num_experts, K = c_.num_experts_per_tok, n = tokens(xb);
    const std::vector<float> logits = matmul(layer_tensor(l, "ffn_gate_inp"), xb);  // [n, E]
    std::vector<float> out(xb.size(), 0.f);
    for (uint32_t t = 0; t < n; t++) {
      const Route r = moe_route(&logits[(size_t)t * E], E, K, c_.norm_topk_prob);
      const std::vector<float> x_t(xb.begin() + (size_t)t * d, xb.begin() + (size_t)(t + 1) * d);
      for (uint32_t j = 0; j < K; j++) {
        const uint32_t e = r.ids[j];
        const std::vector<float> h = gated(expert_tensor(l, "ffn_gate", e), expert_tensor(l, "ffn_up", e), x_t);
        const std::vector<float> y = matmul(expert_tensor(l, "ffn_down", e), h);
        for (uint32_t i = 0; i < d; i++) out[(size_t)t * d + i] += (float)(r.weights[j] * y[i]);
      }
    }
    if (c_.shared_expert_intermediate_size == 0) return out;
    const std::vector<float> y = matmul(layer_tensor(l, "ffn_down_shexp"),
                                        gated(layer_tensor(l, "ffn_gate_shexp"), layer_tensor(l, "ffn_up_shexp"), xb));
    const std::vector<float> gate = matmul(layer_tensor(l, "ffn_gate_inp_shexp"), xb);  // [n, 1]
    for (uint32_t t = 0; t < n; t++) {
      const double s = 1.0 / (1.0 + std::exp(-(double)gate[t]));
      for (uint32_t i = 0; i < d; i++) out[(size_t)t * d + i] += (float)(s * y[(size_t)t * d + i]);
    }
    return out;
  }

 private:
  uint32_t tokens(const std::vector<float>& xb) const { return (uint32_t)(xb.size() / c_.hidden_size); }
  const ModelFile& m_;
  const ModelConfig& c_;
  State& st_;
  bool gpu_twin_;
};

}  // namespace

std::vector<float> forward_hidden(const ModelFile& m, const std::vector<int32_t>& ids, State& state, bool gpu_twin) {
  const ModelConfig& c = m.config;
  const uint32_t d = c.hidden_size;
  state.layers.resize(c.num_hidden_layers);
  Pass pass(m, state, gpu_twin);
  std::vector<float> x = embed(weight(m, "token_embd.weight"), ids);
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) {
    std::vector<float> xb = rmsnorm(x, vec(m, layer_tensor(l, "attn_norm")), d, c.rms_norm_eps);
    const LayerKind kind = c.layer(l);
    std::vector<float> proj = kind.mixer == Mixer::GatedDeltaNet ? pass.deltanet(l, xb)
                                                                 : pass.attention(l, xb, kind.mixer == Mixer::GatedAttention);
    for (size_t i = 0; i < x.size(); i++) x[i] += proj[i];
    xb = rmsnorm(x, vec(m, layer_tensor(l, "ffn_norm")), d, c.rms_norm_eps);
    proj = kind.ffn == Ffn::Moe ? pass.moe_ffn(l, xb) : pass.dense_ffn(l, xb);
    for (size_t i = 0; i < x.size(); i++) x[i] += proj[i];
  }
  state.pos += (uint32_t)ids.size();
  return rmsnorm(x, vec(m, "output_norm.weight"), d, c.rms_norm_eps);
}

std::vector<float> forward_logits(const ModelFile& m, const std::vector<int32_t>& ids, State& state, bool gpu_twin) {
  return twin_matmul(weight(m, m.find("output.weight") ? "output.weight" : "token_embd.weight"),
                     forward_hidden(m, ids, state, gpu_twin), gpu_twin);
}

std::vector<float> forward_hidden(const ModelFile& m, const std::vector<int32_t>& ids, bool gpu_twin) {
  State fresh;
  return forward_hidden(m, ids, fresh, gpu_twin);
}

std::vector<float> forward_logits(const ModelFile& m, const std::vector<int32_t>& ids, bool gpu_twin) {
  State fresh;
  return forward_logits(m, ids, fresh, gpu_twin);
}

}  // namespace ztvm::ref
