// The builder of a recorded forward pass: forward.cpp calls it once per head mode at load, one call
// per op, then finish(), which plans the fusions between neighbouring ops (graph_fuse.cpp) and makes
// each op's kernel variants (graph_ops.h), binding their buffers once; every later pass replays them. Replay allocates nothing: per-pass values (position, token count) live in
// the `step` uniform buffers.
#pragma once
#include <algorithm>
#include <map>
#include <stdexcept>
#include <memory>
#include <optional>
#include <variant>
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

// Lists ops, plans their fusions and makes them: picks the kernel variants for each weight type and
// binds buffers once.
class GraphBuilder {
 public:
  GraphBuilder(gpu::Kernels& k, Graph& g, const gpu::Buffer& step) : k_(k), g_(g), step_(&step) {}
  // Ops listed after this read this step buffer (the LM head of one token uses a separate one).
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

  // The ops, in order (forward.cpp's one line per dispatch). They are listed here and made by
  // finish(): first the fusions between neighbours are planned over the whole list (graph_fuse.cpp),
  // then each op's kernel variants are made knowing what it shares with its neighbours.
  GraphBuilder& embed(const gpu::Buffer& x, const gpu::Buffer& ids, const Matrix& table);
  // zeros (d floats of 0) and scratch (one token's d floats): decode's matvec on y may make its input
  // itself as from a residual step x + zeros (x_q8_norm.wgsl), storing that sum in scratch, and the
  // rmsnorm dispatch is skipped in one-token passes.
  GraphBuilder& rmsnorm(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& w, uint32_t d, float eps,
                        const gpu::Buffer* zeros = nullptr, const gpu::Buffer* scratch = nullptr);
  GraphBuilder& add_rmsnorm(const gpu::Buffer& y, const gpu::Buffer& sum, const gpu::Buffer& a, const gpu::Buffer& b,
                            const gpu::Buffer& w, uint32_t d, float eps);
  // y[t, y_offset + r] = W x[t]; gated matrices write silu(gate) * up. one_token: x holds a single
  // token whatever the pass's length (the LM head of the last token).
  GraphBuilder& matmul(const gpu::Buffer& y, const gpu::Buffer& x, const Matrix& w, uint32_t y_stride = 0,
                       bool one_token = false);
  struct AttnShape {
    uint32_t hd, nh, nkv, rot, page, split;
    bool neox, qk_norm, bias;
    float eps;
  };
  GraphBuilder& rope_kv(const gpu::Buffer& q, const gpu::Buffer& k_cache, const gpu::Buffer& v_cache,
                        const gpu::Buffer& qkv, const gpu::Buffer& aux, const gpu::Buffer& rope,
                        const gpu::Buffer& pages, const AttnShape& s);
  // Split-K attention into part, merged into att by attention_combine; long passes of heads that
  // attention_flash serves write att directly (and the combine that follows skips them).
  GraphBuilder& attention(const gpu::Buffer& att, const gpu::Buffer& part, const gpu::Buffer& q,
                          const gpu::Buffer& k_cache, const gpu::Buffer& v_cache, const gpu::Buffer& pages,
                          const AttnShape& s);
  GraphBuilder& attention_combine(const gpu::Buffer& att, const gpu::Buffer& part, const AttnShape& s);
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
  GraphBuilder& copy_last_row(const gpu::Buffer& dst, const gpu::Buffer& src, uint32_t width);
  // Mixture of experts (graph_moe.cpp). moe_route: from the router's logits [token][experts] the k
  // experts of each token and their weights, ids and wts [token][k] (moe_route.wgsl). moe_matmul: for
  // every (token, expert) pair y[pair] = W_e x over the experts' stacked rows, e = ids[pair]
  // (matvec_moe.wgsl): gate|up (silu(gate) * up of x[token]) or down (of h[pair]). moe_combine:
  // y[t] = sum_j wts[t, j] ys[t, j].
  // plan: passes of several tokens also list the pairs by expert there (moe_sort.wgsl; plan_bytes), and
  // the experts' matvecs take each chosen expert once with all its pairs.
  GraphBuilder& moe_route(const gpu::Buffer& ids, const gpu::Buffer& wts, const gpu::Buffer& plan,
                          const gpu::Buffer& logits, uint32_t experts, uint32_t k, bool norm_topk);
  GraphBuilder& moe_matmul(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& ids, const gpu::Buffer& plan,
                           const Experts& e, bool gate_up, uint32_t k);
  // The plan: offsets, chosen experts and pairs by expert, then the experts' GEMM tiles (moe_sort.wgsl).
  static uint64_t moe_plan_bytes(uint32_t experts, uint32_t k, uint32_t max_tokens) {
    return (2ull * experts + 3 + (uint64_t)k * max_tokens + 3ull * moe_max_tiles(experts, k, max_tokens)) * 4;
  }
  // The most tiles of up to 64 pairs of one expert a pass of n tokens has: ceil(n k / 64) + min(E, n k).
  static uint32_t moe_max_tiles(uint32_t experts, uint32_t k, uint32_t n) {
    return (k * n + 63) / 64 + std::min(experts, k * n);
  }
  // The shortest pass whose experts run the GEMM (gemm_moe_tiles.wgsl) instead of the grouped matvec.
  static uint32_t moe_gemm_min_tokens(uint32_t experts, uint32_t k);
  GraphBuilder& moe_combine(const gpu::Buffer& y, const gpu::Buffer& ys, const gpu::Buffer& wts, uint32_t d, uint32_t k);
  // Gated DeltaNet (Qwen3.5, graph_deltanet.cpp): nk key heads of dk (q and k), nv value heads of dv;
  // value head h reads key head h % nk when tiled (llama.cpp's order), else h / (nv / nk) (HF's);
  // conv_kernel taps. The state buffers belong to the layer and carry over between passes; a pass at
  // pos0 == 0 starts from empty ones (the kernels ignore what they hold).
  struct DeltaShape {
    uint32_t nk, dk, nv, dv, conv_kernel;
    bool tiled;
    uint32_t channels() const { return 2 * nk * dk + nv * dv; }  // the conv's q | k | v
  };
  static uint64_t deltanet_conv_state_bytes(const DeltaShape& s) { return 4ull * (s.conv_kernel - 1) * s.channels(); }
  static uint64_t deltanet_scan_state_bytes(const DeltaShape& s) { return 4ull * s.nv * s.dk * s.dv; }
  // y [token][C] = silu(causal depthwise conv1d of qkv [token][C]) with taps w ([C][conv_kernel] f32,
  // ssm_conv1d); state [conv_kernel - 1][C] holds the inputs before the pass and is left holding its last.
  GraphBuilder& deltanet_conv(const gpu::Buffer& y, const gpu::Buffer& state, const gpu::Buffer& qkv,
                              const gpu::Buffer& w, const DeltaShape& s);
  // The gated delta rule over the pass's tokens in order: o [token][nv dv] from the conv's output x,
  // a and b ([token][nv]: ssm_alpha x, ssm_beta x), A (ssm_a) and dt_bias ([nv]); state [nv][dk][dv].
  GraphBuilder& deltanet_scan(const gpu::Buffer& o, const gpu::Buffer& state, const gpu::Buffer& x, const gpu::Buffer& a,
                              const gpu::Buffer& b, const gpu::Buffer& A, const gpu::Buffer& dt_bias, const DeltaShape& s);
  // y = rmsnorm(x) * w * silu(z) per head of d values, heads a token (w [d] shared by the heads).
  GraphBuilder& gated_rmsnorm(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& z, const gpu::Buffer& w,
                              uint32_t d, uint32_t heads, float eps);
  // Gated attention's output gate, in place: att [token][nh][hd] *= sigmoid(gate), element (t, h, d)
  // read at gate[t * stride + offset + h * head_stride + d] (attn_q's interleaved rows: stride
  // 2 nh hd, offset hd, head_stride 2 hd).
  GraphBuilder& sigmoid_gate(const gpu::Buffer& att, const gpu::Buffer& gate, uint32_t nh, uint32_t hd, uint32_t stride,
                             uint32_t offset, uint32_t head_stride);
  // Plans the fusions over the listed ops and makes them into the graph; the graph replays nothing
  // before (Graph::encode throws). The builder takes no more ops after it.
  void finish();

  // One-token passes that see up to kAttnDecodeMax positions: attention_decode.wgsl over every position
  // (graph_attention.cpp); passes of kAttnFlashMinTokens+ tokens: flash attention where it serves.
  static constexpr uint32_t kAttnDecodeMax = 512, kAttnFlashMinTokens = 2;

 private:
  // ---- The ops as listed: what each reads and writes (the fusion rules look only at these). ----
  struct EmbedArgs { const gpu::Buffer *x, *ids; const Matrix* table; };
  // rmsnorm: add false, sum = scratch, a = x, b = zeros (sum null: no matvec may make its x).
  struct NormArgs { const gpu::Buffer *y, *sum, *a, *b, *w; uint32_t d; float eps; bool add; };
  struct MatmulArgs { const gpu::Buffer *y, *x; const Matrix* w; uint32_t y_stride; bool one_token; };
  struct RopeArgs { const gpu::Buffer *q, *k_cache, *v_cache, *qkv, *aux, *rope, *pages; AttnShape s; };
  struct AttnArgs { const gpu::Buffer *att, *part, *q, *k_cache, *v_cache, *pages; AttnShape s; };
  struct CombineArgs { const gpu::Buffer *att, *part; AttnShape s; };
  struct CopyArgs { const gpu::Buffer *dst, *src; uint32_t width; };
  struct PickArgs { bool sample; const gpu::Buffer *ids, *tokens, *part, *logits, *params, *x; uint32_t vocab; const Matrix* table; };
  struct MoeRouteArgs { const gpu::Buffer *ids, *wts, *plan, *logits; uint32_t experts, k; bool norm_topk; };
  struct MoeMatmulArgs { const gpu::Buffer *y, *x, *ids, *plan; const Experts* e; bool gate_up; uint32_t k; };
  struct MoeCombineArgs { const gpu::Buffer *y, *ys, *wts; uint32_t d, k; };
  struct DeltaConvArgs { const gpu::Buffer *y, *state, *x, *w; DeltaShape s; };
  struct DeltaScanArgs { const gpu::Buffer *y, *state, *x, *a, *b, *A, *dt_bias; DeltaShape s; };
  struct GatedNormArgs { const gpu::Buffer *y, *x, *z, *w; uint32_t d, heads; float eps; };
  struct SigmoidGateArgs { const gpu::Buffer *y, *gate; uint32_t nh, hd, stride, offset, head_stride; };  // y: att
  using Args = std::variant<EmbedArgs, NormArgs, MatmulArgs, RopeArgs, AttnArgs, CombineArgs, CopyArgs, PickArgs,
                            MoeRouteArgs, MoeMatmulArgs, MoeCombineArgs, DeltaConvArgs, DeltaScanArgs, GatedNormArgs,
                            SigmoidGateArgs>;
  struct Node {
    Args args;
    const gpu::Buffer* step;
  };
  std::vector<Node> nodes_;
  template <class T>
  const T* args(size_t i) const { return i < nodes_.size() ? std::get_if<T>(&nodes_[i].args) : nullptr; }
  GraphBuilder& list(Args a);

  // ---- The fusions planned (graph_fuse.cpp): what each op does for or takes from its neighbours. ----
  static constexpr size_t kNone = SIZE_MAX;
  struct Fusion {
    // A producer of the x that the matmul after it reads as int8 units (a norm; the combine and the
    // attention before it): passes of up to q8_max tokens also store the units, passes of
    // f32_dead_from+ tokens only those (0: none).
    uint32_t q8_max = 0, f32_dead_from = 0;
    bool skip_one_token = false;  // a norm whose work the matvec after it does; the LM head's copy
    // Matmuls. quantize: x quantized to int8 units before it (quantize_q8.wgsl), except in one-token
    // passes where quantize_skip_one (the op before stores them there).
    bool quantize = false, quantize_skip_one = false;
    size_t norm = kNone;       // decode: x made in the matvec from this norm's inputs (x_q8_norm.wgsl)
    bool resid_in = false;     // ... whose residual sum the matvec before the norm stored (y_resid.wgsl)
    uint32_t prenorm_rows = 0; // ... with x * w and sums of x^2 per this many rows (y_resid_norm.wgsl)
    size_t resid_out = kNone;  // decode: this matvec stores the residual sum of that norm
    bool q8_out = false;       // decode: this matvec (its x made in it) stores y as int8 units too
    size_t rope_out = kNone;   // long decode steps: this matvec stores that rope_kv's heads (y_rope.wgsl)
    size_t h_from = kNone;     // long passes: h read as the int8 units that gated GEMM stored
    // rope_kv: long decode steps skip it (the QKV matvec did its work: rope_out); the attention after it
    // makes the queries in flash passes (rope_kv then only the keys and values), in short decode
    // steps and in split decode steps (the heads then).
    bool rope_in_matvec = false, q_in_flash = false, q_in_decode = false, q_in_decode_split = false;
    // The experts' matmuls: gate|up reads the int8 units its x's norm stored (no quantize_q8); the
    // down projection's one-token passes do this moe_combine's weighted sum themselves (by token).
    // One-token passes: gate|up also stores h as int8 units in hq/hs (moe_h_q8), which the down
    // projection reads (moe_h_made), and that one's quantize_q8 skips them.
    bool moe_x_made = false, moe_h_q8 = false, moe_h_made = false;
    size_t moe_combine = kNone;
  };
  std::vector<Fusion> fuse_;
  void plan();
  void fuse_norm_into_matvec(size_t i, const MatmulArgs& m);
  void fuse_int8_x(size_t i, const MatmulArgs& m);
  void fuse_gated_h(size_t i, const MatmulArgs& m);
  void fuse_rope_into_matvec(size_t i, const RopeArgs& r);
  void fuse_rope_into_attention(size_t i, const AttnArgs& a);
  void fuse_moe_x(size_t i, const MoeMatmulArgs& m);
  void fuse_moe_h(size_t i, const MoeMatmulArgs& m);
  void fuse_moe_combine(size_t i, const MoeCombineArgs& c);
  // Long passes: the experts' gate|up GEMM at node g stores h as int8 units for the down GEMM after it.
  bool moe_gemm_h(size_t g) const;
  bool reads_q8(const MatmulArgs& m) const;  // some part's matvec/GEMM reads x as int8 units
  bool read_after(size_t i, const gpu::Buffer* b) const;  // a node after i reads b before a norm rewrites it
  static bool all_q8(const Matrix& w);
  uint32_t q8_max(const MatmulArgs& m) const { return m.one_token ? 1 : q8_max_; }
  bool emits_q8(size_t i, const gpu::Buffer& x) const;  // node i can store x as int8 units
  bool gated_h_capable(const MatmulArgs& m) const;
  // How a part's one-token matvec spreads over a workgroup: lanes per group, rows per lane, groups
  // (graph_matmul.cpp). from_norm: the matrix's x is made from a norm; fused: by this part's matvec.
  struct MatvecShape { uint32_t lanes, rpl, groups; };
  MatvecShape matvec_shape(const MatrixPart& p, const Matrix& w, bool from_norm, bool fused) const;
  // The second part a two-type QKV's first part takes in its one-token dispatch (matvec.wgsl WEIGHT2).
  static const MatrixPart* second_part(const Matrix& w);

  // ---- Lowering: each node's op(s) and variants, given its Fusion. ----
  size_t node_ = 0;                // the node being lowered
  std::vector<size_t> last_op_;    // each lowered node's last op
  void lower(size_t i);
  void lower_embed(const EmbedArgs& a);
  void lower_norm(size_t i, const NormArgs& a);
  void lower_matmul(size_t i, const MatmulArgs& a);
  void lower_rope(size_t i, const RopeArgs& a);
  void lower_attention(size_t i, const AttnArgs& a);
  void lower_combine(size_t i, const CombineArgs& a);
  void lower_pick(const PickArgs& a);
  void lower_copy(size_t i, const CopyArgs& a);
  void lower_moe_route(const MoeRouteArgs& a);
  void lower_moe_matmul(size_t i, const MoeMatmulArgs& a);
  void add_moe_gemm(size_t i, const MoeMatmulArgs& a, MoeMatmulOp& op, const std::string& snippet, bool int8_x,
                    size_t quantize_op);
  void lower_moe_combine(size_t i, const MoeCombineArgs& a);
  void lower_deltanet_conv(const DeltaConvArgs& a);
  void lower_deltanet_scan(const DeltaScanArgs& a);
  void lower_gated_rmsnorm(const GatedNormArgs& a);
  void lower_sigmoid_gate(const SigmoidGateArgs& a);
  // The long passes' h fusion of a gated GEMM (node g) and the matmul on h just made.
  void lower_gated_h(size_t g, const MatmulArgs& down, size_t quantize_op);
  // The gated int8 GEMM's h_out_q8 key and bindings, kept from its lowering for lower_gated_h.
  struct GatedGemm {
    size_t op;
    uint32_t rows;
    gpu::KernelKey key;
    std::vector<gpu::Binding> bindings;
  };
  std::map<size_t, GatedGemm> gated_gemm_;
  // The variants of a producer's kernel (key bound to b) that also store its output x as int8 units.
  Variant q8_variant(gpu::KernelKey key, std::vector<gpu::Binding> b, const std::string& label, const std::string& role);
  void add_quantize_q8(const gpu::Buffer& x, uint32_t cols, bool one_token, uint32_t max_tokens);
  void add_split_k(const gpu::Buffer& y, const gpu::Buffer& x, const MatrixPart& p, const Matrix& w,
                   const std::map<std::string, double>& gemm_constants, uint32_t row_tiles);
  void add_reduce(const gpu::Buffer& y, const MatrixPart& p, const Matrix& w, double y_stride, uint32_t ksplit);
  void add_gemm_wide(const gpu::Buffer& y, const gpu::Buffer& x, const MatrixPart& p, const Matrix& w,
                     const std::map<std::string, double>& gemm_constants);
  void add_q8_split_k(const gpu::Buffer& y, const MatrixPart& p, const Matrix& w, const gpu::KernelKey& key,
                      uint32_t row_tiles, uint32_t max_tokens);
  std::string reduce_snippet() const;
  std::string pack8_snippet() const;
  void add_picker(gpu::KernelKey key, std::vector<gpu::Binding> b, const gpu::Buffer& x, const Matrix& table);

  // ---- Configuration (the use_* calls). ----
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
  bool rope_in_decode_ = false;
  const gpu::Buffer* prenorm_xw_ = nullptr;
  const gpu::Buffer* prenorm_ss_ = nullptr;
  bool rope_in_flash_ = false;
  bool subgroups_ = true;
  bool finished_ = false;

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
