// The GEMM variants of GraphBuilder (graph.h) that prefill's passes choose between per pass length:
// split-K with its gemm_reduce (the f32 GEMM and gemm_q8), and the f32 GEMM's 8 x 4 micro-tile. Each
// is added to the gemm dispatch just made by lower_matmul (graph_matmul.cpp), with the rule for when it pays.
#include <algorithm>
#include <map>
#include <string>

#include "engine/graph.h"
#include "model/model_error.h"

namespace ztvm {

// Split-K GEMM (bench/EXPERIMENTS.md): a chunk of <= 64 tokens is one token tile, so the unsplit grid is
// just the row tiles, 32 for a 2048-row matrix against the H200's 132 SMs. Matrices under
// kSplitBelowTiles tiles (2 per SM) split K so the grid nears kSplitGroups (~4 per SM), each split
// keeping at least kSplitMinUnits 32-column steps so the partials' traffic stays small beside the work.
// Measured on the H200 (bench/EXPERIMENTS.md): 528 / 2048 / 4 / 32 beat 264 / 512 / 8 / 16 by 13% on the
// Qwen3-4B 35-token prompt (its 304-tile gate|up now splits too) and by 1.5% on Llama-3.2-1B.
static constexpr uint32_t kSplitBelowTiles = 528, kSplitGroups = 2048, kSplitMinUnits = 4, kSplitMaxK = 32;
static constexpr uint32_t kGemmTileVirtualRows = 64, kReduceRows = 256;
static constexpr uint32_t kGemmWideBytes = 128 * 32 * 4 + 64 * 32 * 4;  // gemm.wgsl's tiles at RQ 2
static constexpr double kGemmWideGain = 1.12;  // a wide workgroup's speed over two narrow ones' (H200)
static constexpr uint32_t kGemmWideMaxTokens = 4096;  // the longest pass (--chunk's limit)

void GraphBuilder::use_split_k(const gpu::Buffer& scratch, uint32_t max_tokens, uint32_t ksplit) {
  if (max_tokens > kSplitMaxTokens) throw ModelError("split-K serves one token tile, not " + std::to_string(max_tokens));
  split_scratch_ = &scratch, split_max_ = max_tokens, split_force_ = ksplit;
}

uint64_t GraphBuilder::split_k_scratch_bytes(uint32_t max_tokens) {
  // choose_ksplit keeps ksplit x row tiles <= kSplitGroups, and a tile is 64 virtual rows (gate|up
  // counted twice), so ksplit x virtual rows never exceeds kSplitGroups x 64.
  return (uint64_t)kSplitGroups * kGemmTileVirtualRows * max_tokens * 4;
}

// gemm.wgsl's 8 x 4 micro-tile (RQ 2: 128-row tiles, 24 KB of workgroup memory, where the device
// has it) beside the 4 x 4 one, for the passes where its grid fills the GPU's waves about as well
// (gemm_wide_pays). On the H200 a workgroup of it does a tile's work ~12% faster, but a grid of half
// as many workgroups can leave more of the last wave idle: Qwen3-4B's 2,560-row attn_output and
// ffn_down at 1,024 tokens are 640 narrow workgroups (81% of three waves) or 320 wide ones (61% of
// two), and took the wide tiles 5.6% slower over the pass. With this rule: F16 prefill at 1,024
// tokens +9.9% (Llama-3.2-1B) and +3.1% (Qwen3-4B), 512 tokens +5.0% / +0.5% (bench/EXPERIMENTS.md).
void GraphBuilder::add_gemm_wide(const gpu::Buffer& y, const gpu::Buffer& x, const MatrixPart& p, const Matrix& w,
                                 const std::map<std::string, double>& gemm_constants) {
  if (k_.device().limits().maxComputeWorkgroupStorageSize < kGemmWideBytes) return;
  MatmulOp& d = g_.op<MatmulOp>(last());
  const uint32_t wide_a = (p.rows + (w.gated ? 63 : 127)) / (w.gated ? 64 : 128);
  bool pays = gemm_wide_force_;  // no pipeline where no pass would run it (small matrices)
  for (uint32_t t = 64; t <= kGemmWideMaxTokens && !pays; t += 64) pays = gemm_wide_pays(d.a, wide_a, t);
  if (!pays) return;
  d.wide = variant({"gemm", {{"WEIGHT", weight_snippet(p.type)}, {"TILE", "gemm_rq2"}}, gemm_constants},
                   {y, x, p.buf, *step_}, "gemm_wide:" + y.label(), d.main.role + "_wide");
  d.wide_a = wide_a;
  d.wide_always = gemm_wide_force_;
}

bool GraphBuilder::gemm_wide_pays(uint32_t narrow_tiles, uint32_t wide_tiles, uint32_t tokens) {
  const uint64_t t = (tokens + 63) / 64;
  auto filled = [](uint64_t g) { return (double)g / (((g + kQ8GemmSlots - 1) / kQ8GemmSlots) * kQ8GemmSlots); };
  return filled(wide_tiles * t) * kGemmWideGain >= filled(narrow_tiles * t);
}

uint32_t GraphBuilder::choose_ksplit(uint32_t row_tiles, uint32_t units) {
  if (row_tiles >= kSplitBelowTiles) return 1;
  return std::max(1u, std::min({kSplitMaxK, kSplitGroups / row_tiles, units / kSplitMinUnits}));
}

// Adds the split-K variant to the gemm dispatch just added for part p (MatmulOp::split).
void GraphBuilder::add_split_k(const gpu::Buffer& y, const gpu::Buffer& x, const MatrixPart& p, const Matrix& w,
                               const std::map<std::string, double>& gemm_constants, uint32_t row_tiles) {
  const uint32_t units = (w.cols + 31) / 32;
  const uint32_t ksplit = std::min(split_force_ ? split_force_ : choose_ksplit(row_tiles, units), units);
  if (ksplit < 2) return;
  const uint64_t vrows = w.gated ? 2ull * p.rows : p.rows;
  const uint64_t need = ksplit * (uint64_t)split_max_ * vrows * 4;
  if (need > split_scratch_->size())
    throw ModelError("split-K scratch '" + split_scratch_->label() + "' holds " +
                     std::to_string(split_scratch_->size()) + " bytes, " + std::to_string(need) + " needed");
  std::map<std::string, double> c = gemm_constants;
  c["KSPLIT"] = ksplit;
  const std::string snippet = weight_snippet(p.type);
  MatmulOp& d = g_.op<MatmulOp>(last());
  // binds the scratch where the unsplit kernel binds y
  d.split = variant({"gemm", {{"WEIGHT", snippet}}, c}, {*split_scratch_, x, p.buf, *step_}, "gemm_split:" + y.label(),
                    "gemm_split_" + snippet.substr(7));
  d.ksplit = ksplit, d.split_max = split_max_;
  add_reduce(y, p, w, c.at("Y_STRIDE"), ksplit);
}

// gemm_reduce.wgsl after the split variant of the gemm dispatch just added.
void GraphBuilder::add_reduce(const gpu::Buffer& y, const MatrixPart& p, const Matrix& w, double y_stride,
                              uint32_t ksplit) {
  std::map<std::string, double> rc = {{"ROWS", p.rows}, {"KSPLIT", ksplit}, {"Y_OFFSET", p.row0}, {"Y_STRIDE", y_stride}};
  if (w.gated) rc["GATED"] = 1;
  MatmulOp& d = g_.op<MatmulOp>(last());
  d.reduce = variant({"gemm_reduce", {}, rc}, {y, *split_scratch_, *step_}, "gemm_reduce:" + y.label(), "gemm_reduce");
  d.reduce_blocks = (p.rows + kReduceRows - 1) / kReduceRows;
}

// gemm_q8.wgsl's split-K variant, for passes of up to kQ8SplitMaxTokens tokens (8 token tiles). Its grid
// is row tiles x token tiles, and a grid just over a multiple of what the GPU runs at once leaves most
// of it idle in the last wave: the H200 runs kQ8GemmSlots workgroups at once (132 SMs x 2), so
// Qwen3-4B's 40-tile attn_output and ffn_down (320 workgroups at 512 tokens) fill 61% of their two
// waves. K in two halves (partials, then gemm_reduce.wgsl) fills 81% of three; that is taken where it
// fills kQ8SplitGain more than the unsplit grid. On the H200 (bench/EXPERIMENTS.md) two halves on the
// 4B's 512-token prefill gained 5-6%, four lost 2% against two, and splitting Llama-3.2-1B's matrices
// whose 256 workgroups already fill one wave lost 3%.
uint32_t GraphBuilder::choose_q8_ksplit(uint32_t row_tiles, uint32_t tokens) {
  const uint64_t groups = (uint64_t)row_tiles * ((tokens + 63) / 64);
  auto filled = [](uint64_t g) { return (double)g / (((g + kQ8GemmSlots - 1) / kQ8GemmSlots) * kQ8GemmSlots); };
  return filled(2 * groups) > filled(groups) + kQ8SplitGain ? 2 : 1;
}

void GraphBuilder::add_q8_split_k(const gpu::Buffer& y, const MatrixPart& p, const Matrix& w,
                                  const gpu::KernelKey& key, uint32_t row_tiles, uint32_t max_tokens) {
  const uint32_t split_max = std::min(max_tokens, kQ8SplitMaxTokens);
  if (split_max <= kQ8MatvecMaxTokens) return;  // shorter passes take the token-group matvec
  const uint32_t steps = (w.cols / 32 + (uint32_t)key.constants.at("UPS") - 1) / (uint32_t)key.constants.at("UPS");
  uint32_t ksplit = choose_q8_ksplit(row_tiles, split_max);
  if (split_force_) ksplit = std::min(split_force_, steps);  // tests: any split, uneven ranges too
  const uint64_t need = (uint64_t)ksplit * ((split_max + 63) / 64) * 64 * (w.gated ? 2ull * p.rows : p.rows) * 4;
  if (ksplit < 2 || need > split_scratch_->size()) return;
  gpu::KernelKey sk = key;
  sk.constants["KSPLIT"] = ksplit;
  MatmulOp& d = g_.op<MatmulOp>(last());
  d.split = variant(sk, {*split_scratch_, *xq_, p.buf, *xs_, *step_}, "gemm_q8_split:" + y.label(), d.main.role + "_split");
  d.ksplit = ksplit, d.split_max = split_max;
  add_reduce(y, p, w, key.constants.at("Y_STRIDE"), ksplit);
}

}  // namespace ztvm
