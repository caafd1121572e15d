// Which ggml type each tensor gets in a llama.cpp file type ("Q4_K_M", "Q4_0", ...): the choices
// llama.cpp's llama-quantize makes, so a file we write has the same tensor types (and so the same
// bytes per token) as one a user downloads.
#pragma once
#include <cstdint>
#include <string>

#include "model/quant.h"

namespace ztvm {

enum class QuantMix { F16, Q8_0, Q4_0, Q4_K_M };

// "Q4_K_M" / "q4_k_m" / "Q4_0" / "Q8_0" / "F16"; throws ModelError naming the accepted names.
QuantMix parse_quant_mix(const std::string& name);
const char* quant_mix_name(QuantMix mix);
// llama.cpp's `general.file_type` (enum llama_ftype): F16 1, Q4_0 2, Q8_0 7, Q4_K_M 15.
uint32_t quant_mix_file_type(QuantMix mix);

// The weight roles whose type the mixture decides (1-D tensors are always F32 and not listed).
enum class TensorRole { TokenEmbd, Output, AttnQ, AttnK, AttnV, AttnQkv, AttnOutput, FfnGate, FfnUp, FfnDown };

// llama-quantize's rule for a matrix of `cols`-element rows in layer `layer` of `n_layers`:
// - the LM head (output, or token_embd when the embedding is tied) is Q6_K for every quantized
//   mixture except Q8_0 (which keeps Q8_0);
// - Q4_K_M: Q4_K, except attn_v (or Phi-3's fused attn_qkv) and ffn_down in the layers where
//   use_more_bits() holds, which get Q6_K;
// - a 256-block type on rows that are not a multiple of 256 falls back: Q6_K -> Q8_0, Q4_K -> Q4_0
//   (llama.cpp picks Q5_0 there, a type ztvm does not compute; no real shape we make hits this).
GgmlType quant_mix_type(QuantMix mix, TensorRole role, uint32_t layer, uint32_t n_layers, bool tied, uint64_t cols);

// llama.cpp's "more bits" layers: the first and last eighth, and every third layer in between.
bool use_more_bits(int layer, int n_layers);

}  // namespace ztvm
