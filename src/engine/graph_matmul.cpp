// The matmul of GraphBuilder (graph.h) made into ops: for each part of the matrix the GEMM (f32 or
// int8 x) with the variants that serve shorter passes (graph_gemm.cpp), and the matvecs of decode and
// of short passes, each in the form its planned fusions ask for (graph_fuse.cpp).
#include <algorithm>
#include <stdexcept>

#include "engine/graph.h"
#include "model/model_error.h"

namespace ztvm {

// gemm_q8.wgsl's workgroup memory per unit of a step: 64 weight units and 64 x units of 40 bytes.
static constexpr uint32_t kGemmQ8StepBytes = 64 * 40 + 64 * 40;
// A decode matvec that makes its x from the residual step (x_q8_norm.wgsl) serves kNormRows rows per
// workgroup: each workgroup reads the whole residual, so few of them (H200: 32 beat 16 and 64).
static constexpr uint32_t kNormRows = 32;

const MatrixPart* GraphBuilder::second_part(const Matrix& w) {
  if (w.parts.size() != 2 || w.gated || !q8_x_type(w.parts[0].type) || !q8_x_type(w.parts[1].type) ||
      w.parts[1].row0 != w.parts[0].rows || w.parts[0].rows % 4 != 0)
    return nullptr;
  return &w.parts[1];
}

// Rows per lane group: enough workgroups to fill a large GPU on short matrices, x reuse on long ones.
// Thresholds and lane counts measured on the H200 (bench/EXPERIMENTS.md): x reuse pays from 2048 rows;
// 128 lanes on rows of 4,096+ columns take them in fewer dependent turns (+0.5..2% decode over 64,
// 2026-12-01). Q4_0: half the lanes when that keeps them busier to the last turn. 2,560 columns are
// 80 units, which leave half of 32 lanes idle in their third turn (+2.7% decode on Qwen3-4B Q4_0;
// Q4_K and Q6_K, with more decoding per unit, lost 1-2% with fewer lanes: bench/EXPERIMENTS.md). Q6_K
// too on an LM head's many rows, which fill the GPU on fewer lanes (+0.8% decode on Qwen3-4B Q4_0).
// Not where the matvec makes its own x (from_norm): half the lanes is half the threads to pack x in
// each workgroup's prologue (gate|up: 5 turns instead of 3); full lanes won +2.9..3.7% decode on
// Qwen3-4B Q4_0 once packing took 8 threads a unit.
// fused: this part's one-token matvec makes x itself (the first part of a matrix whose x is from_norm).
// x made per workgroup: kNormRows rows each, so that work is shared by many rows; 48 on matrices past
// 128 such workgroups that are not gated (gated ones emit 32-row units). H200: Qwen3-4B's 6,144-row
// QKV in 128 workgroups of 48 rows rather than 192 of 32, +1.4% decode; on the 1B's 3,072 rows 24 and
// 16 lost 0-1% (bench/EXPERIMENTS.md). Plain one-token matvecs: two lane groups a workgroup, or one
// where a group is one warp of 32 lanes (H200: +3.0% decode on Llama-3.2-1B Q4_0, +2.6% on Q4_K_M,
// whose o projection and LM head are such; more groups a workgroup lost 1-9%, one group of 16 or 128
// lanes 1.5-1.9%: bench/EXPERIMENTS.md).
GraphBuilder::MatvecShape GraphBuilder::matvec_shape(const MatrixPart& p, const Matrix& w, bool from_norm,
                                                     bool fused) const {
  const uint32_t turns = w.cols / 32;
  auto busy = [&](uint32_t l) { return (double)turns / (l * ((turns + l - 1) / l)); };
  uint32_t lanes = w.cols >= 4096 ? 128 : 32;
  // A few hundred rows (a MoE router, 128 x 2048 F32 at 95 GB/s on the H100 with 32): too few
  // lanes in flight to cover the memory's latency, so a lane a unit where there are 64 of them.
  if (p.rows <= 512 && lanes == 32 && turns >= 64) lanes = 64;
  const bool halve = !from_norm && (p.type == GgmlType::Q4_0 || (p.type == GgmlType::Q6_K && p.rows >= 8192));
  if (halve && lanes <= 64 && busy(lanes / 2) > busy(lanes) + 0.1) lanes /= 2;
  const uint32_t rpl = p.rows >= 8192 ? 4 : p.rows >= 2048 ? 2 : 1;
  const uint32_t norm_rows = !w.gated && p.rows > 128 * kNormRows ? 48 : kNormRows;
  const uint32_t groups = fused ? norm_rows / rpl : lanes == 32 ? 1 : 2;
  return {groups * lanes > 1024 ? 32 : lanes, rpl, groups};
}

// A gated matrix whose long passes run gemm_q8 with four units a step and whose h fits hq/hs.
// Workgroup memory the weight snippet of type t takes for itself: the 256-entry table of code pairs
// of the types whose levels are looked up (IQ4_NL, IQ4_XS, MXFP4: w_prologue in weight_bits.wgsl).
static uint32_t level_table_bytes(GgmlType t) {
  return t == GgmlType::IQ4_NL || t == GgmlType::IQ4_XS || t == GgmlType::MXFP4 ? 256 * 4 : 0;
}

bool GraphBuilder::gated_h_capable(const MatmulArgs& m) const {
  const Matrix& w = *m.w;
  if (!hq_ || !w.gated || w.parts.size() != 1 || !reads_q8(m) || !q8_gemm_ || q8_max(m) <= kQ8MatvecMaxTokens) return false;
  const MatrixPart& p = w.parts[0];
  return q8_x_type(p.type) && p.rows % 32 == 0 && p.row0 == 0 &&
         k_.device().limits().maxComputeWorkgroupStorageSize >= kGemmQ8StepBytes * 4 + level_table_bytes(p.type) &&
         (uint64_t)q8_max(m) * p.rows <= std::min(hq_->size(), hs_->size() / 8 * 32);
}

void GraphBuilder::lower_matmul(size_t i, const MatmulArgs& a) {
  const Fusion& f = fuse_[i];
  const gpu::Buffer &y = *a.y, &x = *a.x;
  const Matrix& w = *a.w;
  const bool one_token = a.one_token, q8 = reads_q8(a);
  const uint32_t q8_max = this->q8_max(a);  // the longest pass that reads int8 x
  // Decode: the matvec makes x from the add_rmsnorm's inputs itself (x_q8_norm.wgsl), and one-token
  // passes skip that dispatch. Its workgroup memory holds 1.25 bytes per column. A matrix of parts of
  // several int8 types (a Q4_K_M QKV): the first part's matvec does, and also stores x's int8 units
  // (x_emit_q8.wgsl) for the others, which read them as after add_rmsnorm_q8.
  const NormArgs* norm = f.norm != kNone ? args<NormArgs>(f.norm) : nullptr;
  // The x_q8_norm's inputs. Where the matvec before the norm stores the residual step's sum (resid_in),
  // this one reads the sum alone (x_two_none.wgsl): each of its workgroups reads two vectors instead of
  // three, and none stores the sum (nin.sum and nin.b are then left unbound).
  struct { const gpu::Buffer *sum, *a, *b; } nin{};
  if (norm) nin = {norm->sum, norm->a, norm->b};
  if (norm && f.resid_in) nin = {nullptr, norm->sum, nullptr};
  const uint32_t prenorm_rows = f.prenorm_rows;
  // This plain matvec stores the sum of the residual step of the norm after it (resid_out).
  const NormArgs* resid = f.resid_out != kNone ? args<NormArgs>(f.resid_out) : nullptr;
  const RopeArgs* rope = f.rope_out != kNone ? args<RopeArgs>(f.rope_out) : nullptr;
  size_t quantize_op = kNone;
  if (q8) {
    const uint64_t units = (uint64_t)q8_max * w.cols / 32;
    if (xq_->size() < units * 32 || xs_->size() < units * 8)
      throw ModelError("int8 x buffers hold " + std::to_string(xq_->size()) + " bytes, " + std::to_string(units * 32) + " needed");
    if (f.quantize) {
      add_quantize_q8(x, w.cols, one_token, q8_max);
      g_.ops.back()->skip_one_token = f.quantize_skip_one;
      quantize_op = last();
    }
  }
  for (const MatrixPart& p : w.parts) {
    std::map<std::string, double> c = {{"ROWS", p.rows}, {"COLS", w.cols}, {"Y_OFFSET", p.row0},
                                       {"Y_STRIDE", a.y_stride ? a.y_stride : w.rows}};
    if (w.gated) c["GATED"] = 1;
    const uint32_t row_tiles = (p.rows + (w.gated ? 31 : 63)) / (w.gated ? 32 : 64);
    const bool int8_x = q8 && q8_x_type(p.type);
    const std::string snippet = weight_snippet(p.type);
    if (int8_x && q8_gemm_ && q8_max > kQ8MatvecMaxTokens) {  // long passes: the int8 GEMM
      std::map<std::string, double> gc = c;
      // Four units per step need 20 KB of workgroup memory (every desktop GPU has 32+; WebGPU's floor is
      // 16), and the types whose levels come from a table 1 KB more (weight_bits.wgsl w_pairs).
      gc["UPS"] = k_.device().limits().maxComputeWorkgroupStorageSize >= kGemmQ8StepBytes * 4 + level_table_bytes(p.type) ? 4 : 2;
      // Measured per type on the H200 (gemm_q8.wgsl); Q5_K and Q3_K decode as much per unit: as Q4_K, unmeasured.
      if (p.type == GgmlType::Q4_K || p.type == GgmlType::Q6_K || p.type == GgmlType::Q5_K || p.type == GgmlType::Q3_K)
        gc["LOWREG"] = 1;
      const gpu::KernelKey key{"gemm_q8", {{"WEIGHT", snippet}, {"DOT", "dotq8_" + snippet.substr(7)}}, gc};
      MatmulOp& op = add<MatmulOp>(key, {y, *xq_, p.buf, *xs_, *step_});
      op.a = row_tiles, op.bytes = p.buf.size();
      if (split_scratch_) add_q8_split_k(y, p, w, key, row_tiles, q8_max);
      if (gated_h_capable(a)) {  // the fusion itself: lower_gated_h, when the matmul on h is made
        gpu::KernelKey hkey = key;
        hkey.includes["HOUT"] = "h_out_q8";
        gated_gemm_[i] = GatedGemm{last(), p.rows, hkey, {y, *xq_, p.buf, *xs_, *step_, *hq_, *hs_}};
      }
    } else {
      MatmulOp& op = add<MatmulOp>({"gemm", {{"WEIGHT", snippet}}, c}, {y, x, p.buf, *step_});
      op.a = row_tiles, op.bytes = p.buf.size(), op.one_token = one_token;
      if (!one_token) add_gemm_wide(y, x, p, w, c);
      if (split_scratch_ && !one_token) add_split_k(y, x, p, w, c, row_tiles);
    }
    // Decode: the matvec kernel. Quantized weights need int8 x for it (use_q8_x); without, their
    // one-token passes run the GEMM. Q2_K has no int8 dot: its matvec reads f32 x (dot_unit.wgsl).
    const bool float_type = p.type == GgmlType::F32 || p.type == GgmlType::F16 || p.type == GgmlType::BF16 ||
                            p.type == GgmlType::Q2_K;
    if (w.cols % 32 != 0 || !(int8_x || float_type)) continue;
    const bool first_part = &p == &w.parts.front(), more_parts = w.parts.size() > 1;
    // A matrix of two int8 types (a Q4_K_M QKV): its one-token pass is one dispatch, the first part's
    // matvec taking the second's rows too (matvec.wgsl W2DECL, WEIGHT2, DOT2); the second part's own
    // dispatch then serves longer passes only. The first part's x is made in the workgroup (norm).
    const MatrixPart* second = norm && first_part ? second_part(w) : nullptr;
    const bool folded = norm && !first_part && second_part(w) == &p;
    auto matvec = [&](uint32_t tt, const std::string& kind) -> MatmulOp& {
      const bool fused = tt == 1 && norm && first_part;
      const MatrixPart* two = tt == 1 ? second : nullptr;
      const MatvecShape sh = matvec_shape(p, w, norm != nullptr, fused);
      const uint32_t rpl = tt == 1 ? sh.rpl : q8_rpl_, groups = tt == 1 ? sh.groups : 1;
      const uint32_t lanes_here = tt > 1 ? q8_lanes_ : sh.lanes;
      const uint32_t wg = tt == 1 ? groups * lanes_here : 64;
      std::map<std::string, double> mc = c;
      mc["RPL"] = rpl, mc["LANES"] = lanes_here, mc["WG"] = wg;
      if (tt > 1) mc["TT"] = tt;
      if (tt == 1) mc["GROUPS"] = groups;
      if (fused) mc["NORM_EPS"] = norm->eps;
      std::map<std::string, std::string> inc = {{"WEIGHT", snippet},
                                                {"DOT", (int8_x ? "dotq8_" : "dot_") + snippet.substr(7)}};
      if (tt == 1) inc["XIN"] = fused ? "x_q8_norm" : int8_x ? "x_q8" : "x_f32", inc["XOUT"] = "x_out_none";
      if (tt == 1) inc["PACK8"] = pack8_snippet();
      if (fused && f.resid_in) inc["XTWO"] = "x_two_none";
      if (fused) inc["XEMIT"] = more_parts && !two ? "x_emit_q8" : "x_emit_none";
      if (fused && prenorm_rows) inc["XIN"] = "x_q8_prenorm", mc["SS_ROWS"] = prenorm_rows;
      if (two) {
        const std::string snippet2 = weight_snippet(two->type);
        inc["W2DECL"] = "weight2_binding", inc["WEIGHT2"] = snippet2 + ":2", inc["DOT2"] = "dotq8_" + snippet2.substr(7) + ":2";
        mc["ROWS2"] = two->rows;
      }
      const gpu::KernelKey key{tt == 1 ? "matvec" : "matvec_tokens", inc, mc};
      MatmulOp& d = g_.op<MatmulOp>(last());
      std::vector<gpu::Binding> nb;  // the fused-norm bindings 0-5
      if (fused) nb = {y, nin.sum ? gpu::Binding(*nin.sum) : nullptr, p.buf, *nin.a,
                       nin.b ? gpu::Binding(*nin.b) : nullptr, *norm->w};
      if (fused && prenorm_rows) nb[3] = *prenorm_xw_, nb[5] = *prenorm_ss_;  // x * weight, the sums of x^2
      auto with = [&](std::vector<gpu::Binding> more) { more.insert(more.begin(), nb.begin(), nb.end()); return more; };
      const std::vector<gpu::Binding> b =
          tt > 1                ? std::vector<gpu::Binding>{y, *xq_, p.buf, *xs_, *step_}
          : two                 ? with({two->buf})
          : fused && more_parts ? with({*xq_, *xs_})
          : fused               ? nb
          : int8_x              ? std::vector<gpu::Binding>{y, *xq_, p.buf, *xs_}
                                : std::vector<gpu::Binding>{y, x, p.buf};
      const std::string role = (int8_x ? "matvec_q8_" : "matvec_") + snippet.substr(7) +
                               (two ? "_" + weight_snippet(two->type).substr(7) : "") + (w.gated ? "_gated" : "") +
                               (fused ? "_norm" : "");
      const std::string label = kind + (fused ? "_norm:" : ":") + y.label();
      if (tt > 1) {
        d.few = variant(key, b, label, role + "_tokens");
        const uint32_t rows_per_group = wg / lanes_here * rpl;
        d.few_blocks = (p.rows + rows_per_group - 1) / rows_per_group, d.few_tokens = tt;
        d.few_max = std::min(q8_max, kQ8MatvecMaxTokens);
        return d;
      }
      d.single_groups = (p.rows + (two ? two->rows : 0) + groups * rpl - 1) / (groups * rpl);
      if (resid) {
        // The residual step's sum stored by this matvec instead of y (y_resid.wgsl), and where the
        // matvec after the norm reads x * weight and sums of squares (y_resid_norm.wgsl) those too.
        // Every matrix type: on the H200 +1.3% decode on Qwen3-4B Q4_K_M (short); before Q4_0 matrices
        // it lost 0.1-1.1% until the int8 packs went to 8 threads, and gained 3-4% after (with 32 lanes
        // on those matvecs, above: +5.2% short, +4.7% at 4,096 on Qwen3-4B Q4_0; bench/EXPERIMENTS.md).
        if (f.prenorm_rows && f.prenorm_rows != groups * rpl) throw std::logic_error("matmul: prenorm rows as planned");
        gpu::KernelKey rk = key;
        rk.includes["YOUT"] = f.prenorm_rows ? "y_resid_norm" : "y_resid";
        std::vector<gpu::Binding> rb = b;
        rb[0] = *resid->sum;
        rb.push_back(*resid->a);
        if (f.prenorm_rows) rb.insert(rb.end(), {*resid->w, *prenorm_xw_, *prenorm_ss_});
        d.single = variant(rk, rb, "matvec_q8_resid:" + resid->sum->label(), role + "_resid");
        return d;
      }
      if (f.q8_out) {  // y's int8 units too, into xq/xs, which it does not read (x_out_q8.wgsl)
        gpu::KernelKey ek = key;
        ek.includes["XOUT"] = "x_out_q8";
        std::vector<gpu::Binding> eb = b;
        eb.push_back(*xq_), eb.push_back(*xs_);
        d.single = variant(ek, eb, "matvec_q8:" + y.label(), role + "_q8");
        return d;
      }
      d.single = variant(key, b, label, role);
      if (rope) {  // the QKV's heads stored as rope_kv would (y_rope.wgsl) in long decode steps
        gpu::KernelKey rk = key;
        rk.includes["YOUT"] = "y_rope";
        const AttnShape& s = rope->s;
        for (auto [name, v] : std::map<std::string, double>{{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"ROT", s.rot}, {"PAGE", s.page}})
          rk.constants[name] = v;
        std::vector<gpu::Binding> rb = b;
        rb[0] = *rope->q;
        for (const gpu::Buffer* buf : {rope->k_cache, rope->v_cache, rope->pages, rope->rope}) rb.push_back(*buf);
        rb.push_back(*step_);
        d.long_single = variant(rk, rb, "matvec_q8_rope:" + rope->q->label(), role + "_rope");
        d.long_after = kAttnDecodeMax;
      }
      return d;
    };
    if (folded) {
      g_.ops.back()->skip_one_token = true;  // the first part's matvec takes these rows in one-token passes
    } else {
      matvec(1, int8_x ? "matvec_q8" : "matvec").always_single = one_token;
    }
    // Short passes: the same kernel over groups of tokens, each weight unit fetched once per group.
    if (int8_x && q8_max > 1) matvec(q8_tt_, "matvec_q8_tokens");
  }
  if (f.h_from != kNone) lower_gated_h(f.h_from, a, quantize_op);
}

// The matmul on h just made (one op), after the gated GEMM that made h (node g) and the
// quantize_q8 of h: in the passes where both run their GEMMs (from the longer of their main_min), the
// gated one stores h's int8 units in hq/hs, the quantize is skipped and this one reads them.
void GraphBuilder::lower_gated_h(size_t g, const MatmulArgs& down_args, size_t quantize_op) {
  const auto gg = gated_gemm_.find(g);
  MatmulOp* down = g_.find<MatmulOp>(last());
  if (gg == gated_gemm_.end() || quantize_op == kNone || quantize_op + 2 != g_.ops.size() ||
      gg->second.op + 1 != quantize_op || !down || down->main.role.rfind("gemm_q8", 0) != 0)
    return;
  MatmulOp& gated = g_.op<MatmulOp>(gg->second.op);
  const uint32_t from = std::max(gated.main_min(), down->main_min());
  if (from > q8_max_) return;
  const gpu::Buffer& x = *down_args.x;
  gated.long_main = variant(gg->second.key, gg->second.bindings, "gemm_q8_hq8:" + x.label(), gated.main.role + "_hq8");
  gated.long_min = from;
  g_.op<RowOp>(quantize_op).skip_min = from;
  down->long_main = Variant{down->main.pipeline,
                            k_.device().bind(*down->main.pipeline, {*down_args.y, *hq_, down_args.w->parts[0].buf, *hs_, *step_},
                                             "gemm_q8_from_hq8:" + x.label()),
                            down->main.role};
  down->long_min = from;
}

}  // namespace ztvm
