// Model -> GGUF conversion (`ztvm convert`, fixture generation). The output follows llama.cpp's
// conventions so llama.cpp loads it: its metadata keys, its tensor names, Q/K rows of `llama`
// permuted for adjacent-pair RoPE, Phi-3 with fused attn_qkv and ffn_up (gate rows first).
#pragma once
#include <functional>
#include <string>

#include "model/model_file.h"
#include "model/quant_mix.h"

namespace ztvm {

struct ConvertOptions {
  // Called before each tensor is written: (index, count, name, type written).
  std::function<void(size_t, size_t, const std::string&, GgmlType)> progress;
  std::string name;  // general.name; empty: the source's name
};

// Writes `in` as a GGUF file of element type `type` (convert_type_list(): F32, F16, BF16, Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS; anything else throws).
// 1-D tensors (norms, biases, RoPE factors) are always F32. A matrix whose row length is not a
// multiple of the type's block falls back to a 32-element type (Q2_K/Q3_K/Q4_K -> Q4_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL), then to F16. Except for F32/F16/BF16/Q8_0/Q4_0
// the LM head (output.weight, or token_embd when tied) is stored as Q6_K, as llama-quantize does.
// Tokenizer metadata (every tokenizer.* key) comes from vocab_source when given, else from `in`
// itself when it is a GGUF; without either the file is marked tokenizer.ggml.model = "no_vocab".
// A mixture-of-experts model (qwen3moe) is written as llama.cpp's converter writes it: the router
// blk.N.ffn_gate_inp.weight ([hidden, experts]) F32 whatever `type`, and each role's experts stacked
// into one tensor, blk.N.ffn_{gate,up}_exps.weight ne [hidden, ff, experts] and ffn_down_exps
// [ff, hidden, experts]. It throws ModelError, before writing, for what llama.cpp's qwen3moe cannot
// express: a dense layer, or norm_topk_prob false. Qwen3.5 (qwen35, qwen35moe) is written as its
// converter writes it, layer by layer as qwen35_layout.h lists (the DeltaNet's value heads tiled
// when the source has them grouped, ssm_conv1d and ffn_gate_inp_shexp F32); refused: value heads
// narrower or wider than key heads, or qwen35moe without a shared expert.
void convert_model(const ModelFile& in, const std::string& out_path, GgmlType type, const GgufFile* vocab_source,
                   const ConvertOptions& options = {});
// The same with a llama-quantize mixture's per-tensor types (quant_mix_type: "Q4_K_M" etc., as
// llama-quantize makes them from an F16 file; `_exps` tensors follow their dense role's rules).
void convert_model(const ModelFile& in, const std::string& out_path, QuantMix mix, const GgufFile* vocab_source,
                   const ConvertOptions& options = {});

// Quantize on load: every float matrix of `m` (F32, F16, BF16) re-encoded in memory as `type`, with
// the choices convert_model makes for a file (block fallbacks; with Q4_K the LM head as Q6_K), for
// `type` Q8_0, Q4_0 or Q4_K (the types the GPU engine reads; others throw ModelError); the
// views point into m.requantized afterwards. Views into a fused tensor (Phi-3's attn_q/k/v in
// attn_qkv) stay views into its re-encoded bytes. Matrices already quantized are left as they are.
// progress(i, n, name, type) before each matrix. Returns how many matrices were re-encoded.
size_t quantize_weights(ModelFile& m, GgmlType type,
                        const std::function<void(size_t, size_t, const std::string&, GgmlType)>& progress = {});

// The type a matrix with rows of `cols` elements is written as, given the requested type.
GgmlType convert_matrix_type(GgmlType requested, uint64_t cols);

// llama.cpp's `general.file_type` (enum llama_ftype) for a requested type; throws ModelError for
// a type convert does not write.
uint32_t gguf_file_type(GgmlType type);
// The LM head's (and a tied embedding's) type for a requested type: Q6_K for the K, IQ4 and
// Q4_1/Q5_x types, as llama-quantize; the type itself for F32/F16/BF16/Q8_0/Q4_0.
GgmlType convert_head_type(GgmlType requested);
// "F32, F16, ..., IQ4_XS": the types `ztvm convert --type` takes.
const char* convert_type_list();

// GGUF `llama` Q/K row order from HF's: within each head, row 2i+s of the output is row
// s*head_dim/2 + i of the input (s = 0, 1). Returns the input row for output row r.
uint64_t llama_permuted_row(uint64_t r, uint64_t head_dim);

}  // namespace ztvm
