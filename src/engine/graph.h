// The builder of a recorded forward pass: forward.cpp calls it once per head mode at load, one call
// per op, and it makes each op's kernel variants (graph_ops.h) and binds their buffers once; every
// later pass replays them. Replay allocates nothing: per-pass values (position, token count) live in
// the `step` uniform buffers.
#pragma once
#include <map>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph_ops.h"
#include "engine/weights.h"
#include "gpu/kernels.h"

namespace ztvm {

// Mirrors `Step` in kernels/common.wgsl.
struct StepParams {
  uint32_t pos0, n_tokens, out_index, split;
};

// Positions per attention split in a pass of n_tokens that ends at `positions`, for a graph built with
// splits of `split` (AttnShape): twice that for one-token passes that would take more than
// kAttnWideSplits splits, where fewer, longer splits pay (H200, bench/EXPERIMENTS.md) while shorter
// contexts keep enough workgroups to fill the GPU. Whoever writes the step writes it (Forward::encode);
// Graph::encode sizes the grid with it, and the attention kernels and the combine read it.
// flash_nh: the graph's NH query heads take flash attention (GraphBuilder::flash_serves; 0: they do
// not), whose short passes deep in the context run over flash_split_span's splits instead.
uint32_t attention_split(uint32_t split, uint32_t positions, uint32_t n_tokens, uint32_t flash_nh = 0);

// Flash attention over splits (attention_flash.wgsl SPLITS) for passes of 2..kFlashSplitMaxTokens
// tokens on nh query heads that end at kFlashSplitMinPositions+ positions and would make fewer than
// kFlashSplitBelowGroups workgroups (about nh x tokens / 32): up to kFlashSplits splits, each a
// multiple of 64 positions (whole flash steps). Returns their span, or 0 for passes without splits.
// H200 at 4,096 positions (bench/EXPERIMENTS.md): 35 tokens -35..-41% TTFT; 128 tokens -8% on
// Llama-3.2-1B, -0.7% on Qwen3-4B; 256 tokens +5% on the 1B, so passes past 128 take no splits.
inline constexpr uint32_t kFlashSplitMaxTokens = 128, kFlashSplitMinPositions = 2048, kFlashSplits = 8,
                          kFlashSplitBelowGroups = 264;
uint32_t flash_split_span(uint32_t positions, uint32_t n_tokens, uint32_t nh);

// Builds ops: picks the kernel variants for each weight type and binds buffers once.
class GraphBuilder {
 public:
  GraphBuilder(gpu::Kernels& k, Graph& g, const gpu::Buffer& step) : k_(k), g_(g), step_(&step) {}
  // Later dispatches read this step buffer (the LM head of one token uses a separate one).
  void use_step(const gpu::Buffer& step) { step_ = &step; }
  // Passes of up to max_tokens (<= 64: one token tile) tokens split K on matrices with too few row
  // tiles to fill the GPU (gemm_q8's split: add_q8_split_k). scratch (split_k_scratch_bytes(max_tokens))
  // holds the partials; all later matmuls share it, which is safe as the dispatches of a pass run in
  // order. ksplit: force this split on every matrix (tests); 0: choose_ksplit's rule.
  void use_split_k(const gpu::Buffer& scratch, uint32_t max_tokens, uint32_t ksplit = 0);
  // Matmuls on quantized weights (q8_x_type) in passes of up to max_tokens tokens first quantize x to
  // int8 units (quantize_q8.wgsl, or the kernel that produced x) in xq (max_tokens * cols bytes) and
  // xs (max_tokens * cols / 32 pairs of floats), then run the matvec on them with dot4I8Packed, as
  // llama.cpp's matvecs do: one token, or tokens_per_group tokens per workgroup for 2..max_tokens
  // (at most kQ8MatvecMaxTokens). Other weights, and longer passes, read x as f32 (the GEMM).
  void use_q8_x(const gpu::Buffer& xq, const gpu::Buffer& xs, uint32_t max_tokens = 1, uint32_t tokens_per_group = 8,
                uint32_t rows_per_lane = 1, uint32_t lanes = 16) {
    if (2 * rows_per_lane * tokens_per_group > 32) throw std::invalid_argument("matvec: 2 x rows x tokens exceeds its 32 sums");
    if (rows_per_lane * tokens_per_group > lanes || lanes > 64 || (lanes & (lanes - 1)))
      throw std::invalid_argument("matvec_tokens: lanes must be a power of two <= 64 and >= rows x tokens");
    xq_ = &xq, xs_ = &xs, q8_max_ = max_tokens, q8_tt_ = tokens_per_group, q8_rpl_ = rows_per_lane, q8_lanes_ = lanes;
  }
  // Long passes (past every other variant of both GEMMs): the gated GEMM (gate|up) stores h as int8
  // units in hq (max_tokens * cols bytes) and hs (max_tokens * cols / 32 pairs of floats) itself
  // (h_out_q8.wgsl), and the GEMM on h after it reads them: no quantize_q8 dispatch, no f32 h.
  void use_q8_h(const gpu::Buffer& hq, const gpu::Buffer& hs) { hq_ = &hq, hs_ = &hs; }
  static bool q8_x_type(GgmlType t);
  // Passes longer than the token-group matvec serves (kQ8MatvecMaxTokens) run gemm_q8.wgsl on int8 x
  // instead of the f32 GEMM; use_q8_x's max_tokens must then cover the whole chunk.
  void use_q8_gemm(bool on) { q8_gemm_ = on; }
  // Decode steps make the query, key and value heads in attention_decode.wgsl (q_in_rope.wgsl up to
  // kAttnDecodeMax positions, q_in_rope_split.wgsl in the splits past them) and skip the rope_kv
  // dispatch that the attention follows.
  void use_rope_in_decode(bool on) { rope_in_decode_ = on; }
  // One-token matvecs that make x from a norm of the residual (x_q8_norm.wgsl) right after the
  // projection that stored the residual's sum (y_resid.wgsl): that projection also stores x times the
  // norm's weight in xw and its workgroups' sums of x^2 in ss (y_resid_norm.wgsl), and the matvec
  // packs those (x_q8_prenorm.wgsl): before every matrix type since the packs took 8 threads a
  // unit (measured in bench/EXPERIMENTS.md). Each buffer holds one token's d floats.
  void use_prenorm(const gpu::Buffer& xw, const gpu::Buffer& ss) { prenorm_xw_ = &xw, prenorm_ss_ = &ss; }
  // Passes that flash attention serves make their queries in it from the raw qkv rows (q_flash_rope.wgsl)
  // and the rope_kv before it makes only the keys and values, where the device binds the 10 storage
  // buffers that takes.
  void use_rope_in_flash(bool on) { rope_in_flash_ = on; }
  // Block reductions and int8 packs through subgroup operations where the device has them (default);
  // tests turn them off to check the workgroup-memory and one-thread variants on devices that do.
  void use_subgroups(bool on) { subgroups_ = on; }
  static constexpr uint32_t kQ8MatvecMaxTokens = 64;
  // rope_kv's heads per workgroup in passes of several tokens (one-token passes: one).
  static constexpr uint32_t kRopeSlots = 4;
  // gemm_q8.wgsl's split-K variant (add_q8_split_k): passes of up to kQ8SplitMaxTokens.
  static constexpr uint32_t kQ8SplitMaxTokens = 512, kQ8GemmSlots = 264;
  static constexpr double kQ8SplitGain = 0.1;
  static constexpr uint32_t kSplitMaxTokens = 64;  // the GEMM's token tile
  static uint64_t split_k_scratch_bytes(uint32_t max_tokens);
  // Groups per tile along K for a matrix of row_tiles tiles and `units` 32-column steps; 1: no split.
  static uint32_t choose_ksplit(uint32_t row_tiles, uint32_t units);
  // gemm_q8's split for a matrix of row_tiles tiles in passes of `tokens` tokens: 1 or 2.
  static uint32_t choose_q8_ksplit(uint32_t row_tiles, uint32_t tokens);
  // Whether flash attention serves every pass of 2+ tokens for these heads (then only one-token
  // passes, decode over splits, write split partials).
  static bool flash_serves(uint32_t hd, uint32_t nh, uint32_t nkv);
  static uint32_t flash_tile(uint32_t hd, uint32_t wg_bytes);
  static uint32_t flash_halves(uint32_t hd, uint32_t wg_bytes);
  static uint32_t flash_bytes(uint32_t hd, uint32_t tile, uint32_t halves = 1);
  // Tests: flash attention steps of `tile` positions where they fit, whatever the head size.
  void force_flash_tile(uint32_t tile) { flash_tile_force_ = tile; }
  void force_flash_halves(uint32_t halves) { flash_halves_force_ = halves; }
  // gemm.wgsl's 8 x 4 micro-tile for a pass of `tokens` tokens of a matrix of narrow_tiles 64-row
  // tiles or wide_tiles 128-row ones (gate|up: 32 and 64 rows of each): whether its grid fills the
  // GPU's waves (kQ8GemmSlots) within kGemmWideGain of the narrow one's.
  static bool gemm_wide_pays(uint32_t narrow_tiles, uint32_t wide_tiles, uint32_t tokens);
  // Tests: the 8 x 4 micro-tile in every pass that runs the unsplit GEMM (where it fits).
  void force_gemm_wide() { gemm_wide_force_ = true; }
  void add_reduce(const gpu::Buffer& y, const MatrixPart& p, const Matrix& w, double y_stride, uint32_t ksplit);
  void add_gemm_wide(const gpu::Buffer& y, const gpu::Buffer& x, const MatrixPart& p, const Matrix& w,
                     const std::map<std::string, double>& gemm_constants);
  void add_q8_split_k(const gpu::Buffer& y, const MatrixPart& p, const Matrix& w, const gpu::KernelKey& key,
                      uint32_t row_tiles, uint32_t max_tokens);

  void embed(const gpu::Buffer& x, const gpu::Buffer& ids, const Matrix& table);
  // zeros (d floats of 0) and scratch (one token's d floats): decode's matvec on y may make its input
  // itself as from a residual step x + zeros (x_q8_norm.wgsl), storing that sum in scratch, and the
  // rmsnorm dispatch is skipped in one-token passes.
  void rmsnorm(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& w, uint32_t d, float eps,
               const gpu::Buffer* zeros = nullptr, const gpu::Buffer* scratch = nullptr);
  void add_rmsnorm(const gpu::Buffer& y, const gpu::Buffer& sum, const gpu::Buffer& a, const gpu::Buffer& b,
                   const gpu::Buffer& w, uint32_t d, float eps);
  // y[t, y_offset + r] = W x[t]; gated matrices write silu(gate) * up. one_token: x holds a single
  // token whatever the pass's length (the LM head of the last token).
  void matmul(const gpu::Buffer& y, const gpu::Buffer& x, const Matrix& w, uint32_t y_stride = 0,
              bool one_token = false);
  struct AttnShape {
    uint32_t hd, nh, nkv, rot, page, split;
    bool neox, qk_norm, bias;
    float eps;
  };
  void rope_kv(const gpu::Buffer& q, const gpu::Buffer& k_cache, const gpu::Buffer& v_cache, const gpu::Buffer& qkv,
               const gpu::Buffer& aux, const gpu::Buffer& rope, const gpu::Buffer& pages, const AttnShape& s);
  // Split-K attention into part, merged into att by attention_combine; long passes of heads that
  // attention_flash serves write att directly (and the combine that follows skips them).
  void attention(const gpu::Buffer& att, const gpu::Buffer& part, const gpu::Buffer& q, const gpu::Buffer& k_cache,
                 const gpu::Buffer& v_cache, const gpu::Buffer& pages, const AttnShape& s);
  void attention_combine(const gpu::Buffer& att, const gpu::Buffer& part, const AttnShape& s);
  // part: scratch of kArgmaxParts (value, index) pairs between the two passes. The second pass also
  // stores the chosen token's row of `table` in x (next_embed.wgsl) when the table is one binding:
  // then it returns true, and a one-token pass after it may skip its embed (Graph::encode's embedded).
  bool argmax(const gpu::Buffer& ids, const gpu::Buffer& tokens, const gpu::Buffer& part, const gpu::Buffer& logits,
              uint32_t vocab, const gpu::Buffer& x, const Matrix& table);
  static constexpr uint32_t kArgmaxParts = 128;
  // Random sampling of the logits (in place) with the SamplingUniform in `params`; the token's row of
  // `table` stored in x as argmax does.
  bool sample(const gpu::Buffer& ids, const gpu::Buffer& tokens, const gpu::Buffer& logits, const gpu::Buffer& params,
              uint32_t vocab, const gpu::Buffer& x, const Matrix& table);
  void copy_last_row(const gpu::Buffer& dst, const gpu::Buffer& src, uint32_t width);

 private:
  const gpu::Buffer* split_scratch_ = nullptr;
  uint32_t split_max_ = 0, split_force_ = 0;
  uint32_t flash_tile_force_ = 0;
  uint32_t flash_halves_force_ = 0;
  bool gemm_wide_force_ = false;
  const gpu::Buffer* xq_ = nullptr;
  const gpu::Buffer* xs_ = nullptr;
  uint32_t q8_max_ = 1, q8_tt_ = 8, q8_rpl_ = 1, q8_lanes_ = 16;
  bool q8_gemm_ = false;
  const gpu::Buffer* hq_ = nullptr;
  const gpu::Buffer* hs_ = nullptr;
  // The gated int8 GEMM just added, when its long passes can store h as units (use_q8_h): its op,
  // output, the h_out_q8 key and bindings, for the matmul on h after it (fuse_q8_h).
  struct GatedGemm {
    size_t op;
    const gpu::Buffer* y;
    uint32_t rows;
    gpu::KernelKey key;
    std::vector<gpu::Binding> bindings;
  };
  std::vector<GatedGemm> gated_gemm_;  // empty or one
  void fuse_q8_h(const GatedGemm& gg, const gpu::Buffer& y, const gpu::Buffer& x, const Matrix& w, size_t quantize_op);
  // The last dispatch, when it is a kernel that can also store its output y as int8 units (XOUT:
  // x_out_q8.wgsl): a matvec right after it on y then needs no quantize_q8 dispatch.
  // An attention dispatch's variants that write att without the combine (flash, decode), kept so that
  // int8 variants can be made of them later.
  struct AttnDirect {
    size_t op;
    gpu::KernelKey key;
    std::vector<gpu::Binding> bindings;
  };
  std::optional<AttnDirect> flash_, decode_;  // from attention() to the attention_combine() after it
  struct RopeOp {
    size_t op;
    const gpu::Buffer *qkv, *aux, *rope;
    gpu::KernelKey key;  // the multi-token rope_kv and its bindings
    std::vector<gpu::Binding> bindings;
  };
  std::optional<RopeOp> rope_;  // from rope_kv() to the attention() after it
  bool rope_in_decode_ = false;
  const gpu::Buffer* prenorm_xw_ = nullptr;
  const gpu::Buffer* prenorm_ss_ = nullptr;
  bool rope_in_flash_ = false;
  struct Q8Producer {
    size_t op;
    const gpu::Buffer* y;
    gpu::KernelKey key;
    std::vector<gpu::Binding> bindings;
    std::optional<AttnDirect> flash, decode;  // write y instead in the passes they serve, and its units then
  };
  std::vector<Q8Producer> q8_producer_;  // empty or one
  // The add_rmsnorm just added (op index and its inputs): a one-token matvec on its output can do its
  // work instead (x_q8_norm.wgsl).
  struct NormProducer {
    size_t op;
    const gpu::Buffer *y, *sum, *a, *b, *w;
    uint32_t d;
    float eps;
  };
  std::vector<NormProducer> norm_producer_;  // empty or one
  // The decode matvec just added, if it can store its output as int8 units too (whole units per
  // workgroup, x not read from xq/xs): its one-token key and bindings.
  std::vector<Q8Producer> q8_matvec_producer_;  // empty or one
  // The decode matvec just added, if it can store a QKV's rows as rope_kv would (y_rope.wgsl: one
  // part, x made in the workgroup, RPL 2): its one-token key and bindings, for rope_kv().
  std::vector<Q8Producer> rope_matvec_;  // empty or one
  // The decode matvec just added, if it is a plain one-token matvec on int8 x that could add the
  // residual to its rows (y_resid.wgsl): its one-token key and bindings, for the fused-norm matvec
  // after the add_rmsnorm that follows it.
  std::vector<Q8Producer> resid_matvec_;  // empty or one
  bool emit_q8_from_matvec(const gpu::Buffer& x);
  void q8_producer(const gpu::Buffer& y, const gpu::KernelKey& key, const std::vector<gpu::Binding>& b,
                   std::optional<AttnDirect> flash = std::nullopt, std::optional<AttnDirect> decode = std::nullopt);
  bool emit_q8_from_producer(const gpu::Buffer& x, uint32_t max_tokens, uint32_t f32_dead_from = 0);
  bool emit_q8_through_copy(const gpu::Buffer& x);
  std::string reduce_snippet() const;
  std::string pack8_snippet() const;
  bool subgroups_ = true;
  bool add_picker(gpu::KernelKey key, std::vector<gpu::Binding> b, const gpu::Buffer& x, const Matrix& table);
  // f32_dead_from: passes from this length read only the units (0: none); add_rmsnorm and flash
  // attention then skip their f32 output (F32_OUT).
  void emit_q8(Q8Producer& p, const gpu::Buffer& x, uint32_t max_tokens, uint32_t f32_dead_from = 0);
  void add_quantize_q8(const gpu::Buffer& x, uint32_t cols, bool one_token, uint32_t max_tokens);
  void add_split_k(const gpu::Buffer& y, const gpu::Buffer& x, const MatrixPart& p, const Matrix& w,
                   const std::map<std::string, double>& gemm_constants, uint32_t row_tiles);
  // A kernel variant: the pipeline of key bound to b (labelled label), named role in profiles
  // (default: the kernel and its weight type, "gemm_q4_0").
  Variant variant(const gpu::KernelKey& key, const std::vector<gpu::Binding>& b, const std::string& label,
                  std::string role = {});
  // A new op of family T whose main variant is key bound to b, labelled kernel:first binding.
  template <class T>
  T& add(const gpu::KernelKey& key, const std::vector<gpu::Binding>& b) {
    auto op = std::make_unique<T>();
    op->main = variant(key, b, key.kernel + ":" + b[0].buffer->label());
    T& t = *op;
    g_.ops.push_back(std::move(op));
    return t;
  }
  size_t last() const { return g_.ops.size() - 1; }
  gpu::Kernels& k_;
  Graph& g_;
  const gpu::Buffer* step_;
};

// The WGSL snippet that reads a weight type ("weight_q4_0", ...); throws for types without a kernel.
std::string weight_snippet(GgmlType t);

}  // namespace ztvm
