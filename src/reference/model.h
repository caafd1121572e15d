// The whole forward pass on the CPU from the CPU twins in ops.h, mirroring engine/forward.cpp:
// the reference the GPU engine is tested against on the same file (kernels and plumbing together).
#pragma once
#include <vector>

#include "model/model_file.h"

namespace ztvm::ref {

// Logits [ids.size(), vocab] for every position, starting from an empty cache. gpu_twin: the GPU's
// number formats — matmuls on Q4_0/Q8_0/Q4_K/Q6_K weights see their input through quantize_q8, as
// the GPU's short passes do, and keys and values are stored as f16, as in its KV cache.
std::vector<float> forward_logits(const ModelFile& model, const std::vector<int32_t>& ids, bool gpu_twin = false);
// The LM head's input: every position's state after the final norm, [ids.size(), hidden].
std::vector<float> forward_hidden(const ModelFile& model, const std::vector<int32_t>& ids, bool gpu_twin = false);

}  // namespace ztvm::ref
