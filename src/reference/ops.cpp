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

}  // namespace ztvm::ref
