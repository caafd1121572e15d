// CPU twins of the GPU kernels: plain loops over the same layouts, in double accumulators.
// Tests compare every kernel against these, and reference/model.cpp builds a whole forward pass from them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/quant.h"

namespace ztvm::ref {

// A matrix in its file encoding: rows x cols elements of `type`, rows contiguous.
struct WeightRef {
  GgmlType type;
  const uint8_t* data;
  uint32_t rows, cols;
  std::vector<float> row(uint32_t r) const;  // dequantized
};

// x[t] = table[ids[t]]
std::vector<float> embed(const WeightRef& table, const std::vector<int32_t>& ids);
// y[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w, for rows of width d
std::vector<float> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, uint32_t d, float eps);
// y[t, r] = W[r] . x[t]  (y is [T, W.rows])
std::vector<float> matmul(const WeightRef& w, const std::vector<float>& x);
// x as the decode matvec sees it on quantized weights (quantize_q8.wgsl): per 32 elements,
// d = max|x| / 127 and x ~ d * round(x / d). Returns d * q (x.size() % 32 == 0).
std::vector<float> quantize_q8(const std::vector<float>& x);
// Each value through f16 and back (round to nearest even), as the KV cache stores keys and values.
void round_to_f16(float* x, size_t n);
// h[t, r] = silu(gate[r] . x[t]) * (up[r] . x[t])
std::vector<float> gated_matmul(const WeightRef& gate, const WeightRef& up, const std::vector<float>& x);

struct AttnShape {
  uint32_t hd, nh, nkv, rot;
  bool neox;
  bool qk_norm;
  float eps;
};
// In place on one token's qkv row [(nh + 2 nkv) * hd]: bias, QK-norm, RoPE at position pos.
// aux = [q_norm hd | k_norm hd | bias]; freq_factors may be empty.
void rope_qkv(float* qkv, const std::vector<float>& aux, bool has_bias, const AttnShape& s, uint32_t pos,
              float theta, const std::vector<float>& freq_factors);
// Causal attention of one token at position pos over keys/values [0, pos] ([pos+1][nkv*hd] each).
std::vector<float> attention(const float* q, const std::vector<float>& keys, const std::vector<float>& values,
                             uint32_t pos, const AttnShape& s);
// A mixture-of-experts router on one token's logits over E experts: the k most likely experts (ties:
// the lower index) and their softmax weights, renormalised over the k when norm_topk.
struct Route {
  std::vector<uint32_t> ids;
  std::vector<double> weights;
};
Route moe_route(const float* logits, uint32_t E, uint32_t k, bool norm_topk);
// Index of the largest value, lowest on ties.
uint32_t argmax(const float* x, uint32_t n);

}  // namespace ztvm::ref
