// The mixture-of-experts ops of GraphBuilder (graph.h): the router's choice of experts per token
// (moe_route.wgsl), the experts' matvecs over their stacked rows (matvec_moe.wgsl), and the weighted
// sum of their outputs (moe_combine.wgsl). A pass of n tokens runs n x k (token, expert) pairs, each
// reading only its expert's rows: decode reads k of the experts, not all of them.
#include <algorithm>

#include "engine/graph.h"
#include "model/model_error.h"

namespace ztvm {

// The experts' GEMM (gemm_q8.wgsl on gemm_moe_tiles.wgsl) against the grouped matvec: a tile of 64
// pairs decodes each weight unit once for all of them, where the matvec decodes it again for each
// pair (TT at a time, from the cache), but a tile costs its 64 rows' staging however few pairs it
// has (its products follow the live pairs, by 16s). Passes where the experts average
// kMoeGemmMinPairs pairs (n k >= 4 E) take the GEMM: Qwen3-30B-A3B's 8 of 128 from 64 tokens.
// Unmeasured on a GPU so far (the rule is the lead's to tune).
static constexpr uint32_t kMoeGemmMinPairs = 4;
// gemm_q8's workgroup memory a step of four units (graph_matmul.cpp kGemmQ8StepBytes: 64 weight and
// 64 x units of 40 bytes), and the 1 KB table of the types whose levels are looked up.
static constexpr uint32_t kMoeGemmStepBytes = 64 * 40 + 64 * 40, kLevelTableBytes = 256 * 4;

uint32_t GraphBuilder::moe_gemm_min_tokens(uint32_t experts, uint32_t k) {
  return std::max(2u, (kMoeGemmMinPairs * experts + k - 1) / k);
}

GraphBuilder& GraphBuilder::moe_route(const gpu::Buffer& ids, const gpu::Buffer& wts, const gpu::Buffer& plan,
                                      const gpu::Buffer& logits, uint32_t experts, uint32_t k, bool norm_topk) {
  if (experts > 1024 || k == 0 || k > experts)
    throw ModelError("experts: " + std::to_string(k) + " of " + std::to_string(experts) +
                     " a token (the router kernel takes up to 1,024 experts)");
  return list(MoeRouteArgs{&ids, &wts, &plan, &logits, experts, k, norm_topk});
}

GraphBuilder& GraphBuilder::moe_matmul(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& ids,
                                       const gpu::Buffer& plan, const Experts& e, bool gate_up, uint32_t k) {
  return list(MoeMatmulArgs{&y, &x, &ids, &plan, &e, gate_up, k});
}

GraphBuilder& GraphBuilder::moe_combine(const gpu::Buffer& y, const gpu::Buffer& ys, const gpu::Buffer& wts, uint32_t d,
                                        uint32_t k) {
  return list(MoeCombineArgs{&y, &ys, &wts, d, k});
}

// The route a workgroup a token; in passes of several tokens then the plan of the pairs by expert.
void GraphBuilder::lower_moe_route(const MoeRouteArgs& a) {
  const gpu::KernelKey key{"moe_route", {}, {{"E", a.experts}, {"K", a.k}, {"NORM_TOPK", a.norm_topk ? 1 : 0}}};
  add<RowOp>(key, {*a.ids, *a.wts, *a.logits, *step_});
  add<FixedOp>({"moe_sort", {}, {{"E", a.experts}, {"K", a.k}}}, {*a.plan, *a.ids, *step_}).skip_one_token = true;
}

// gate|up: ROWS = ff per half, x = the token's row (k pairs share it); down: ROWS = hidden, x = the
// pair's h. Quantized experts read x as int8 units (quantize_q8 first, over the whole pass), as the
// dense matvecs do; F32/F16/BF16 experts read it as f32.
void GraphBuilder::lower_moe_matmul(size_t i, const MoeMatmulArgs& a) {
  const Experts& e = *a.e;
  const GgmlType type = a.gate_up ? e.gate_up_type : e.down_type;
  const uint32_t rows = a.gate_up ? e.ff : e.hidden, cols = a.gate_up ? e.hidden : e.ff;
  const uint32_t x_per_pair = a.gate_up ? a.k : 1, x_cols = a.gate_up ? cols : a.k * cols;  // per token
  if (cols % 32 != 0)
    throw ModelError("experts of " + std::to_string(cols) + " columns: the expert matvec takes whole 32-column units");
  const bool int8_x = xq_ && q8_x_type(type);
  size_t quantize_op = kNone;  // the quantize_q8 of x just added
  const bool float_type = type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 || type == GgmlType::Q2_K;
  if (!int8_x && !float_type)
    throw ModelError(std::string("experts of type ") + type_name(type) + ": no expert matvec reads them on f32 x");
  if (int8_x) {
    const uint64_t units = (uint64_t)q8_max_ * x_cols / 32;
    if (xq_->size() < units * 32 || xs_->size() < units * 8)
      throw ModelError("int8 x buffers hold " + std::to_string(xq_->size()) + " bytes, " + std::to_string(units * 32) + " needed");
    if (!fuse_[i].moe_x_made) {
      add_quantize_q8(*a.x, x_cols, true, q8_max_);  // every pass (always_single) ...
      g_.ops.back()->skip_one_token = fuse_[i].moe_h_made;  // ... but where gate|up stored h's units
      quantize_op = last();
    }
  }
  // As a plain one-token matvec of these rows and columns (matvec_shape).
  MatrixPart part;
  part.type = type, part.rows = rows;
  Matrix m;
  m.rows = rows, m.cols = cols, m.gated = a.gate_up;
  const MatvecShape sh = matvec_shape(part, m, false, false);
  const uint32_t row_groups = (rows + sh.groups * sh.rpl - 1) / (sh.groups * sh.rpl);
  const std::string snippet = weight_snippet(type);
  std::map<std::string, double> c = {{"ROWS", rows}, {"COLS", cols}, {"E", e.count}, {"EXPERT_ROWS", a.gate_up ? 2 * rows : rows},
                                     {"K", a.k}, {"X_PER_PAIR", x_per_pair}, {"ROW_GROUPS", row_groups},
                                     {"RPL", sh.rpl}, {"LANES", sh.lanes}, {"GROUPS", sh.groups},
                                     {"WG", sh.groups * sh.lanes}, {"Y_STRIDE", rows}};
  if (a.gate_up) c["GATED"] = 1;
  const gpu::KernelKey key{"matvec_moe",
                           {{"WEIGHT", snippet},
                            {"DOT", (int8_x ? "dotq8_" : "dot_") + snippet.substr(7)},
                            {"XIN", int8_x ? "x_q8" : "x_f32"},
                            {"PACK8", pack8_snippet()}},
                           c};
  const gpu::Buffer& w = a.gate_up ? e.gate_up : e.down;
  // One-token passes read x's units from hq/hs where gate|up stored them there (moe_h_made).
  auto bind = [&](const gpu::Buffer& y, const gpu::Buffer& list, bool one_token) {
    const bool h = one_token && fuse_[i].moe_h_made;
    return int8_x ? std::vector<gpu::Binding>{y, h ? *hq_ : *xq_, w, h ? *hs_ : *xs_, list, *step_}
                  : std::vector<gpu::Binding>{y, *a.x, w, list, *step_};
  };
  MoeMatmulOp& op = add<MoeMatmulOp>(key, bind(*a.y, *a.ids, true));
  op.k = a.k, op.experts = e.count, op.row_groups = op.main_row_groups = row_groups;
  op.bytes_per_expert = w.size() / e.count;
  op.main.role = (int8_x ? "matvec_moe_q8_" : "matvec_moe_") + snippet.substr(7) + (a.gate_up ? "_gated" : "");
  // Grouped: TT pairs at a time where their 2 x RPL x TT sums fit the 32 and the reduction's
  // workgroup memory stays within 16 KB (2 RPL TT (WG + 1) floats).
  gpu::KernelKey gk = key;
  gk.constants["GROUPED"] = 1;
  uint32_t tt = 4;
  while (tt > 1 && (2 * sh.rpl * tt > 32 || 2ull * sh.rpl * tt * (sh.groups * sh.lanes + 1) * 4 > 16384)) tt /= 2;
  gk.constants["TT"] = tt;
  op.grouped = variant(gk, bind(*a.y, *a.plan, false), "matvec_moe_grouped:" + a.y->label(), op.main.role + "_grouped");
  add_moe_gemm(i, a, op, snippet, int8_x, quantize_op);
  if (fuse_[i].moe_h_q8) {
    // By pair, storing h's int8 units: 32 rows a workgroup (8 groups of 4), the unit x_out_q8 packs.
    gpu::KernelKey qk = key;
    qk.includes["XOUT"] = "x_out_q8h";
    qk.constants["RPL"] = 4, qk.constants["GROUPS"] = 8, qk.constants["LANES"] = 32, qk.constants["WG"] = 256;
    op.main_row_groups = rows / 32;
    qk.constants["ROW_GROUPS"] = op.main_row_groups;
    std::vector<gpu::Binding> b = bind(*a.y, *a.ids, true);
    b.push_back(*hq_), b.push_back(*hs_);
    op.main = variant(qk, b, "matvec_moe_q8h:" + a.y->label(), op.main.role + "_q8");
  }
  if (fuse_[i].moe_combine == kNone) return;
  // By token (one-token passes): the K pairs' sums of RPL rows each, 2 RPL K (WG + 1) floats of
  // workgroup memory within 16 KB; the output is the combine's, each pair weighted by wts.
  const MoeCombineArgs& cb = std::get<MoeCombineArgs>(nodes_[fuse_[i].moe_combine].args);
  uint32_t rpl = sh.rpl;
  while (rpl > 1 && (rpl * a.k > 32 || 2ull * rpl * a.k * (sh.groups * sh.lanes + 1) * 4 > 16384)) rpl /= 2;
  gpu::KernelKey tk = key;
  tk.includes["WTS"] = "moe_wts_binding";
  tk.constants["TT"] = a.k, tk.constants["RPL"] = rpl;
  op.main_row_groups = (rows + sh.groups * rpl - 1) / (sh.groups * rpl);
  tk.constants["ROW_GROUPS"] = op.main_row_groups;
  std::vector<gpu::Binding> b = bind(*cb.y, *a.ids, true);
  b.push_back(*cb.wts);
  op.main = variant(tk, b, "matvec_moe_combine:" + cb.y->label(), op.main.role + "_combine");
  op.by_token = true;
}

// Whether the experts' gate|up at node g and the down projection after it run the GEMM in the same
// passes with h kept as int8 units between them (h_out_q8.wgsl; no quantize_q8, no f32 h): both
// types int8, four units a step (h_out_q8's tiles), and every pass's n k pairs of h fit hq/hs.
bool GraphBuilder::moe_gemm_h(size_t g) const {
  const MoeMatmulArgs* up = args<MoeMatmulArgs>(g);
  const MoeMatmulArgs* down = args<MoeMatmulArgs>(g + 1);
  if (!up || !down || !up->gate_up || down->gate_up || down->x != up->y || down->e != up->e || !xq_ || !hq_ || !q8_gemm_)
    return false;
  const Experts& e = *up->e;
  const uint64_t h_bytes = (uint64_t)q8_max_ * up->k * e.ff;
  return q8_x_type(e.gate_up_type) && q8_x_type(e.down_type) && e.ff % 32 == 0 &&
         q8_max_ >= moe_gemm_min_tokens(e.count, up->k) &&
         k_.device().limits().maxComputeWorkgroupStorageSize >= kMoeGemmStepBytes * 4 + kLevelTableBytes &&
         h_bytes <= std::min(hq_->size(), hs_->size() / 8 * 32);
}

// The GEMM variant of the experts' matmul just made (op), for passes of moe_gemm_min_tokens+: a
// workgroup a (tile, row tile), ROWS = the expert's rows (per half when gated) as a dense gemm_q8.
void GraphBuilder::add_moe_gemm(size_t i, const MoeMatmulArgs& a, MoeMatmulOp& op, const std::string& snippet,
                                bool int8_x, size_t quantize_op) {
  const Experts& e = *a.e;
  const GgmlType type = a.gate_up ? e.gate_up_type : e.down_type;
  const uint32_t rows = a.gate_up ? e.ff : e.hidden, cols = a.gate_up ? e.hidden : e.ff;
  const uint32_t gemm_min = moe_gemm_min_tokens(e.count, a.k);
  if (!int8_x || !q8_gemm_ || q8_max_ < gemm_min) return;
  const uint32_t wg_bytes = k_.device().limits().maxComputeWorkgroupStorageSize;
  const bool table = type == GgmlType::IQ4_NL || type == GgmlType::IQ4_XS || type == GgmlType::MXFP4;
  std::map<std::string, double> c = {{"ROWS", rows}, {"COLS", cols}, {"Y_STRIDE", rows}, {"E", e.count},
                                     {"K", a.k}, {"EXPERT_ROWS", a.gate_up ? 2 * rows : rows},
                                     {"X_PER_PAIR", a.gate_up ? a.k : 1}};
  c["UPS"] = wg_bytes >= kMoeGemmStepBytes * 4 + (table ? kLevelTableBytes : 0) ? 4 : 2;
  if (a.gate_up) c["GATED"] = 1;
  if (type == GgmlType::Q4_K || type == GgmlType::Q6_K || type == GgmlType::Q5_K || type == GgmlType::Q3_K)
    c["LOWREG"] = 1;  // as the dense gemm_q8 (graph_matmul.cpp)
  gpu::KernelKey key{"gemm_q8", {{"WEIGHT", snippet}, {"DOT", "dotq8_" + snippet.substr(7)}, {"TILES", "gemm_moe_tiles"}}, c};
  const gpu::Buffer& w = a.gate_up ? e.gate_up : e.down;
  const bool h_out = a.gate_up && moe_gemm_h(i), h_in = !a.gate_up && i > 0 && moe_gemm_h(i - 1);
  if (h_out) key.includes["HOUT"] = "h_out_q8";
  std::vector<gpu::Binding> b = {*a.y, h_in ? *hq_ : *xq_, w, h_in ? *hs_ : *xs_, *step_, nullptr, nullptr, *a.plan};
  if (h_out) b[5] = *hq_, b[6] = *hs_;
  const std::string role = "gemm_moe_q8_" + snippet.substr(7) + (a.gate_up ? "_gated" : "") + (h_out ? "_h" : "");
  op.gemm = variant(key, b, "gemm_moe:" + a.y->label(), role);
  op.gemm_min = gemm_min;
  op.gemm_row_tiles = (rows + (a.gate_up ? 31 : 63)) / (a.gate_up ? 32 : 64);
  // The down GEMM reads the units gate|up stored: its quantize_q8 runs only in the grouped passes.
  if (h_in && quantize_op != kNone) g_.op<RowOp>(quantize_op).skip_min = gemm_min;
}

void GraphBuilder::lower_moe_combine(size_t i, const MoeCombineArgs& a) {
  RowOp& op = add<RowOp>({"moe_combine", {}, {{"D", a.d}, {"K", a.k}}}, {*a.y, *a.ys, *a.wts, *step_});
  op.a = (a.d + 63) / 64;
  op.skip_one_token = fuse_[i].skip_one_token;
}

}  // namespace ztvm
