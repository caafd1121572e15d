// One flat description of every supported decoder-only architecture. Filled from GGUF metadata
// (src/model/gguf_config.cpp) or a Hugging Face config.json (src/model/hf_config.cpp); the forward
// pass reads only this. Field names follow HF config.json where one exists.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ztvm {

enum class Arch { Llama, Qwen2, Qwen3, Phi3, Qwen3Moe, Qwen35, Qwen35Moe };
// How a text's token states become one embedding vector (ztvm embed, /v1/embeddings); GGUF
// `{arch}.pooling_type` or sentence-transformers' 1_Pooling/config.json. Unset: the model names none.
enum class Pooling { Unset, Mean, Cls, Last };

enum class RopeStyle {
  Normal,  // rotate adjacent pairs (x[2i], x[2i+1]) — GGUF `llama` (its converter permutes Q/K rows)
  Neox,    // rotate halves (x[i], x[i+d/2]) — HF rotate_half; GGUF qwen2/qwen3/phi3
};

// What one layer is made of: the block that mixes tokens and the feed-forward block after it, set
// per layer by the loaders. Qwen3.5 stacks gated DeltaNet layers (a linear-attention recurrence: a
// fixed-size state per head instead of a KV cache) with gated full-attention ones, three to one in
// the released models; forward.cpp builds each layer by its kind.
enum class Mixer {
  Attention,      // softmax attention over the KV cache
  GatedAttention, // the same, its output * sigmoid(gate); attn_q emits each head's query then its gate
  GatedDeltaNet,  // causal conv1d + SiLU, the gated delta rule per value head, gated RMSNorm (ssm_*)
};
enum class Ffn { Dense, Moe };
struct LayerKind {
  Mixer mixer = Mixer::Attention;
  Ffn ffn = Ffn::Dense;
  bool operator==(const LayerKind&) const = default;
};
inline const char* mixer_name(Mixer m) {
  switch (m) {
    case Mixer::Attention: return "attention";
    case Mixer::GatedAttention: return "gated attention";
    case Mixer::GatedDeltaNet: return "gated DeltaNet";
  }
  return "?";
}

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string arch_name;         // "llama", "qwen2", "qwen3", "phi3", "qwen3moe", "qwen35", "qwen35moe" (GGUF's)
  std::string name;              // general.name or the directory name
  uint32_t vocab_size = 0;       // rows of the embedding / LM head
  uint32_t hidden_size = 0;      // d_model
  uint32_t intermediate_size = 0;// FFN inner width
  uint32_t num_hidden_layers = 0;
  uint32_t num_attention_heads = 0;
  uint32_t num_key_value_heads = 0;  // < num_attention_heads: grouped-query attention
  uint32_t head_dim = 0;         // usually hidden_size / num_attention_heads (Qwen3 sets it explicitly)
  uint32_t rotary_dim = 0;       // dims rotated per head (== head_dim unless partial rotary)
  RopeStyle rope_style = RopeStyle::Neox;
  float rope_theta = 10000.f;
  float rms_norm_eps = 1e-5f;    // RMSNorms multiply by their weight (HF Qwen3.5's 1 + w is baked in at load)
  uint32_t max_position_embeddings = 2048;  // training context; the default KV capacity
  bool tie_word_embeddings = false;  // LM head reuses token_embd
  bool qk_norm = false;          // per-head RMSNorm on q and k before RoPE (Qwen3)
  bool attn_bias = false;        // q/k/v projections have biases (Qwen2)
  // Llama 3 style RoPE frequency scaling: per-pair divisors (rotary_dim/2), empty when unused.
  std::vector<float> rope_freq_factors;
  // Phi-3 "longrope": rope_freq_factors holds the short factors (for contexts up to
  // rope_original_context), this the long ones; cos and sin are both scaled by rope_attn_factor.
  std::vector<float> rope_freq_factors_long;
  uint32_t rope_original_context = 0;
  float rope_attn_factor = 1.f;
  // Tokens that end generation (eos + any eot/eom ids the file names).
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;
  Pooling pooling = Pooling::Unset;  // an embedding model's pooling (decoder LLMs name none)
  // Mixture-of-experts FFN (Ffn::Moe layers): num_experts experts of moe_intermediate_size rows, of
  // which the router's num_experts_per_tok best run per token, their softmax weights renormalised
  // over those when norm_topk_prob.
  uint32_t num_experts = 0, num_experts_per_tok = 0, moe_intermediate_size = 0;
  bool norm_topk_prob = true;
  // A shared expert beside the routed ones (Qwen3.5-MoE): an FFN of this width that every token runs,
  // its output * sigmoid(ffn_gate_inp_shexp . x), added to the experts'. 0: none.
  uint32_t shared_expert_intermediate_size = 0;
  // Gated DeltaNet layers (HF names): q and k have linear_num_key_heads heads of linear_key_head_dim,
  // v (and the state's columns) linear_num_value_heads of linear_value_head_dim; a causal depthwise
  // conv of linear_conv_kernel_dim taps runs over the q|k|v channels first. Each value head reads
  // one key head: h % num_key_heads when linear_v_heads_tiled (llama.cpp's converter reorders the
  // value heads so), else h / (num_value_heads / num_key_heads), as the HF checkpoints group them.
  uint32_t linear_conv_kernel_dim = 0;
  uint32_t linear_num_key_heads = 0, linear_key_head_dim = 0;
  uint32_t linear_num_value_heads = 0, linear_value_head_dim = 0;
  bool linear_v_heads_tiled = false;
  // Per layer (empty: every layer the default kind, full attention and a dense FFN).
  std::vector<LayerKind> layer_kinds;
  LayerKind layer(uint32_t l) const { return l < layer_kinds.size() ? layer_kinds[l] : LayerKind{}; }
  // Some layer carries a recurrent state (gated DeltaNet) that a pass advances and nothing rewinds: a
  // sequence's cached prefix cannot be cut back, so callers reusing one resume from a snapshot of
  // the state (engine/state_ring.h), or from 0.
  bool has_recurrent_state() const {
    for (const LayerKind& k : layer_kinds)
      if (k.mixer == Mixer::GatedDeltaNet) return true;
    return false;
  }
  bool operator==(const ModelConfig&) const = default;  // tests: two sources of one model read alike
};

}  // namespace ztvm
