// Qwen3.5's layers as llama.cpp's converter (convert_hf_to_gguf.py, Qwen3_5TextModel /
// Qwen3_5MoeTextModel on Qwen3NextModel) writes them for its qwen35 / qwen35moe architectures: one
// list of tensors per layer, shared by `ztvm convert` (filled from a model's canonical tensors) and
// `ztvm synth` (random tensors of the same shapes and types), and the metadata keys it adds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/gguf_writer.h"
#include "model/quant_mix.h"

namespace ztvm {

// How a tensor's value heads move from HF's order, grouped by key head ([key head][value heads per
// key head]), to the converter's tiled order ([value heads per key head][key head]): the rows from
// first_row on in heads of row_head rows (1-D: elements), or every row's columns in heads of
// col_head. Zero: nothing moves.
struct VHeadOrder {
  uint64_t first_row = 0, row_head = 0, col_head = 0;
};

struct Qwen35Tensor {
  std::string name;                   // the GGUF name: "blk.3.post_attention_norm.weight"
  std::string source;                 // the canonical tensor it is made of ("blk.3.ffn_norm.weight")
  const char* expert_role = nullptr;  // set: stacked from expert_tensor(layer, expert_role, e), e < experts
  TensorRole role = TensorRole::Other;  // the quantization rule's role (1-D tensors are F32 whatever it says)
  std::vector<uint64_t> ne;           // ggml order as written: {n}, {cols, rows} or {cols, rows, experts}
  VHeadOrder vheads;                  // applied when the source's value heads are grouped (HF)
  float constant = 0;                 // synth: a 1-D tensor's value (norms 1, ssm_a -1, ssm_dt 0)
};

// Layer l's tensors in the converter's order for what c.layer(l) is (gated DeltaNet or gated
// attention; dense FFN or routed experts with a gated shared expert).
std::vector<Qwen35Tensor> qwen35_layer_tensors(const ModelConfig& c, uint32_t l);

// Output element i of a block of nv value heads of `head` elements (rows, or columns) in tiled order
// comes from this element of the grouped block (nk key heads).
uint64_t tiled_vhead_source(uint64_t i, uint32_t nk, uint32_t nv, uint64_t head);

// The qwen35 / qwen35moe keys beyond the common ones (gguf_meta.cpp): ssm.*, the layer layout,
// rope.dimension_sections, expert_shared_feed_forward_length.
void write_qwen35_metadata(GgufWriter& w, const ModelConfig& c);

// rope.dimension_sections (M-RoPE, which llama.cpp's qwen35 requires): how many rotary pairs of each
// residue mod 3 there are ([11, 11, 10, 0] for the released models' 32 pairs, their mrope_section).
// A text token's position is the same in every section, so any split covering all pairs is plain
// RoPE; one leaving pairs to the fourth section would not be.
std::vector<int32_t> qwen35_rope_sections(uint32_t rotary_dim);

// Every full_attention_interval-th layer is attention, the others gated DeltaNet: that interval
// (layers + 1 when none is attention), or 0 when the layers follow no such rule (then
// attention.recurrent_layers lists them: a bool array, which older llama.cpp builds may not read).
uint32_t qwen35_full_attention_interval(const ModelConfig& c);

}  // namespace ztvm
