// Real-shaped GGUF models with random weights (`ztvm synth`), so both engines of a benchmark can
// read identical bytes without a download. BENCH_PROTOCOL.md rule 7: random weights are fine for
// speed, never for quality; shapes and per-tensor types must be the real models'.
//
// Weights are random codes written straight into each quant type's blocks (with scales chosen so
// the dequantized values have a standard deviation near 0.02, like transformers' default init),
// not floats run through a quantizer: our K-quant search encodes ~2 M values/s per core, so a 4B
// model would take minutes; random blocks are written at memory speed and are just as valid.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/gguf.h"
#include "model/quant_mix.h"

namespace ztvm {

// The named shapes, from the real models' config.json: "llama-3.2-1b", "qwen3-4b", "phi-3-mini"
// (Phi-3-mini-4k), "qwen3-30b-a3b" (qwen3moe: 128 experts of 768 rows, 8 a token, in all 48
// layers), "qwen3.5-4b" (qwen35: 24 gated DeltaNet and 8 gated attention layers) and
// "qwen3.6-35b-a3b" (qwen35moe: the same layout over 40 layers, 256 experts of 512 rows, 8 a token,
// and a shared expert); and for tests "tiny" (a 2-layer llama), "tiny-moe" (a 2-layer qwen3moe, 4
// experts), "tiny-qwen35" and "tiny-qwen35moe" (4 layers: 3 DeltaNet, 1 attention); the tiny ones
// have vocab_size 0: taken from the vocabulary. Throws ModelError listing the names for an unknown one.
ModelConfig synth_shape(const std::string& name);
const char* synth_shape_names();  // "llama-3.2-1b, qwen3-4b, ..., qwen3.6-35b-a3b" (tiny ones not advertised)

// One tensor of the file, in write order (RoPE factor tensors excluded: they come from the config).
struct SynthTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> ne;  // ggml order: {cols, rows}, {cols, rows, experts} or {n}
  bool ones = false;         // a 1-D tensor of one value: norms 1.0 (random norms would only rescale)
  float value = 1.f;         // ... that value (Qwen3.5's DeltaNet decay ssm_a -1, its ssm_dt bias 0)
};
// Rows of a tensor as ggml lays them out: the product of ne[1..] (1 for a vector).
inline uint64_t tensor_rows(const SynthTensor& t) {
  uint64_t r = 1;
  for (size_t i = 1; i < t.ne.size(); ++i) r *= t.ne[i];
  return r;
}

// The tensors llama.cpp's converter + llama-quantize would write for this config and mixture:
// llama.cpp names, Phi-3's fused attn_qkv and ffn_up (gate rows first), no output.weight when tied;
// a mixture-of-experts layer's random F32 router (ffn_gate_inp, so routing picks distinct experts
// per token) and its three stacked ffn_{gate,up,down}_exps; Qwen3.5's layers as qwen35_layout.h
// lists them (the DeltaNet conv and the shared expert's gate F32).
std::vector<SynthTensor> synth_plan(const ModelConfig& c, QuantMix mix);
// Sum of the tensors' data bytes (without the file's alignment padding).
uint64_t synth_data_bytes(const std::vector<SynthTensor>& plan);

struct SynthOptions {
  uint64_t seed = 1;
  unsigned threads = 0;  // 0: every core
  std::string name;      // general.name; empty: "<config name> (random weights)"
  // Called before each tensor is written: (index, count, name, type).
  std::function<void(size_t, size_t, const std::string&, GgmlType)> progress;
};

// Writes the GGUF file. Tokenizer metadata is copied from `vocab` (null: "no_vocab"); a vocabulary
// with fewer tokens than c.vocab_size is padded as llama.cpp's converter pads one, more is an
// error; c.vocab_size == 0 takes the vocabulary's size (512 without one). The same seed gives the
// same bytes whatever the thread count.
void synth_model(ModelConfig c, QuantMix mix, const GgufFile* vocab, const std::string& out_path,
                 const SynthOptions& options = {});

// Random rows of type t (cols elements each), rows [first_row, first_row + n_rows) of a tensor
// whose random stream is `seed`; writes n_rows * row_bytes(t, cols) bytes at out.
void fill_random_rows(GgmlType t, uint64_t cols, uint64_t first_row, uint64_t n_rows, uint64_t seed, uint8_t* out);

}  // namespace ztvm
