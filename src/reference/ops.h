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
// Gated attention (Qwen3.5): attn_q emits per head its query, then its gate: q_full [T][nh][2 hd]
// -> q [T][nh * hd] and gate [T][nh * hd]. The attention output is then gated: att *= sigmoid(gate).
void split_q_gate(const std::vector<float>& q_full, uint32_t nh, uint32_t hd, std::vector<float>* q,
                  std::vector<float>* gate);
void sigmoid_gate(std::vector<float>& att, const std::vector<float>& gate);

// Gated DeltaNet (Qwen3.5; transformers' Qwen3_5GatedDeltaNet). The shapes: nk key heads of dk (q
// and k), nv value heads of dv; value head h reads key head h % nk when tiled (llama.cpp's order),
// else h / (nv / nk) (HF's).
struct DeltaShape {
  uint32_t nk, dk, nv, dv;
  bool tiled;
  uint32_t key_head(uint32_t h) const { return tiled ? h % nk : h / (nv / nk); }
  uint32_t channels() const { return 2 * nk * dk + nv * dv; }  // the conv's q | k | v
};
// Causal depthwise conv1d + SiLU over x [T][C] with taps w [C][K] (ssm_conv1d's rows):
// y[t][c] = silu(sum_j w[c][j] x[t - (K - 1) + j][c]). The inputs before x[0] come from *state
// ([K - 1][C], oldest first; zeros at the start), which is left holding the last K - 1 inputs.
std::vector<float> causal_conv1d(const std::vector<float>& x, const std::vector<float>& w, uint32_t channels,
                                 uint32_t kernel, std::vector<float>* state);
// One token's per-value-head decay and write strength from its a (ssm_alpha x) and b (ssm_beta x):
// g = A * softplus(a + dt_bias) (A = -exp(A_log) < 0, so exp(g) in (0, 1)), beta = sigmoid(b).
void deltanet_gates(const float* a, const float* b, const std::vector<float>& A, const std::vector<float>& dt_bias,
                    uint32_t nv, float* g, float* beta);
// One token of the gated delta rule, as torch_recurrent_gated_delta_rule with q/k L2-normalised:
// qkv is the conv's output row; per value head h, with q, k its key head's rows L2-normalised (eps
// 1e-6) and q / sqrt(dk), and S = state[h] ([dk][dv]):
//   S *= exp(g[h]);  delta = (v - S^T k) * beta[h];  S += k delta^T;  out[h] = S^T q.
// state [nv][dk][dv] is read and updated in place; out is [nv * dv].
void gated_delta_rule_step(const float* qkv, const float* g, const float* beta, float* state, float* out,
                           const DeltaShape& s);
// The DeltaNet's output norm, per row of width d: y = x / sqrt(mean(x^2) + eps) * w * silu(z).
std::vector<float> gated_rmsnorm(const std::vector<float>& x, const std::vector<float>& z, const std::vector<float>& w,
                                 uint32_t d, float eps);

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
