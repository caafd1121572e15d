// The model's weights on the GPU. Matrices stay in their file encoding (GGUF blocks, some rearranged
// on upload: gpu_layout.h; HF F32/F16/BF16) and are split into row parts when a buffer would exceed
// the device's binding limit (lavapipe: 128 MiB) or when concatenated tensors differ in type; norms
// and biases become f32.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "model/model_file.h"

namespace ztvm {

// Rows [row0, row0 + rows) of a matrix in one buffer. For a gated (gate|up) matrix a part holds
// gate rows [row0, row0+rows) followed by the same up rows.
struct MatrixPart {
  gpu::Buffer buf;
  GgmlType type;
  uint32_t row0 = 0, rows = 0;
};

struct Matrix {
  uint32_t rows = 0, cols = 0;  // rows: per half when gated
  bool gated = false;
  std::vector<MatrixPart> parts;
  uint64_t bytes() const;  // weight bytes one pass reads
};

// A sparse layer's experts, each in its file encoding, stacked in one buffer per kind so that a
// matvec picks its expert by row offset (matvec_moe.wgsl): gate_up holds expert e's gate rows then
// its up rows at rows [2 e ff, 2 (e + 1) ff), down expert e's d rows at [e d, (e + 1) d).
struct Experts {
  Matrix router;  // ffn_gate_inp [experts, hidden]
  gpu::Buffer gate_up, down;
  GgmlType gate_up_type = GgmlType::F32, down_type = GgmlType::F32;
  uint32_t count = 0, ff = 0, hidden = 0;
  uint64_t bytes_per_expert() const { return (gate_up.size() + down.size()) / count; }
};

struct LayerWeights {
  gpu::Buffer attn_norm, ffn_norm;  // [hidden] f32
  Matrix qkv;                       // q, k, v rows concatenated: [(NH + 2 NKV) * HD, hidden]; DeltaNet: attn_qkv [C, hidden]
  Matrix attn_output;               // [hidden, NH * HD]; DeltaNet: ssm_out [hidden, NV * DV]
  // Gated attention: attn_q's gate rows [NH * HD, hidden] (its query rows are in qkv). Gated DeltaNet:
  // attn_gate (z) [NV * DV, hidden].
  Matrix gate;
  Matrix ssm_beta, ssm_alpha;       // DeltaNet: [NV, hidden] each
  gpu::Buffer ssm_conv1d;           // DeltaNet: [C][conv_kernel] f32, the conv's taps
  gpu::Buffer ssm_a, ssm_dt;        // DeltaNet: [NV] f32, A = -exp(A_log) and the dt bias
  gpu::Buffer ssm_norm;             // DeltaNet: [DV] f32, the gated output norm's weight
  Matrix gate_up;                   // gated: silu(gate) * up, [ffn, hidden] per half
  Matrix ffn_down;                  // [hidden, ffn]
  Experts moe;                      // sparse layers (Ffn::Moe) instead of gate_up and ffn_down
  // Qwen3.5-MoE's shared expert: gated [shexp ff, hidden] per half, down [hidden, shexp ff], and its
  // gate's one row [1, hidden] (ffn_gate_inp_shexp).
  Matrix shexp_gate_up, shexp_down, shexp_gate;
  gpu::Buffer aux;                  // [q_norm HD | k_norm HD | qkv bias] f32 (ones/zeros when absent)
};

struct Weights {
  Matrix token_embd;  // [vocab, hidden]
  Matrix output;      // LM head [vocab, hidden]; tied models upload token_embd again only if needed
  bool output_is_embd = false;  // tied embeddings: the LM head is token_embd
  const Matrix& lm_head() const { return output_is_embd ? token_embd : output; }
  gpu::Buffer output_norm;
  std::vector<LayerWeights> layers;
  uint32_t experts_per_token = 0;    // sparse layers: the experts one token reads
  uint64_t bytes_per_token() const;  // weight bytes read by one decode step
};

// One matrix from the row-concatenation of `views` (same column count); parts as the device needs.
Matrix upload_matrix(gpu::Device& dev, const std::string& label, const std::vector<const TensorView*>& views);
// A gated gate|up matrix for the fused FFN matmul.
Matrix upload_gated(gpu::Device& dev, const std::string& label, const TensorView& gate, const TensorView& up);

// A sparse layer's experts (views of expert 0, 1, ... of one role each) with its router.
using ExpertViews = std::vector<const TensorView*>;
Experts upload_experts(gpu::Device& dev, const std::string& label, const TensorView& router, const ExpertViews& gate,
                       const ExpertViews& up, const ExpertViews& down);

// Uploads every tensor the forward pass needs. `progress(done, total)` is called as bytes go up.
std::unique_ptr<Weights> upload_weights(gpu::Device& dev, const ModelFile& model,
                                        const std::function<void(uint64_t, uint64_t)>& progress = {});

}  // namespace ztvm
