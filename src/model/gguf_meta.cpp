#include "model/gguf_meta.h"

#include "model/model_error.h"
#include "model/qwen35_layout.h"

namespace ztvm {

namespace {

constexpr int64_t kTokenTypeUnused = 5;  // llama.cpp's LLAMA_TOKEN_TYPE_UNUSED

// The per-token arrays of `tok` extended from n to vocab_size entries.
GgufValue padded(const std::string& key, const GgufValue& v, uint64_t vocab_size) {
  GgufValue out = v;
  for (uint64_t id = v.array_size(); id < vocab_size; ++id) {
    if (key == "tokenizer.ggml.tokens") out.strings.push_back("[PAD" + std::to_string(id) + "]");
    else if (key == "tokenizer.ggml.token_type") out.ints.push_back(kTokenTypeUnused);
    else out.reals.push_back(-10000.0);  // tokenizer.ggml.scores: never chosen by SentencePiece merging
  }
  return out;
}

}  // namespace

void write_config_metadata(GgufWriter& w, const ModelConfig& c, uint32_t file_type, bool quantized,
                           const std::string& name) {
  const std::string a = c.arch_name + ".";
  w.set_string("general.architecture", c.arch_name);
  w.set_string("general.name", name);
  w.set_u32("general.file_type", file_type);
  if (quantized) w.set_u32("general.quantization_version", 2);
  w.set_u32(a + "context_length", c.max_position_embeddings);
  w.set_u32(a + "embedding_length", c.hidden_size);
  w.set_u32(a + "block_count", c.num_hidden_layers);
  w.set_u32(a + "feed_forward_length", c.intermediate_size);
  w.set_u32(a + "attention.head_count", c.num_attention_heads);
  w.set_u32(a + "attention.head_count_kv", c.num_key_value_heads);
  w.set_u32(a + "attention.key_length", c.head_dim);
  w.set_u32(a + "attention.value_length", c.head_dim);
  w.set_u32(a + "rope.dimension_count", c.rotary_dim);
  w.set_f32(a + "rope.freq_base", c.rope_theta);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  w.set_u32(a + "vocab_size", c.vocab_size);
  if (c.num_experts) {  // llama.cpp's qwen3moe / qwen35moe: the router's width, top-k and each expert's rows
    w.set_u32(a + "expert_count", c.num_experts);
    w.set_u32(a + "expert_used_count", c.num_experts_per_tok);
    w.set_u32(a + "expert_feed_forward_length", c.moe_intermediate_size);
  }
  if (c.arch == Arch::Qwen35 || c.arch == Arch::Qwen35Moe) write_qwen35_metadata(w, c);
  if (c.pooling != Pooling::Unset)  // an embedding model's (gguf_config.cpp reads llama.cpp's numbers)
    w.set_u32(a + "pooling_type", c.pooling == Pooling::Mean ? 1 : c.pooling == Pooling::Cls ? 2 : 3);
  if (!c.rope_freq_factors_long.empty()) {
    w.set_f32(a + "rope.scaling.attn_factor", c.rope_attn_factor);
    w.set_u32(a + "rope.scaling.original_context_length", c.rope_original_context);
  }
}

void copy_tokenizer_metadata(GgufWriter& w, const ModelConfig& c, const GgufFile* tok, const std::string& model_path,
                             bool pad_to_vocab) {
  if (tok) {
    const GgufValue* tokens = tok->find_value("tokenizer.ggml.tokens");
    const uint64_t n = tokens ? tokens->array_size() : c.vocab_size;
    if (n > c.vocab_size || (n < c.vocab_size && !pad_to_vocab))
      throw ModelError(tok->path() + ": vocabulary has " + std::to_string(n) + " tokens, the model " + model_path +
                       " has " + std::to_string(c.vocab_size) + " embedding rows");
    for (const auto& [key, value] : tok->metadata()) {
      if (key.rfind("tokenizer.", 0) != 0) continue;
      const bool per_token = key == "tokenizer.ggml.tokens" || key == "tokenizer.ggml.token_type" ||
                             key == "tokenizer.ggml.scores";
      w.set(key, per_token && n < c.vocab_size ? padded(key, value, c.vocab_size) : value);
    }
  } else {
    w.set_string("tokenizer.ggml.model", "no_vocab");
  }
  if (!w.has("tokenizer.ggml.bos_token_id") && c.bos_token_id >= 0) w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(c.bos_token_id));
  if (!w.has("tokenizer.ggml.eos_token_id") && !c.eos_token_ids.empty())
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(c.eos_token_ids[0]));
}

void add_rope_factor_tensors(GgufWriter& w, const ModelConfig& c) {
  if (!c.rope_freq_factors_long.empty()) {
    w.add_tensor_f32("rope_factors_long.weight", GgmlType::F32, {c.rope_freq_factors_long.size()}, c.rope_freq_factors_long);
    w.add_tensor_f32("rope_factors_short.weight", GgmlType::F32, {c.rope_freq_factors.size()}, c.rope_freq_factors);
  } else if (!c.rope_freq_factors.empty()) {
    w.add_tensor_f32("rope_freqs.weight", GgmlType::F32, {c.rope_freq_factors.size()}, c.rope_freq_factors);
  }
}

}  // namespace ztvm
