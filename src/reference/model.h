// The whole forward pass on the CPU from the CPU twins in ops.h, mirroring engine/forward.cpp:
// the reference the GPU engine is tested against on the same file (kernels and plumbing together).
#pragma once
#include <vector>

#include "model/model_file.h"

namespace ztvm::ref {

// What a pass leaves for the next one, as the GPU engine's KV cache and recurrent state do. A
// default State has seen nothing; passes that share one continue the same sequence.
struct LayerState {
  std::vector<float> keys, values;  // attention: [pos][nkv * hd] each
  std::vector<float> conv;          // gated DeltaNet: the conv's last K - 1 inputs, [K - 1][channels]
  std::vector<float> ssm;           // gated DeltaNet: [value heads][key head dim][value head dim]
};
struct State {
  uint32_t pos = 0;  // tokens seen
  std::vector<LayerState> layers;
};

// Logits [ids.size(), vocab] for every position, starting from an empty cache. gpu_twin: the GPU's
// number formats — matmuls on Q4_0/Q8_0/Q4_K/Q6_K weights see their input through quantize_q8, as
// the GPU's short passes do, and keys and values are stored as f16, as in its KV cache.
std::vector<float> forward_logits(const ModelFile& model, const std::vector<int32_t>& ids, bool gpu_twin = false);
// The LM head's input: every position's state after the final norm, [ids.size(), hidden].
std::vector<float> forward_hidden(const ModelFile& model, const std::vector<int32_t>& ids, bool gpu_twin = false);
// The same, continuing from `state` (ids at positions state.pos, state.pos + 1, ...), which they update.
std::vector<float> forward_logits(const ModelFile& model, const std::vector<int32_t>& ids, State& state,
                                  bool gpu_twin = false);
std::vector<float> forward_hidden(const ModelFile& model, const std::vector<int32_t>& ids, State& state,
                                  bool gpu_twin = false);

}  // namespace ztvm::ref
