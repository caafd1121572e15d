// A model ready for the engine: its ModelConfig plus every weight under its canonical GGUF name,
// whatever the source (a .gguf file or a Hugging Face safetensors directory).
//
// Canonical names: token_embd.weight, output_norm.weight, output.weight (absent when tied),
// rope_freqs.weight (optional), rope_factors_long/short.weight (Phi-3 longrope, optional),
// blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm, ffn_norm,
// ffn_gate, ffn_up, ffn_down}.weight, blk.N.attn_{q,k,v}.bias. When the source stores fused
// tensors (Phi-3), attn_q/k/v and ffn_gate/ffn_up are row-range views into them, and the fused
// tensor is also listed as blk.N.attn_qkv.weight ([hidden, q+k+v rows]) and
// blk.N.ffn_gate_up.weight ([hidden, 2*ff], gate rows first).
//
// Qwen3.5 (llama.cpp's qwen35 names): gated attention layers have attn_q [hidden, 2 * heads * head_dim]
// (each head's query rows, then its gate rows); gated DeltaNet layers have attn_qkv (the conv's
// q|k|v input projection), attn_gate (z), ssm_beta, ssm_alpha, ssm_conv1d [kernel, channels],
// ssm_dt.bias, ssm_a (A = -exp(A_log), F32), ssm_norm, ssm_out; a shared expert adds
// ffn_{gate,up,down}_shexp and ffn_gate_inp_shexp [hidden]. GGUF's post_attention_norm is ffn_norm
// here, and HF's (1 + w) RMSNorm weights (not ssm_norm's) are stored as 1 + w (F32), as llama.cpp's
// converter stores them.
//
// Tensor values are always in the source's RoPE convention: config.rope_style says which.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/gguf.h"
#include "model/safetensors.h"
#include "model/tensor.h"

namespace ztvm {

struct ModelFile {
  ModelConfig config;
  std::string path;
  std::map<std::string, TensorView> tensors;     // canonical GGUF names
  std::unique_ptr<GgufFile> gguf;                // set when the source is GGUF (tokenizer metadata lives there)
  std::vector<std::unique_ptr<GgufFile>> gguf_parts;  // a split GGUF's parts after the first (tensors only)
  std::unique_ptr<SafetensorsDir> safetensors;   // set when the source is an HF directory
  std::vector<std::vector<uint8_t>> requantized; // weights made on load (quantize_weights, Qwen3.5's norms): views point here

  // Throws ModelError "PATH: missing tensor 'NAME'" when absent.
  const TensorView& get(const std::string& name) const;
  const TensorView* find(const std::string& name) const;
  bool from_hf() const { return safetensors != nullptr; }
};

// "blk.3.attn_q.weight": the canonical name of a per-layer tensor ("blk.3.ssm_a" for suffix "").
std::string layer_tensor(uint32_t layer, const char* role, const char* suffix = "weight");
// "blk.3.ffn_gate_exps.7": expert 7's rows of a layer's stacked experts (role ffn_gate, ffn_up or
// ffn_down), a 2-D view open_model makes of GGUF's ffn_*_exps or transformers' stacked tensors.
std::string expert_tensor(uint32_t layer, const char* role, uint32_t expert);

// Opens a .gguf file or an HF directory, fills the config, maps names, splits fused tensors and
// validates every tensor's shape and type against the config. Throws ModelError. A GGUF split into
// NAME-0000K-of-0000N.gguf parts (llama.cpp's gguf-split) opens from any of them: path becomes
// the first part's, which holds the metadata, and every part must be there.
std::unique_ptr<ModelFile> open_model(const std::string& path);

// Comma-separated list of the architectures open_model accepts: "llama, qwen2, qwen3, phi3".
const char* supported_architectures();
// Parses an architecture name; throws ModelError "SOURCE: unknown architecture 'X' (supported: ...)".
Arch parse_arch(const std::string& name, const std::string& source);

// Internal steps of open_model, exposed for tests and the converter.
// gguf_config.cpp; `tensors`: every tensor of a split file (null: the file's own)
ModelConfig config_from_gguf(const GgufFile& gguf, const std::map<std::string, TensorView>* tensors = nullptr);
// st, when given, decides tie_word_embeddings if config.json omits it (tied iff no lm_head).
ModelConfig config_from_hf(const std::string& dir, const SafetensorsDir* st = nullptr);  // hf_config.cpp
// HF tensor names -> canonical names (fused Phi-3 tensors keep the name attn_qkv / ffn_gate_up).
std::map<std::string, TensorView> map_hf_tensors(const SafetensorsDir& st, const ModelConfig& config);
// Llama 3 "llama3" RoPE scaling: per-pair frequency divisors, rotary_dim / 2 of them.
std::vector<float> llama3_rope_factors(uint32_t rotary_dim, float theta, float factor, float low_freq_factor,
                                       float high_freq_factor, float original_context);

}  // namespace ztvm
