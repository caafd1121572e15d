// Which ggml type each tensor gets in a llama.cpp file type ("Q4_K_M", "Q4_0", ...): the choices
// llama.cpp's llama-quantize makes, so a file we write has the same tensor types (and so the same
// bytes per token) as one a user downloads.
#pragma once
#include <cstdint>
#include <string>

#include "model/quant.h"

namespace ztvm {

enum class QuantMix { F16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q3_K_M, IQ4_XS };

// "Q4_K_M" / "q4_k_m" / "Q4_0" / "Q8_0" / "F16" / "Q5_K_M" / "Q3_K_M" / "IQ4_XS"; throws ModelError
// naming the accepted names.
QuantMix parse_quant_mix(const std::string& name);
const char* quant_mix_name(QuantMix mix);
// llama.cpp's `general.file_type` (enum llama_ftype): F16 1, Q4_0 2, Q8_0 7, Q3_K_M 12, Q4_K_M 15,
// Q5_K_M 17, IQ4_XS 30.
uint32_t quant_mix_file_type(QuantMix mix);

// The weight roles whose type the mixture decides (1-D tensors are always F32 and not listed). A
// mixture-of-experts layer's stacked ffn_{gate,up,down}_exps take the role of their dense twin, as
// llama.cpp's category is the name's ffn_gate / ffn_up / ffn_down; its router is FfnGateInp. Other:
// a matrix llama-quantize gives the mixture's default type (Qwen3.5's attn_gate, ssm_beta, ssm_alpha,
// ssm_out); Unquantized: one it leaves as the converter wrote it, F32 (ssm_conv1d, and the shared
// expert's one-row gate ffn_gate_inp_shexp).
enum class TensorRole {
  TokenEmbd, Output, AttnQ, AttnK, AttnV, AttnQkv, AttnOutput, FfnGate, FfnUp, FfnDown, FfnGateInp, Other, Unquantized
};

// llama-quantize's rule (without an importance matrix) for a matrix of `cols`-element rows in layer
// `layer` of `n_layers`, in a model of n_gqa query heads per key/value head:
// - the LM head (output, or token_embd when the embedding is tied) is Q6_K for every quantized
//   mixture except Q8_0 (which keeps Q8_0);
// - Q4_K_M / Q5_K_M: Q4_K / Q5_K, except attn_v (or Phi-3's fused attn_qkv) and ffn_down in the layers
//   where use_more_bits() holds, which get Q6_K;
// - Q3_K_M: Q3_K; attn_v Q5_K in the first two layers and Q4_K after, ffn_down Q5_K in the first
//   sixteenth and Q4_K after, attn_output Q4_K;
// - IQ4_XS: IQ4_XS; attn_v Q5_K where n_gqa >= 4, ffn_down Q5_K in the first eighth;
// - the MoE router (ffn_gate_inp) is never quantized: F32 in every mixture, as llama.cpp's converter
//   writes it and llama-quantize leaves it; nor is an Unquantized matrix;
// - Qwen3.5's DeltaNet input projection (attn_qkv) is in llama.cpp's attn_v category, as Phi-3's
//   fused attn_qkv: one per layer with the attention layers' attn_v, so its index is the layer's;
// - in a model of exactly 8 experts (llama.cpp's Mixtral rule, n_expert): attn_v and attn_k Q8_0 in
//   every quantized mixture, attn_output Q5_K in Q3_K_M / Q4_K_M / IQ4_XS;
// - a 256-block type on rows that are not a multiple of 256 falls back as llama.cpp's does: Q6_K ->
//   Q8_0, Q5_K -> Q5_1, Q4_K -> Q5_0, Q3_K -> Q4_0, IQ4_XS -> IQ4_NL (then F16 if that does not fit).
GgmlType quant_mix_type(QuantMix mix, TensorRole role, uint32_t layer, uint32_t n_layers, bool tied, uint64_t cols,
                        uint32_t n_gqa = 1, uint32_t n_expert = 0);

// llama.cpp's "more bits" layers: the first and last eighth, and every third layer in between.
bool use_more_bits(int layer, int n_layers);

}  // namespace ztvm
