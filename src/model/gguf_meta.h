// The GGUF metadata llama.cpp reads, written from a ModelConfig: shared by `ztvm convert` (real
// weights) and `ztvm synth` (random weights of real shapes), so both write the same keys.
#pragma once
#include <cstdint>
#include <string>

#include "model/config.h"
#include "model/gguf.h"
#include "model/gguf_writer.h"

namespace ztvm {

// general.* and <arch>.* hyperparameter keys (llama.cpp's names). file_type is llama.cpp's
// `general.file_type` (enum llama_ftype); quantized adds general.quantization_version = 2.
void write_config_metadata(GgufWriter& w, const ModelConfig& c, uint32_t file_type, bool quantized,
                           const std::string& name);

// Every tokenizer.* key of `tok`. Its token count must equal c.vocab_size (the embedding's rows)
// unless pad_to_vocab: then a shorter list is padded the way llama.cpp's converter pads a
// vocabulary smaller than the embedding ("[PAD<id>]" tokens of type UNUSED, score -10000).
// Without `tok`, tokenizer.ggml.model = "no_vocab". bos/eos ids come from c when tok has none.
// model_path names the model in error messages.
void copy_tokenizer_metadata(GgufWriter& w, const ModelConfig& c, const GgufFile* tok, const std::string& model_path,
                             bool pad_to_vocab = false);

// RoPE factor tensors from the config: rope_freqs.weight (Llama 3), or Phi-3 longrope's
// rope_factors_long/short.weight. They go first, as llama.cpp's converter writes them.
void add_rope_factor_tensors(GgufWriter& w, const ModelConfig& c);

}  // namespace ztvm
