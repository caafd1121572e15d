#include "engine/graph.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "engine/gpu_layout.h"
#include "model/model_error.h"

namespace ztvm {

// gemm_q8.wgsl's workgroup memory per unit of a step: 64 weight units and 64 x units of 40 bytes.
static constexpr uint32_t kGemmQ8StepBytes = 64 * 40 + 64 * 40;
// A decode matvec that makes its x from the residual step (x_q8_norm.wgsl) serves kNormRows rows per
// workgroup: each workgroup reads the whole residual, so few of them (H200: 32 beat 16 and 64).
static constexpr uint32_t kNormRows = 32, kNormMaxCols = 8192;

std::string weight_snippet(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return "weight_f32";
    case GgmlType::F16: return "weight_f16";
    case GgmlType::BF16: return "weight_bf16";
    case GgmlType::Q8_0: return "weight_q8_0";
    case GgmlType::Q4_0: return "weight_q4_0";
    case GgmlType::Q4_K: return "weight_q4_k";
    case GgmlType::Q6_K: return "weight_q6_k";
    case GgmlType::Q4_1: return "weight_q4_1";
    case GgmlType::Q5_0: return "weight_q5_0";
    case GgmlType::Q5_1: return "weight_q5_1";
    case GgmlType::Q2_K: return "weight_q2_k";
    case GgmlType::Q3_K: return "weight_q3_k";
    case GgmlType::Q5_K: return "weight_q5_k";
    case GgmlType::IQ4_NL: return "weight_iq4_nl";
    case GgmlType::IQ4_XS: return "weight_iq4_xs";
    case GgmlType::MXFP4: return "weight_mxfp4";
    default: throw ModelError(std::string("no GPU kernel for weight type ") + type_name(t));
  }
}

Variant GraphBuilder::variant(const gpu::KernelKey& key, const std::vector<gpu::Binding>& b, const std::string& label,
                              std::string role) {
  const gpu::Pipeline& p = k_.get(key);
  if (role.empty())
    role = key.kernel + (key.includes.count("WEIGHT") ? "_" + key.includes.at("WEIGHT").substr(7) : "");
  return Variant{&p, k_.device().bind(p, b, label), std::move(role)};
}

void GraphBuilder::embed(const gpu::Buffer& x, const gpu::Buffer& ids, const Matrix& table) {
  for (const MatrixPart& p : table.parts) {  // one part unless the table outgrows a binding (lavapipe: 128 MiB)
    std::map<std::string, double> c = {{"COLS", table.cols}};
    if (table.parts.size() > 1) c["ROW0"] = p.row0, c["ROWS"] = p.rows;
    RowOp& op = add<RowOp>({"embed", {{"WEIGHT", weight_snippet(p.type)}}, c}, {x, ids, p.buf, *step_});
    op.skip_embedded = table.parts.size() == 1;  // argmax can make the row (GraphBuilder::argmax)
  }
}

void GraphBuilder::rmsnorm(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& w, uint32_t d, float eps,
                           const gpu::Buffer* zeros, const gpu::Buffer* scratch) {
  const gpu::KernelKey key{"rmsnorm", {{"XOUT", "x_out_none"}}, {{"D", d}, {"EPS", eps}}};
  add<RowOp>(key, {y, x, w, *step_});
  if (d % 32 == 0) q8_producer(y, key, {y, x, w, *step_});
  if (zeros && scratch && d % 4 == 0) norm_producer_.assign(1, NormProducer{last(), &y, scratch, &x, zeros, &w, d, eps});
}

void GraphBuilder::add_rmsnorm(const gpu::Buffer& y, const gpu::Buffer& sum, const gpu::Buffer& a, const gpu::Buffer& b,
                               const gpu::Buffer& w, uint32_t d, float eps) {
  if (d % 4 != 0) throw ModelError("hidden size " + std::to_string(d) + " is not a multiple of 4");
  // A thread per quad up to 256 threads (a power of two), each keeping up to 4 quads in registers.
  const uint32_t quads = d / 4;
  uint32_t wg = 8;
  while (wg < 256 && wg < quads) wg *= 2;
  const uint32_t keep = std::min<uint32_t>(4, (quads + wg - 1) / wg);
  const gpu::KernelKey key{"add_rmsnorm", {{"XOUT", "x_out_none"}}, {{"D", d}, {"EPS", eps}, {"WG", wg}, {"KEEP", keep}}};
  add<RowOp>(key, {y, sum, a, b, w, *step_});
  if (d % 32 == 0) q8_producer(y, key, {y, sum, a, b, w, *step_});
  norm_producer_.assign(1, NormProducer{last(), &y, &sum, &a, &b, &w, d, eps});
}

void GraphBuilder::q8_producer(const gpu::Buffer& y, const gpu::KernelKey& key, const std::vector<gpu::Binding>& b,
                               std::optional<AttnDirect> flash, std::optional<AttnDirect> decode) {
  q8_producer_.assign(1, Q8Producer{last(), &y, key, b, std::move(flash), std::move(decode)});
}

// When the dispatch just added produced x, its one-token variant stores x as int8 units too.
bool GraphBuilder::emit_q8_from_producer(const gpu::Buffer& x, uint32_t max_tokens, uint32_t f32_dead_from) {
  if (q8_producer_.empty()) return false;
  Q8Producer& p = q8_producer_[0];
  if (p.op + 1 != g_.ops.size() || p.y != &x) return false;
  emit_q8(p, *p.y, max_tokens, f32_dead_from);
  return true;
}

// The LM head of a pass's last token reads x, a copy of the producer's last row (copy_last_row). In a
// one-token pass that row is the producer's only one: its one-token variant stores the int8 units
// instead, and the copy (a break in the compute pass) and the quantize_q8 after it are skipped.
bool GraphBuilder::emit_q8_through_copy(const gpu::Buffer& x) {
  if (q8_producer_.empty() || g_.ops.empty()) return false;
  CopyRowOp* copy = g_.find<CopyRowOp>(last());
  Q8Producer& p = q8_producer_[0];
  if (!copy || copy->dst != &x || copy->src != p.y || p.op + 2 != g_.ops.size()) return false;
  emit_q8(p, *p.y, 1);
  copy->skip_one_token = true;
  return true;
}

void GraphBuilder::emit_q8(Q8Producer& p, const gpu::Buffer& x, uint32_t max_tokens, uint32_t f32_dead_from) {
  gpu::KernelKey key = p.key;
  key.includes["XOUT"] = "x_out_q8";
  std::vector<gpu::Binding> b = p.bindings;
  b.push_back(*xq_), b.push_back(*xs_);
  RowOp& d = g_.op<RowOp>(p.op);
  d.single = variant(key, b, key.kernel + "_q8:" + x.label(), d.main.role + "_q8");
  d.single_groups = d.a, d.single_max = max_tokens;
  // Passes whose readers of x all read the units: the int8 units only (add_rmsnorm, flash: F32_OUT).
  if (f32_dead_from && key.kernel == "add_rmsnorm") {
    key.constants["F32_OUT"] = 0;
    d.long_main = variant(key, b, key.kernel + "_q8_only:" + x.label(), d.single.role);
    d.long_min = f32_dead_from;
  }
  // The passes that flash or decode attention serve store the units there (the combine skips them).
  auto q8_variant = [&](const AttnDirect& o, const std::string& role) {
    gpu::KernelKey k = o.key;
    k.includes["XOUT"] = "x_out_q8";
    std::vector<gpu::Binding> b = o.bindings;
    b.push_back(*xq_), b.push_back(*xs_);
    return variant(k, b, o.key.kernel + "_q8:" + x.label(), role);
  };
  if (p.flash) {
    AttentionOp& a = g_.op<AttentionOp>(p.flash->op);
    a.flash_q8 = q8_variant(*p.flash, "attention_flash_q8");
    a.flash_q8_max = max_tokens;
    if (f32_dead_from) {
      AttnDirect only = *p.flash;
      only.key.constants["F32_OUT"] = 0;
      a.flash_q8_only = q8_variant(only, "attention_flash_q8");
      a.flash_q8_only_min = f32_dead_from;
    }
  }
  if (p.decode) g_.op<AttentionOp>(p.decode->op).decode_q8 = q8_variant(*p.decode, "attention_decode_q8");
}

void GraphBuilder::matmul(const gpu::Buffer& y, const gpu::Buffer& x, const Matrix& w, uint32_t y_stride,
                          bool one_token) {
  const bool q8 = xq_ && w.cols % 32 == 0 &&
                  std::any_of(w.parts.begin(), w.parts.end(), [](const MatrixPart& p) { return q8_x_type(p.type); });
  const uint32_t q8_max = one_token ? 1 : q8_max_;  // the longest pass that reads int8 x
  size_t quantize_op = SIZE_MAX;
  // Decode: the matvec makes x from the add_rmsnorm's inputs itself (x_q8_norm.wgsl), and one-token
  // passes skip that dispatch. Its workgroup memory holds 1.25 bytes per column. A matrix of parts of
  // several int8 types (a Q4_K_M QKV): the first part's matvec does, and also stores x's int8 units
  // (x_emit_q8.wgsl) for the others, which read them as after add_rmsnorm_q8.
  const NormProducer* norm = nullptr;
  const bool all_q8 = std::all_of(w.parts.begin(), w.parts.end(), [](const MatrixPart& p) { return q8_x_type(p.type); });
  if (q8 && !one_token && all_q8 && !norm_producer_.empty() &&
      norm_producer_[0].op + 1 == g_.ops.size() && norm_producer_[0].y == &x && norm_producer_[0].d == w.cols &&
      w.cols <= kNormMaxCols)
    norm = &norm_producer_[0];
  // The x_q8_norm's inputs. Where a one-token matvec made b just before the add_rmsnorm (the o or down
  // projection), that matvec now stores the residual step's sum itself (y_resid.wgsl) in one-token
  // passes, and this one reads the sum alone (x_two_none.wgsl): each of its workgroups reads two
  // vectors instead of three, and none stores the sum (nin.sum and nin.b are then left unbound).
  struct { const gpu::Buffer *sum, *a, *b; } nin{};
  bool resid = false;
  uint32_t prenorm_rows = 0;  // use_prenorm: rows per stored sum of squares (the projection's workgroup)
  if (norm) {
    nin = {norm->sum, norm->a, norm->b};
    resid = !resid_matvec_.empty() && resid_matvec_[0].op + 1 == norm->op && resid_matvec_[0].y == norm->b;
    if (resid) {
      const Q8Producer& m = resid_matvec_[0];
      gpu::KernelKey key = m.key;
      key.includes["YOUT"] = "y_resid";
      std::vector<gpu::Binding> b = m.bindings;
      b[0] = *norm->sum;
      b.push_back(*norm->a);
      const uint32_t wg_rows = (uint32_t)(m.key.constants.at("GROUPS") * m.key.constants.at("RPL"));
      // Every matrix type: on the H200 +1.3% decode on Qwen3-4B Q4_K_M (short); before Q4_0 matrices
      // it lost 0.1-1.1% until the int8 packs went to 8 threads, and gained 3-4% after (with 32 lanes
      // on those matvecs, below: +5.2% short, +4.7% at 4,096 on Qwen3-4B Q4_0; bench/EXPERIMENTS.md).
      if (prenorm_xw_ && 32 % wg_rows == 0 && prenorm_xw_->size() >= norm->d * 4ull &&
          prenorm_ss_->size() >= norm->d / wg_rows * 4ull) {
        key.includes["YOUT"] = "y_resid_norm";
        b.insert(b.end(), {*norm->w, *prenorm_xw_, *prenorm_ss_});
        prenorm_rows = wg_rows;
      }
      MatmulOp& d = g_.op<MatmulOp>(m.op);
      d.single = variant(key, b, "matvec_q8_resid:" + norm->sum->label(), d.single.role + "_resid");
      nin = {nullptr, norm->sum, nullptr};
    }
  }
  resid_matvec_.clear();
  if (q8) {
    const uint64_t units = (uint64_t)q8_max * w.cols / 32;
    if (xq_->size() < units * 32 || xs_->size() < units * 8)
      throw ModelError("int8 x buffers hold " + std::to_string(xq_->size()) + " bytes, " + std::to_string(units * 32) + " needed");
    // Long passes of an int8 GEMM on every part read only the units: the producer may skip f32 x there.
    const uint32_t f32_dead_from = all_q8 && q8_gemm_ && q8_max > kQ8MatvecMaxTokens ? kQ8MatvecMaxTokens + 1 : 0;
    if (one_token || !emit_q8_from_producer(x, q8_max, f32_dead_from)) {
      const bool from_matvec = !one_token && emit_q8_from_matvec(x);  // one token: its units are made
      const bool through_copy = one_token && emit_q8_through_copy(x);
      add_quantize_q8(x, w.cols, one_token, q8_max);
      g_.ops.back()->skip_one_token = from_matvec || through_copy;
      quantize_op = last();
    }
  }
  const std::vector<GatedGemm> gated_before = std::exchange(gated_gemm_, {});  // this matmul may set it anew
  for (const MatrixPart& p : w.parts) {
    std::map<std::string, double> c = {{"ROWS", p.rows}, {"COLS", w.cols}, {"Y_OFFSET", p.row0},
                                       {"Y_STRIDE", y_stride ? y_stride : w.rows}};
    if (w.gated) c["GATED"] = 1;
    const uint32_t row_tiles = (p.rows + (w.gated ? 31 : 63)) / (w.gated ? 32 : 64);
    const bool int8_x = q8 && q8_x_type(p.type);
    const std::string snippet = weight_snippet(p.type);
    if (int8_x && q8_gemm_ && q8_max > kQ8MatvecMaxTokens) {  // long passes: the int8 GEMM
      std::map<std::string, double> gc = c;
      // Four units per step need 20 KB of workgroup memory (every desktop GPU has 32+; WebGPU's floor is 16).
      gc["UPS"] = k_.device().limits().maxComputeWorkgroupStorageSize >= kGemmQ8StepBytes * 4 ? 4 : 2;
      // Measured per type on the H200 (gemm_q8.wgsl); Q5_K and Q3_K decode as much per unit: as Q4_K, unmeasured.
      if (p.type == GgmlType::Q4_K || p.type == GgmlType::Q6_K || p.type == GgmlType::Q5_K || p.type == GgmlType::Q3_K)
        gc["LOWREG"] = 1;
      const gpu::KernelKey key{"gemm_q8", {{"WEIGHT", snippet}, {"DOT", "dotq8_" + snippet.substr(7)}}, gc};
      MatmulOp& op = add<MatmulOp>(key, {y, *xq_, p.buf, *xs_, *step_});
      op.a = row_tiles, op.bytes = p.buf.size();
      if (split_scratch_) add_q8_split_k(y, p, w, key, row_tiles, q8_max);
      if (hq_ && w.gated && w.parts.size() == 1 && p.rows % 32 == 0 && p.row0 == 0 && gc["UPS"] == 4 &&
          (uint64_t)q8_max * p.rows <= std::min(hq_->size(), hs_->size() / 8 * 32)) {
        gpu::KernelKey hkey = key;
        hkey.includes["HOUT"] = "h_out_q8";
        gated_gemm_.assign(1, GatedGemm{last(), &y, p.rows, hkey, {y, *xq_, p.buf, *xs_, *step_, *hq_, *hs_}});
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
    // The matvec kernel (rows of whole 32-element units). Rows per lane group: enough
    // workgroups to fill a large GPU on short matrices, x reuse on long ones. Thresholds and lane
    // counts measured on the H200 (bench/EXPERIMENTS.md): x reuse pays from 2048 rows; 128 lanes on
    // rows of 4,096+ columns take them in fewer dependent turns (+0.5..2% decode over 64, 2026-12-01).
    // Q4_0: half the lanes when that keeps them busier to the last turn. 2,560 columns are 80 units,
    // which leave half of 32 lanes idle in their third turn (+2.7% decode on Qwen3-4B Q4_0; Q4_K and
    // Q6_K, with more decoding per unit, lost 1-2% with fewer lanes: bench/EXPERIMENTS.md). Q6_K too
    // on an LM head's many rows, which fill the GPU on fewer lanes (+0.8% decode on Qwen3-4B Q4_0).
    // Not where the matvec makes its own x (norm): half the lanes is half the threads to pack x in
    // each workgroup's prologue (gate|up: 5 turns instead of 3); full lanes won +2.9..3.7% decode on
    // Qwen3-4B Q4_0 once packing took 8 threads a unit.
    const uint32_t turns = w.cols / 32;
    auto busy = [&](uint32_t l) { return (double)turns / (l * ((turns + l - 1) / l)); };
    uint32_t lanes = w.cols >= 4096 ? 128 : 32;
    const bool halve = !norm && (p.type == GgmlType::Q4_0 || (p.type == GgmlType::Q6_K && p.rows >= 8192));
    if (halve && lanes <= 64 && busy(lanes / 2) > busy(lanes) + 0.1) lanes /= 2;
    const bool first_part = &p == &w.parts.front(), more_parts = w.parts.size() > 1;
    // A matrix of two int8 types (a Q4_K_M QKV): its one-token pass is one dispatch, the first part's
    // matvec taking the second's rows too (matvec.wgsl W2DECL, WEIGHT2, DOT2); the second part's own
    // dispatch then serves longer passes only. The first part's x is made in the workgroup (norm).
    const uint32_t rpl1 = p.rows >= 8192 ? 4 : p.rows >= 2048 ? 2 : 1;
    const MatrixPart* second = nullptr;
    if (norm && w.parts.size() == 2 && !w.gated && int8_x && q8_x_type(w.parts[1].type) &&
        w.parts[1].row0 == w.parts[0].rows && w.parts[0].rows % 4 == 0)
      second = first_part ? &w.parts[1] : nullptr;
    const bool folded = norm && w.parts.size() == 2 && !first_part && q8_x_type(w.parts[0].type) && !w.gated &&
                        p.row0 == w.parts[0].rows && w.parts[0].rows % 4 == 0 && int8_x;
    auto matvec = [&](uint32_t rpl, uint32_t tt, const std::string& kind) -> MatmulOp& {
      std::map<std::string, double> mc = c;
      const bool fused = tt == 1 && norm && first_part;
      const MatrixPart* two = tt == 1 ? second : nullptr;
      // x made per workgroup: kNormRows rows each, so that work is shared by many rows; 48 on matrices
      // past 128 such workgroups that are not gated (gated ones emit 32-row units). H200: Qwen3-4B's
      // 6,144-row QKV in 128 workgroups of 48 rows rather than 192 of 32, +1.4% decode; on the 1B's
      // 3,072 rows 24 and 16 lost 0-1% (bench/EXPERIMENTS.md).
      const uint32_t norm_rows = !w.gated && p.rows > 128 * kNormRows ? 48 : kNormRows;
      // Plain one-token matvecs: two lane groups a workgroup, or one where a group is one warp of 32
      // lanes (H200: +3.0% decode on Llama-3.2-1B Q4_0, +2.6% on Q4_K_M, whose o projection and LM head
      // are such; more groups a workgroup lost 1-9%, one group of 16 or 128 lanes 1.5-1.9%:
      // bench/EXPERIMENTS.md).
      const uint32_t groups = fused ? norm_rows / rpl : tt == 1 && lanes == 32 ? 1 : 2;
      const uint32_t lanes_here = tt > 1 ? q8_lanes_ : groups * lanes > 1024 ? 32 : lanes;
      const uint32_t wg = tt == 1 ? groups * lanes_here : 64;
      mc["RPL"] = rpl, mc["LANES"] = lanes_here, mc["WG"] = wg;
      if (tt > 1) mc["TT"] = tt;
      if (tt == 1) mc["GROUPS"] = groups;
      if (fused) mc["NORM_EPS"] = norm->eps;
      std::map<std::string, std::string> inc = {{"WEIGHT", snippet},
                                                {"DOT", (int8_x ? "dotq8_" : "dot_") + snippet.substr(7)}};
      if (tt == 1) inc["XIN"] = fused ? "x_q8_norm" : int8_x ? "x_q8" : "x_f32", inc["XOUT"] = "x_out_none";
      if (tt == 1) inc["PACK8"] = pack8_snippet();
      if (fused && resid) inc["XTWO"] = "x_two_none";
      if (fused) inc["XEMIT"] = more_parts && !two ? "x_emit_q8" : "x_emit_none";
      if (fused && prenorm_rows) inc["XIN"] = "x_q8_prenorm", mc["SS_ROWS"] = prenorm_rows;
      if (two) {
        const std::string snippet2 = weight_snippet(two->type);
        inc["W2DECL"] = "weight2_binding", inc["WEIGHT2"] = snippet2 + ":2", inc["DOT2"] = "dotq8_" + snippet2.substr(7) + ":2";
        mc["ROWS2"] = two->rows;
      }
      const gpu::Pipeline& mv = k_.get({tt == 1 ? "matvec" : "matvec_tokens", inc, mc});
      MatmulOp& d = g_.op<MatmulOp>(last());
      std::vector<gpu::Binding> nb;  // the fused-norm bindings 0-5
      if (fused) nb = {y, nin.sum ? gpu::Binding(*nin.sum) : nullptr, p.buf, *nin.a,
                       nin.b ? gpu::Binding(*nin.b) : nullptr, *norm->w};
      if (fused && prenorm_rows) nb[3] = *prenorm_xw_, nb[5] = *prenorm_ss_;  // x * weight, the sums of x^2
      auto with = [&](std::vector<gpu::Binding> more) { more.insert(more.begin(), nb.begin(), nb.end()); return more; };
      gpu::BindGroup bg =
          tt > 1   ? k_.device().bind(mv, {y, *xq_, p.buf, *xs_, *step_}, kind + ":" + y.label())
          : two ? k_.device().bind(mv, with({two->buf}), kind + "_norm:" + y.label())
          : fused && more_parts ? k_.device().bind(mv, with({*xq_, *xs_}), kind + "_norm:" + y.label())
          : fused  ? k_.device().bind(mv, nb, kind + "_norm:" + y.label())
          : int8_x ? k_.device().bind(mv, {y, *xq_, p.buf, *xs_}, kind + ":" + y.label())
                   : k_.device().bind(mv, {y, x, p.buf}, kind + ":" + y.label());
      const std::string role = (int8_x ? "matvec_q8_" : "matvec_") + snippet.substr(7) +
                               (two ? "_" + weight_snippet(two->type).substr(7) : "") + (w.gated ? "_gated" : "") +
                               (fused ? "_norm" : "");
      // A matvec that makes x in the workgroup, a lane group's two rows a rope pair, can store a QKV's
      // heads as rope_kv would in long decode steps (rope_kv() decides, y_rope.wgsl): of one part, or
      // of two types in one dispatch where its bindings and y_rope's five fit the device's limit of
      // storage buffers (those after a projection that stored the residual's sum bind two fewer). H200:
      // +2.5% decode at 4,096 positions on Llama-3.2-1B Q4_K_M, whose v rows are Q6_K in 8 of 16 layers.
      const uint32_t storage = 6 - (nin.sum ? 0 : 1) - (nin.b ? 0 : 1) + (two ? 1 : 0) + 4;
      if (fused && (!more_parts || two) && !w.gated && rpl == 2 && p.row0 == 0 &&
          storage <= k_.device().limits().maxStorageBuffersPerShaderStage)
        rope_matvec_.assign(1, Q8Producer{last(), &y, {"matvec", inc, mc}, two ? with({two->buf}) : nb});
      // A matvec that makes x in the workgroup and owns whole 32-row units can also store y as int8
      // units (into xq/xs, which it does not read) for a matvec after it (emit_q8_from_matvec).
      if (fused && !more_parts && groups * rpl == 32 && p.row0 % 32 == 0) {
        gpu::KernelKey ek{"matvec", inc, mc};
        ek.includes["XOUT"] = "x_out_q8";
        q8_matvec_producer_.assign(1, Q8Producer{last(), &y, ek, nb});
      }
      // A plain one-token matvec on int8 x of one part: if an add_rmsnorm follows whose work the next
      // matvec takes, this one can store the residual's sum (see above, y_resid.wgsl).
      if (tt == 1 && !fused && int8_x && !one_token && !more_parts && !w.gated && p.row0 == 0)
        resid_matvec_.assign(1, Q8Producer{last(), &y, {"matvec", inc, mc}, {y, *xq_, p.buf, *xs_}});
      if (tt == 1) {
        d.single = Variant{&mv, std::move(bg), role};
        d.single_groups = (p.rows + (two ? two->rows : 0) + groups * rpl - 1) / (groups * rpl);
      } else {
        d.few = Variant{&mv, std::move(bg), role + "_tokens"};
        const uint32_t rows_per_group = wg / lanes_here * rpl;
        d.few_blocks = (p.rows + rows_per_group - 1) / rows_per_group, d.few_tokens = tt;
        d.few_max = std::min(q8_max, kQ8MatvecMaxTokens);
      }
      return d;
    };
    if (folded) {
      g_.ops.back()->skip_one_token = true;  // the first part's matvec takes these rows in one-token passes
    } else {
      matvec(rpl1, 1, int8_x ? "matvec_q8" : "matvec").always_single = one_token;
    }
    // Short passes: the same kernel over groups of tokens, each weight unit fetched once per group.
    if (int8_x && q8_max > 1) matvec(q8_rpl_, q8_tt_, "matvec_q8_tokens");
  }
  if (norm) g_.ops[norm->op]->skip_one_token = true;
  if (!one_token && !gated_before.empty() && gated_before[0].y == &x && quantize_op != SIZE_MAX)
    fuse_q8_h(gated_before[0], y, x, w, quantize_op);
}

// The matmul on h just added, after the gated GEMM that made h (gg) and the quantize_q8 of
// h: in the passes where both run their GEMMs (from the longer of their main_min), the gated one
// stores h's int8 units in hq/hs, the quantize is skipped and this one reads them.
void GraphBuilder::fuse_q8_h(const GatedGemm& gg, const gpu::Buffer& y, const gpu::Buffer& x, const Matrix& w,
                             size_t quantize_op) {
  MatmulOp& gated = g_.op<MatmulOp>(gg.op);
  MatmulOp* down_op = g_.find<MatmulOp>(last());
  if (w.parts.size() != 1 || w.cols != gg.rows || quantize_op + 2 != g_.ops.size() || gg.op + 1 != quantize_op ||
      !down_op || down_op->main.role.rfind("gemm_q8", 0) != 0)
    return;
  MatmulOp& down = *down_op;
  const uint32_t from = std::max(gated.main_min(), down.main_min());
  if (from > q8_max_) return;
  gated.long_main = variant(gg.key, gg.bindings, "gemm_q8_hq8:" + x.label(), gated.main.role + "_hq8");
  gated.long_min = from;
  g_.op<RowOp>(quantize_op).skip_min = from;
  down.long_main = Variant{down.main.pipeline,
                           k_.device().bind(*down.main.pipeline, {y, *hq_, w.parts[0].buf, *hs_, *step_},
                                            "gemm_q8_from_hq8:" + x.label()),
                           down.main.role};
  down.long_min = from;
}

// When the dispatch just added is a decode matvec that can store x as int8 units (see matmul), its
// one-token variant now does, and the caller's quantize_q8 skips one-token passes.
bool GraphBuilder::emit_q8_from_matvec(const gpu::Buffer& x) {
  if (q8_matvec_producer_.empty()) return false;
  const Q8Producer& p = q8_matvec_producer_[0];
  if (p.op + 1 != g_.ops.size() || p.y != &x) return false;
  std::vector<gpu::Binding> b = p.bindings;
  b.push_back(*xq_), b.push_back(*xs_);
  MatmulOp& d = g_.op<MatmulOp>(p.op);
  d.single = variant(p.key, b, "matvec_q8:" + x.label(), d.single.role + "_q8");
  return true;
}

bool GraphBuilder::q8_x_type(GgmlType t) { return int8_dot_type(t); }

// x -> int8 units in xq/xs (every token of passes up to max_tokens), before the matvecs that read them.
void GraphBuilder::add_quantize_q8(const gpu::Buffer& x, uint32_t cols, bool one_token, uint32_t max_tokens) {
  auto d = std::make_unique<RowOp>();
  d->single = variant({"quantize_q8", {}, {{"COLS", cols}}}, {*xq_, *xs_, x, *step_}, "quantize_q8:" + x.label());
  d->single_groups = (cols / 32 + 63) / 64, d->single_max = max_tokens;
  d->single_only = true, d->always_single = one_token;
  g_.ops.push_back(std::move(d));
}

// The kernel that picks the next token (argmax's final pass, sample) with its row of the embedding
// table stored in x (next_embed.wgsl), where the table is one binding (else the embed dispatch stays).
bool GraphBuilder::add_picker(gpu::KernelKey key, std::vector<gpu::Binding> b, const gpu::Buffer& x, const Matrix& table) {
  const bool embed = table.parts.size() == 1;
  key.includes["NEXT"] = embed ? "next_embed" : "next_none";
  if (embed) {
    key.includes["WEIGHT"] = weight_snippet(table.parts[0].type);
    key.constants["COLS"] = table.cols;
    b.push_back(x), b.push_back(table.parts[0].buf);
  }
  // Its role in profiles: the kernel's, not the embedding table's type that WEIGHT brings.
  add<FixedOp>(key, b).main.role = key.kernel + (key.constants.count("FINAL") ? "_final" : "");
  return embed;
}

bool GraphBuilder::argmax(const gpu::Buffer& ids, const gpu::Buffer& tokens, const gpu::Buffer& part,
                          const gpu::Buffer& logits, uint32_t vocab, const gpu::Buffer& x, const Matrix& table) {
  const std::map<std::string, double> c = {{"N", vocab}, {"PARTS", kArgmaxParts}};
  add<FixedOp>({"argmax", {{"NEXT", "next_none"}}, c}, {ids, tokens, part, logits, *step_}).groups = kArgmaxParts;
  gpu::KernelKey fk{"argmax", {}, c};
  fk.constants["FINAL"] = 1;
  return add_picker(fk, {ids, tokens, part, logits, *step_}, x, table);
}

bool GraphBuilder::sample(const gpu::Buffer& ids, const gpu::Buffer& tokens, const gpu::Buffer& logits,
                          const gpu::Buffer& params, uint32_t vocab, const gpu::Buffer& x, const Matrix& table) {
  return add_picker({"sample", {}, {{"N", vocab}}}, {ids, tokens, logits, params, *step_}, x, table);
}

void GraphBuilder::copy_last_row(const gpu::Buffer& dst, const gpu::Buffer& src, uint32_t width) {
  auto d = std::make_unique<CopyRowOp>();
  d->src = &src, d->dst = &dst, d->width = width;
  g_.ops.push_back(std::move(d));
}

}  // namespace ztvm
