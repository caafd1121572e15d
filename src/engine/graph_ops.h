// The ops of a recorded forward pass, one type per kernel family. Each op owns its kernel variants
// (built once at load by GraphBuilder, graph.h) and the rule that picks one for a pass: its length,
// its position in the context, whether x holds its embedding row already. Replay allocates nothing.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "gpu/kernels.h"

namespace ztvm {

// What a pass is: n_tokens tokens from position pos0. embedded: x already holds the pass's one
// embedding row (made by the last pass's argmax or sample).
struct Pass {
  uint32_t pos0, n_tokens;
  bool embedded;
  uint32_t positions() const { return pos0 + n_tokens; }
  uint32_t token_tiles() const { return (n_tokens + 63) / 64; }
  // One-token passes past `after` positions (0: none are).
  bool long_step(uint32_t after) const { return n_tokens == 1 && after && pos0 + 1 > after; }
};

// One way to run an op: a pipeline with its bind group, and its name in profiles.
struct Variant {
  const gpu::Pipeline* pipeline = nullptr;
  gpu::BindGroup group;
  std::string role;
  explicit operator bool() const { return pipeline != nullptr; }
  void run(gpu::Recorder& rec, uint32_t groups, uint64_t bytes = 0) const {
    rec.dispatch(*pipeline, group, groups, 1, role, bytes);
  }
};

class Op {
 public:
  virtual ~Op() = default;
  virtual void encode(gpu::Recorder& rec, const Pass& p) const = 0;
  bool skip_one_token = false;  // one-token passes skip it: a neighbour does its work there
};

// Kernels with a grid of `a` workgroups per token: embed, the norms, rope_kv, quantize_q8, the combine
// of attention's splits.
struct RowOp : Op {
  Variant main;
  uint32_t a = 1;
  // Passes of up to single_max tokens (every pass: always_single) run `single`, single_groups a token:
  // the variant that also stores its output as int8 units, or rope_kv's one head a workgroup.
  // single_only: longer passes skip the op (quantize_q8: only passes that read int8 x need it).
  Variant single;
  uint32_t single_groups = 0, single_max = 1;
  bool always_single = false, single_only = false;
  // Passes of long_min+ tokens run long_main instead (long_a groups a token; 0: as the variant it
  // replaces): an add_rmsnorm that stores only the int8 units, the rope_kv of keys and values only.
  Variant long_main;
  uint32_t long_min = 0, long_a = 0;
  uint32_t skip_min = 0;            // non-zero: passes of skip_min+ tokens skip it ...
  bool unless_flash_split = false;  // ... except those that run flash attention over splits (a heads)
  uint32_t skip_decode_max = 0;     // non-zero: one-token passes that see at most this many positions skip it
  uint32_t long_after = 0;          // with skip_long: one-token passes past long_after positions skip it
  bool skip_long = false;
  bool skip_embedded = false;       // the embed, where the last pass's argmax made x
  void encode(gpu::Recorder& rec, const Pass& p) const override;
};

// y = W x over row tiles (`a` of them, bytes of weights): the GEMM, and the variants that serve
// shorter passes better.
struct MatmulOp : Op {
  Variant main;  // gemm or gemm_q8: a row tiles x token tiles of 64
  uint32_t a = 1;
  uint64_t bytes = 0;
  // Passes of up to single_max tokens (decode: 1; every pass: always_single, the LM head of the last
  // token): the matvec, single_groups workgroups. Past long_after positions long_single instead (a
  // Llama QKV matvec that stores the roped heads itself, y_rope.wgsl).
  Variant single, long_single;
  uint32_t single_groups = 0, single_max = 1, long_after = 0;
  bool always_single = false;
  // Passes of 2..few_max tokens: the matvec on int8 x, few_blocks groups per few_tokens tokens.
  Variant few;
  uint32_t few_blocks = 0, few_tokens = 0, few_max = 0;
  // Passes of up to split_max tokens on matrices of few row tiles: split-K partials into the shared
  // scratch (ksplit x a groups per token tile), then `reduce` (reduce_blocks a token) adds them into y.
  Variant split, reduce;
  uint32_t ksplit = 0, split_max = 0, reduce_blocks = 0;
  // gemm.wgsl's 128-row tiles (wide_a of them) where GraphBuilder::gemm_wide_pays, or always (tests).
  Variant wide;
  uint32_t wide_a = 0;
  bool wide_always = false;
  // Passes of long_min+ tokens: the gated GEMM that stores h as int8 units, or the GEMM that reads them.
  Variant long_main;
  uint32_t long_min = 0;
  // x holds one token whatever the pass (the LM head of the last): one token tile. Rows of widths
  // the matvec does not take (not whole 32-element units) run the GEMM there.
  bool one_token = false;
  // The shortest pass that runs the GEMM (main or long_main): past every other variant.
  uint32_t main_min() const;
  void encode(gpu::Recorder& rec, const Pass& p) const override;
};

// softmax(q k^T / sqrt(hd)) v over the paged KV cache, by the kernel the pass's length and position
// call for. The split kernels write partials for attention_combine; flash and decode write att.
struct AttentionOp : Op {
  Variant main;  // a workgroup per query head (nh), token and split of `split` positions
  uint32_t nh = 0, split = 0;
  uint64_t bytes_per_position = 0;  // KV-cache bytes per position of context (for GB/s)
  // One-token passes that see at most decode_max positions: a workgroup per query head, no splits
  // (decode_q8: also storing att's int8 units); longer ones: decode_split, over splits.
  Variant decode, decode_q8, decode_split;
  uint32_t decode_max = 0;
  // Passes of flash_min+ tokens: flash attention, flash_a head groups x token tiles of flash_tq.
  // flash_q8 also stores att's int8 units in passes of up to flash_q8_max tokens; flash_q8_only stores
  // only those, from flash_q8_only_min tokens; flash_split runs over splits (flash_split_span).
  Variant flash, flash_q8, flash_q8_only, flash_split;
  uint32_t flash_a = 0, flash_tq = 0, flash_min = 0, flash_q8_max = 0, flash_q8_only_min = 0;
  // Passes of blocked_min+ tokens that flash does not serve: blocked_a head groups x token blocks of
  // blocked_tq x splits.
  Variant blocked;
  uint32_t blocked_a = 0, blocked_tq = 0, blocked_min = 0;
  void encode(gpu::Recorder& rec, const Pass& p) const override;
};

// A kernel of a fixed grid whatever the pass: argmax's two passes, sample, moe_sort.
struct FixedOp : Op {
  Variant main;
  uint32_t groups = 1;
  void encode(gpu::Recorder& rec, const Pass& p) const override {
    if (!(skip_one_token && p.n_tokens == 1)) main.run(rec, groups);
  }
};

// The experts' matvecs of a sparse layer (matvec_moe.wgsl), row_groups workgroups a job: one-token
// passes by pair (k jobs, `main`), longer ones grouped by expert (`grouped`: a job per expert chosen,
// at most min(experts, n k) of them, from moe_sort's plan).
struct MoeMatmulOp : Op {
  Variant main, grouped;
  uint32_t k = 0, experts = 0, row_groups = 0;  // row_groups: workgroups a job of `grouped`
  uint32_t main_row_groups = 0;                 // ... of `main`
  bool by_token = false;                        // main's jobs are tokens (the down projection with the combine)
  uint64_t bytes_per_expert = 0;  // for profiles' GB/s
  // Passes of gemm_min+ tokens (0: none): gemm_q8.wgsl on moe_sort's tiles of up to 64 pairs of one
  // expert, gemm_row_tiles workgroups a tile, the grid sized for the most tiles a pass can have.
  Variant gemm;
  uint32_t gemm_min = 0, gemm_row_tiles = 0;
  void encode(gpu::Recorder& rec, const Pass& p) const override;
};

// The last token's row of src (width floats a token) to dst: a copy between compute passes.
struct CopyRowOp : Op {
  const gpu::Buffer* src = nullptr;
  const gpu::Buffer* dst = nullptr;
  uint32_t width = 0;
  void encode(gpu::Recorder& rec, const Pass& p) const override;
};

class Graph {
 public:
  // Replays the ops for a pass of n_tokens tokens starting at pos0 (embedded: see Pass).
  void encode(gpu::Recorder& rec, uint32_t pos0, uint32_t n_tokens, bool embedded = false) const;
  // Op i as the family it must be (the builder's and the tests' view of an op they made).
  template <class T>
  T& op(size_t i) const {
    if (T* t = i < ops.size() ? dynamic_cast<T*>(ops[i].get()) : nullptr) return *t;
    throw std::logic_error("graph op " + std::to_string(i) + " is not a " + typeid(T).name());
  }
  template <class T>
  T* find(size_t i) const { return i < ops.size() ? dynamic_cast<T*>(ops[i].get()) : nullptr; }
  std::vector<std::unique_ptr<Op>> ops;
  bool finished = false;  // GraphBuilder::finish made the ops
};

}  // namespace ztvm
