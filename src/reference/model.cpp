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

// int8_x: the GPU's short passes read a quantized matrix's input as int8 units.
static std::vector<float> twin_matmul(const WeightRef& w, const std::vector<float>& x, bool int8_x) {
  const bool q8 = int8_x && w.cols % 32 == 0 && int8_dot_type(w.type);
  return ref::matmul(w, q8 ? quantize_q8(x) : x);
}

std::vector<float> forward_hidden(const ModelFile& m, const std::vector<int32_t>& ids, bool gpu_twin) {
  auto matmul = [gpu_twin](const WeightRef& w, const std::vector<float>& x) { return twin_matmul(w, x, gpu_twin); };
  auto gated_matmul = [&](const WeightRef& gate, const WeightRef& up, const std::vector<float>& x) {
    std::vector<float> g = matmul(gate, x), u = matmul(up, x);
    for (size_t i = 0; i < g.size(); i++) g[i] = (float)(g[i] / (1.0 + std::exp(-(double)g[i])) * u[i]);
    return g;
  };
  const ModelConfig& c = m.config;
  // A sparse FFN: per token, the router's softmax over the experts, the num_experts_per_tok most
  // likely (ties: the lower index), their weights renormalised over those (norm_topk_prob), and the
  // sum of those experts' FFNs so weighted.
  auto moe_ffn = [&](uint32_t l, const std::vector<float>& xb) {
    const uint32_t d = c.hidden_size, E = c.num_experts, K = c.num_experts_per_tok, n = (uint32_t)(xb.size() / d);
    const std::vector<float> logits = matmul(weight(m, layer_tensor(l, "ffn_gate_inp")), xb);  // [n, E]
    std::vector<float> out(xb.size(), 0.f);
    for (uint32_t t = 0; t < n; t++) {
      const Route r = moe_route(&logits[(size_t)t * E], E, K, c.norm_topk_prob);
      const std::vector<float> x_t(xb.begin() + (size_t)t * d, xb.begin() + (size_t)(t + 1) * d);
      for (uint32_t j = 0; j < K; j++) {
        const uint32_t e = r.ids[j];
        const double w = r.weights[j];
        const std::vector<float> h = gated_matmul(weight(m, expert_tensor(l, "ffn_gate", e)),
                                                  weight(m, expert_tensor(l, "ffn_up", e)), x_t);
        const std::vector<float> y = matmul(weight(m, expert_tensor(l, "ffn_down", e)), h);
        for (uint32_t i = 0; i < d; i++) out[(size_t)t * d + i] += (float)(w * y[i]);
      }
    }
    return out;
  };
  const uint32_t T = (uint32_t)ids.size(), d = c.hidden_size, hd = c.head_dim;
  const uint32_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, qkvw = (nh + 2 * nkv) * hd;
  const AttnShape s{hd, nh, nkv, c.rotary_dim, c.rope_style == RopeStyle::Neox, c.qk_norm, c.rms_norm_eps};
  std::vector<float> x = embed(weight(m, "token_embd.weight"), ids);
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) {
    const std::string L = "blk." + std::to_string(l) + ".";
    std::vector<float> xb = rmsnorm(x, vec(m, L + "attn_norm.weight"), d, c.rms_norm_eps);
    std::vector<float> q = matmul(weight(m, L + "attn_q.weight"), xb);
    std::vector<float> k = matmul(weight(m, L + "attn_k.weight"), xb);
    std::vector<float> v = matmul(weight(m, L + "attn_v.weight"), xb);
    std::vector<float> aux(2 * hd + qkvw, 0.f);
    std::fill(aux.begin(), aux.begin() + 2 * hd, 1.f);
    auto put = [&](const std::string& name, size_t at) {
      if (!m.find(name)) return;
      std::vector<float> v = vec(m, name);
      std::copy(v.begin(), v.end(), aux.begin() + at);
    };
    put(L + "attn_q_norm.weight", 0);
    put(L + "attn_k_norm.weight", hd);
    put(L + "attn_q.bias", 2 * hd);
    put(L + "attn_k.bias", 2 * hd + nh * hd);
    put(L + "attn_v.bias", 2 * hd + (nh + nkv) * hd);
    std::vector<float> keys, values, att;
    for (uint32_t t = 0; t < T; t++) {
      std::vector<float> row(qkvw);  // [q | k | v] as the GPU's fused QKV lays it out
      std::copy(&q[t * nh * hd], &q[(t + 1) * nh * hd], row.begin());
      std::copy(&k[t * nkv * hd], &k[(t + 1) * nkv * hd], row.begin() + nh * hd);
      std::copy(&v[t * nkv * hd], &v[(t + 1) * nkv * hd], row.begin() + (nh + nkv) * hd);
      rope_qkv(row.data(), aux, c.attn_bias, s, t, c.rope_theta, c.rope_freq_factors);
      if (gpu_twin) round_to_f16(row.data() + nh * hd, 2 * nkv * hd);  // k and v as the KV cache keeps them
      keys.insert(keys.end(), row.begin() + nh * hd, row.begin() + (nh + nkv) * hd);
      values.insert(values.end(), row.begin() + (nh + nkv) * hd, row.end());
      std::vector<float> o = attention(row.data(), keys, values, t, s);
      att.insert(att.end(), o.begin(), o.end());
    }
    std::vector<float> proj = matmul(weight(m, L + "attn_output.weight"), att);
    for (size_t i = 0; i < x.size(); i++) x[i] += proj[i];
    xb = rmsnorm(x, vec(m, L + "ffn_norm.weight"), d, c.rms_norm_eps);
    if (c.layer(l).ffn == Ffn::Moe) {
      proj = moe_ffn(l, xb);
    } else {
      std::vector<float> h = gated_matmul(weight(m, L + "ffn_gate.weight"), weight(m, L + "ffn_up.weight"), xb);
      proj = matmul(weight(m, L + "ffn_down.weight"), h);
    }
    for (size_t i = 0; i < x.size(); i++) x[i] += proj[i];
  }
  return rmsnorm(x, vec(m, "output_norm.weight"), d, c.rms_norm_eps);
}

std::vector<float> forward_logits(const ModelFile& m, const std::vector<int32_t>& ids, bool gpu_twin) {
  return twin_matmul(weight(m, m.find("output.weight") ? "output.weight" : "token_embd.weight"),
                     forward_hidden(m, ids, gpu_twin), gpu_twin);
}

}  // namespace ztvm::ref
