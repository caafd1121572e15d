#include "reference/ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ztvm::ref {

std::vector<float> WeightRef::row(uint32_t r) const {
  std::vector<float> out(cols);
  dequantize_row(type, data + r * row_bytes(type, cols), out.data(), cols);
  return out;
}

std::vector<float> embed(const WeightRef& table, const std::vector<int32_t>& ids) {
  std::vector<float> x;
  for (int32_t id : ids) {
    std::vector<float> r = table.row((uint32_t)id);
    x.insert(x.end(), r.begin(), r.end());
  }
  return x;
}

std::vector<float> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, uint32_t d, float eps) {
  std::vector<float> y(x.size());
  for (size_t t = 0; t < x.size() / d; t++) {
    double ss = 0;
    for (uint32_t i = 0; i < d; i++) ss += (double)x[t * d + i] * x[t * d + i];
    double inv = 1.0 / std::sqrt(ss / d + eps);
    for (uint32_t i = 0; i < d; i++) y[t * d + i] = (float)(x[t * d + i] * inv * w[i]);
  }
  return y;
}

static double dot(const std::vector<float>& a, const float* b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); i++) s += (double)a[i] * b[i];
  return s;
}

std::vector<float> matmul(const WeightRef& w, const std::vector<float>& x) {
  const size_t T = x.size() / w.cols;
  std::vector<float> y(T * w.rows);
  for (uint32_t r = 0; r < w.rows; r++) {
    std::vector<float> row = w.row(r);
    for (size_t t = 0; t < T; t++) y[t * w.rows + r] = (float)dot(row, &x[t * w.cols]);
  }
  return y;
}

std::vector<float> quantize_q8(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b + 32 <= x.size(); b += 32) {
    float amax = 0.f;
    for (size_t i = 0; i < 32; i++) amax = std::max(amax, std::fabs(x[b + i]));
    const float inv = amax > 0.f ? 127.f / amax : 0.f, d = amax / 127.f;
    for (size_t i = 0; i < 32; i++) out[b + i] = d * std::nearbyint(x[b + i] * inv);
  }
  return out;
}

void round_to_f16(float* x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = f16_to_f32(f32_to_f16(x[i]));
}

std::vector<float> gated_matmul(const WeightRef& gate, const WeightRef& up, const std::vector<float>& x) {
  std::vector<float> g = matmul(gate, x), u = matmul(up, x);
  for (size_t i = 0; i < g.size(); i++) g[i] = (float)(g[i] / (1.0 + std::exp(-(double)g[i])) * u[i]);
  return g;
}

void rope_qkv(float* qkv, const std::vector<float>& aux, bool has_bias, const AttnShape& s, uint32_t pos, float theta,
              const std::vector<float>& freq_factors) {
  const uint32_t heads = s.nh + 2 * s.nkv;
  for (uint32_t h = 0; h < heads; h++) {
    float* v = qkv + h * s.hd;
    if (has_bias)
      for (uint32_t d = 0; d < s.hd; d++) v[d] += aux[2 * s.hd + h * s.hd + d];
    if (h >= s.nh + s.nkv) continue;  // values are not rotated
    if (s.qk_norm) {
      double ss = 0;
      for (uint32_t d = 0; d < s.hd; d++) ss += (double)v[d] * v[d];
      double inv = 1.0 / std::sqrt(ss / s.hd + s.eps);
      const float* w = aux.data() + (h < s.nh ? 0 : s.hd);
      for (uint32_t d = 0; d < s.hd; d++) v[d] = (float)(v[d] * inv * w[d]);
    }
    const uint32_t half = s.rot / 2;
    for (uint32_t i = 0; i < half; i++) {
      double inv_freq = std::pow((double)theta, -2.0 * i / s.rot);
      if (!freq_factors.empty()) inv_freq /= freq_factors[i];
      double c = std::cos(pos * inv_freq), sn = std::sin(pos * inv_freq);
      uint32_t ia = s.neox ? i : 2 * i, ib = s.neox ? i + half : 2 * i + 1;
      double a = v[ia], b = v[ib];
      v[ia] = (float)(a * c - b * sn);
      v[ib] = (float)(a * sn + b * c);
    }
  }
}

std::vector<float> attention(const float* q, const std::vector<float>& keys, const std::vector<float>& values,
                             uint32_t pos, const AttnShape& s) {
  std::vector<float> out((size_t)s.nh * s.hd);
  const uint32_t kvw = s.nkv * s.hd;
  for (uint32_t h = 0; h < s.nh; h++) {
    const uint32_t kvh = h / (s.nh / s.nkv);
    std::vector<double> score(pos + 1);
    double mx = -1e300;
    for (uint32_t p = 0; p <= pos; p++) {
      double d = 0;
      for (uint32_t i = 0; i < s.hd; i++) d += (double)q[h * s.hd + i] * keys[p * kvw + kvh * s.hd + i];
      score[p] = d / std::sqrt((double)s.hd);
      mx = std::max(mx, score[p]);
    }
    double sum = 0;
    for (auto& e : score) sum += (e = std::exp(e - mx));
    for (uint32_t i = 0; i < s.hd; i++) {
      double acc = 0;
      for (uint32_t p = 0; p <= pos; p++) acc += score[p] * values[p * kvw + kvh * s.hd + i];
      out[h * s.hd + i] = (float)(acc / sum);
    }
  }
  return out;
}

uint32_t argmax(const float* x, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

Route moe_route(const float* z, uint32_t E, uint32_t k, bool norm_topk) {
  const double top = *std::max_element(z, z + E);
  std::vector<double> p(E);
  double sum = 0;
  for (uint32_t e = 0; e < E; e++) sum += p[e] = std::exp(z[e] - top);
  std::vector<uint32_t> order(E);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return p[a] > p[b]; });
  Route r;
  r.ids.assign(order.begin(), order.begin() + k);
  double chosen = 0;
  for (uint32_t e : r.ids) chosen += p[e];
  for (uint32_t e : r.ids) r.weights.push_back(p[e] / (norm_topk ? chosen : sum));
  return r;
}

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
static double silu(double x) { return x * sigmoid(x); }

void split_q_gate(const std::vector<float>& q_full, uint32_t nh, uint32_t hd, std::vector<float>* q,
                  std::vector<float>* gate) {
  q->clear(), gate->clear();
  for (size_t at = 0; at < q_full.size(); at += 2 * hd) {  // one head of one token: hd query, hd gate
    q->insert(q->end(), q_full.begin() + at, q_full.begin() + at + hd);
    gate->insert(gate->end(), q_full.begin() + at + hd, q_full.begin() + at + 2 * hd);
  }
}

void sigmoid_gate(std::vector<float>& att, const std::vector<float>& gate) {
  for (size_t i = 0; i < att.size(); i++) att[i] = (float)(att[i] * sigmoid(gate[i]));
}

std::vector<float> causal_conv1d(const std::vector<float>& x, const std::vector<float>& w, uint32_t channels,
                                 uint32_t kernel, std::vector<float>* state) {
  const size_t T = x.size() / channels, past = kernel - 1;
  state->resize(past * channels, 0.f);
  std::vector<float> in(*state);  // [past + T][C]: the remembered inputs, then these
  in.insert(in.end(), x.begin(), x.end());
  std::vector<float> y(x.size());
  for (size_t t = 0; t < T; t++)
    for (uint32_t c = 0; c < channels; c++) {
      double acc = 0;
      for (uint32_t j = 0; j < kernel; j++) acc += (double)w[(size_t)c * kernel + j] * in[(t + j) * channels + c];
      y[t * channels + c] = (float)silu(acc);
    }
  state->assign(in.end() - (long)(past * channels), in.end());
  return y;
}

void deltanet_gates(const float* a, const float* b, const std::vector<float>& A, const std::vector<float>& dt_bias,
                    uint32_t nv, float* g, float* beta) {
  for (uint32_t h = 0; h < nv; h++) {
    const double x = (double)a[h] + dt_bias[h];
    const double softplus = x > 20 ? x : std::log1p(std::exp(x));  // torch's softplus threshold
    g[h] = (float)(A[h] * softplus);
    beta[h] = (float)sigmoid(b[h]);
  }
}

void gated_delta_rule_step(const float* qkv, const float* g, const float* beta, float* state, float* out,
                           const DeltaShape& s) {
  // L2-normalised q (also / sqrt(dk)) and k of every key head.
  std::vector<double> q(s.nk * s.dk), k(s.nk * s.dk);
  for (uint32_t kh = 0; kh < s.nk; kh++)
    for (int which = 0; which < 2; which++) {
      const float* src = qkv + (which * s.nk + kh) * s.dk;
      double ss = 0;
      for (uint32_t i = 0; i < s.dk; i++) ss += (double)src[i] * src[i];
      const double inv = 1.0 / std::sqrt(ss + 1e-6) / (which == 0 ? std::sqrt((double)s.dk) : 1.0);
      for (uint32_t i = 0; i < s.dk; i++) (which == 0 ? q : k)[kh * s.dk + i] = src[i] * inv;
    }
  const float* v_all = qkv + 2 * s.nk * s.dk;
  std::vector<double> kv(s.dv);
  for (uint32_t h = 0; h < s.nv; h++) {
    float* S = state + (size_t)h * s.dk * s.dv;  // S[i][j]: key dim i, value dim j
    const double* qh = &q[s.key_head(h) * s.dk];
    const double* kh = &k[s.key_head(h) * s.dk];
    const float* v = v_all + h * s.dv;
    const double decay = std::exp((double)g[h]);
    std::fill(kv.begin(), kv.end(), 0.0);
    for (uint32_t i = 0; i < s.dk; i++)
      for (uint32_t j = 0; j < s.dv; j++) kv[j] += (S[i * s.dv + j] *= (float)decay) * kh[i];  // (S^T k) of the decayed S
    for (uint32_t j = 0; j < s.dv; j++) kv[j] = (v[j] - kv[j]) * beta[h];                       // delta
    for (uint32_t j = 0; j < s.dv; j++) {
      double o = 0;
      for (uint32_t i = 0; i < s.dk; i++) o += (S[i * s.dv + j] += (float)(kh[i] * kv[j])) * qh[i];
      out[h * s.dv + j] = (float)o;
    }
  }
}

std::vector<float> gated_rmsnorm(const std::vector<float>& x, const std::vector<float>& z, const std::vector<float>& w,
                                 uint32_t d, float eps) {
  std::vector<float> y(x.size());
  for (size_t t = 0; t < x.size() / d; t++) {
    double ss = 0;
    for (uint32_t i = 0; i < d; i++) ss += (double)x[t * d + i] * x[t * d + i];
    const double inv = 1.0 / std::sqrt(ss / d + eps);
    for (uint32_t i = 0; i < d; i++) y[t * d + i] = (float)(x[t * d + i] * inv * w[i] * silu(z[t * d + i]));
  }
  return y;
}

}  // namespace ztvm::ref
