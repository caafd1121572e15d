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

struct LayerWeights {
  gpu::Buffer attn_norm, ffn_norm;  // [hidden] f32
  Matrix qkv;                       // q, k, v rows concatenated: [(NH + 2 NKV) * HD, hidden]
  Matrix attn_output;               // [hidden, NH * HD]
  Matrix gate_up;                   // gated: silu(gate) * up, [ffn, hidden] per half
  Matrix ffn_down;                  // [hidden, ffn]
  gpu::Buffer aux;                  // [q_norm HD | k_norm HD | qkv bias] f32 (ones/zeros when absent)
};

struct Weights {
  Matrix token_embd;  // [vocab, hidden]
  Matrix output;      // LM head [vocab, hidden]; tied models upload token_embd again only if needed
  bool output_is_embd = false;  // tied embeddings: the LM head is token_embd
  const Matrix& lm_head() const { return output_is_embd ? token_embd : output; }
  gpu::Buffer output_norm;
  std::vector<LayerWeights> layers;
  uint64_t bytes_per_token() const;  // weight bytes read by one decode step
};

// One matrix from the row-concatenation of `views` (same column count); parts as the device needs.
Matrix upload_matrix(gpu::Device& dev, const std::string& label, const std::vector<const TensorView*>& views);
// A gated gate|up matrix for the fused FFN matmul.
Matrix upload_gated(gpu::Device& dev, const std::string& label, const TensorView& gate, const TensorView& up);

// Uploads every tensor the forward pass needs. `progress(done, total)` is called as bytes go up.
std::unique_ptr<Weights> upload_weights(gpu::Device& dev, const ModelFile& model,
                                        const std::function<void(uint64_t, uint64_t)>& progress = {});

}  // namespace ztvm
