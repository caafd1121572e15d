// The fusions of a listed forward pass (GraphBuilder::plan, graph.h): where one kernel can do a
// neighbour's work, or hand it its output in the form it reads, so that a pass makes fewer dispatches
// and round trips through memory. Each rule looks at an op and the ones just before it, as forward.cpp
// listed them, and notes in both what each does for the other (GraphBuilder::Fusion); lowering then
// makes the variants (graph.cpp, graph_matmul.cpp, graph_attention.cpp). The rules run in list
// order, each at the op that consumes what its neighbour makes. What each fusion gained on the H200
// is where its variants are made.
#include <algorithm>
#include <type_traits>

#include "engine/graph.h"

namespace ztvm {

// The widest residual a decode matvec makes its x from in its workgroup (1.25 bytes a column).
static constexpr uint32_t kNormMaxCols = 8192;

void GraphBuilder::plan() {
  fuse_.assign(nodes_.size(), Fusion{});
  for (size_t i = 0; i < nodes_.size(); i++) {
    if (const MatmulArgs* m = args<MatmulArgs>(i)) {
      fuse_norm_into_matvec(i, *m);
      fuse_int8_x(i, *m);
      fuse_gated_h(i, *m);
    } else if (const RopeArgs* r = args<RopeArgs>(i)) {
      fuse_rope_into_matvec(i, *r);
    } else if (const AttnArgs* a = args<AttnArgs>(i)) {
      fuse_rope_into_attention(i, *a);
    } else if (const MoeMatmulArgs* e = args<MoeMatmulArgs>(i)) {
      fuse_moe_x(i, *e);
    } else if (const MoeCombineArgs* c = args<MoeCombineArgs>(i)) {
      fuse_moe_combine(i, *c);
    }
  }
}

bool GraphBuilder::all_q8(const Matrix& w) {
  return std::all_of(w.parts.begin(), w.parts.end(), [](const MatrixPart& p) { return q8_x_type(p.type); });
}

bool GraphBuilder::reads_q8(const MatmulArgs& m) const {
  const Matrix& w = *m.w;
  return xq_ && w.cols % 32 == 0 &&
         std::any_of(w.parts.begin(), w.parts.end(), [](const MatrixPart& p) { return q8_x_type(p.type); });
}

// Whether a node after i reads b before one writes it again: a norm's output that the experts read
// too (after the router's matmul) must be stored even where the router's matvec could make it.
bool GraphBuilder::read_after(size_t i, const gpu::Buffer* b) const {
  for (size_t j = i + 1; j < nodes_.size(); j++) {
    if (const MatmulArgs* m = args<MatmulArgs>(j); m && m->x == b) return true;
    if (const MoeMatmulArgs* m = args<MoeMatmulArgs>(j); m && m->x == b) return true;
    const gpu::Buffer* out = std::visit(
        [](const auto& a) -> const gpu::Buffer* {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, EmbedArgs>) return a.x;
          else if constexpr (std::is_same_v<T, RopeArgs>) return a.q;
          else if constexpr (std::is_same_v<T, AttnArgs> || std::is_same_v<T, CombineArgs>) return a.att;
          else if constexpr (std::is_same_v<T, CopyArgs>) return a.dst;
          else if constexpr (std::is_same_v<T, PickArgs>) return a.x;
          else if constexpr (std::is_same_v<T, MoeRouteArgs>) return a.ids;
          else return a.y;  // norms, matmuls, the experts' ops
        },
        nodes_[j].args);
    if (out == b) return false;
  }
  return false;
}

// Kernels that can store their output x as int8 units as well (XOUT x_out_q8.wgsl): the norms, and the
// combine of attention's splits (with the attention before it, for the passes it writes x itself).
bool GraphBuilder::emits_q8(size_t i, const gpu::Buffer& x) const {
  if (const NormArgs* n = args<NormArgs>(i)) return n->d % 32 == 0 && n->y == &x;
  if (const CombineArgs* c = args<CombineArgs>(i)) return c->s.hd % 32 == 0 && c->att == &x;  // whole units a head
  return false;
}

// Decode: a matvec on the output of a norm makes its x itself from the norm's inputs (x_q8_norm.wgsl),
// and the norm skips one-token passes. Where the matvec before that norm made its b (the o or down
// projection, a plain one-token matvec of one part), that matvec adds the residual and stores the sum
// (y_resid.wgsl), so that this one reads one vector fewer, and where the sums of squares fit its
// workgroups, also x times the norm's weight and their sums of x^2 (y_resid_norm.wgsl).
void GraphBuilder::fuse_norm_into_matvec(size_t i, const MatmulArgs& m) {
  const NormArgs* n = i > 0 ? args<NormArgs>(i - 1) : nullptr;
  if (!n || !n->sum || n->y != m.x || !reads_q8(m) || m.one_token || !all_q8(*m.w) || n->d != m.w->cols ||
      m.w->cols > kNormMaxCols || read_after(i, n->y))
    return;
  Fusion& f = fuse_[i];
  f.norm = i - 1;
  fuse_[i - 1].skip_one_token = true;
  const MatmulArgs* r = i >= 2 ? args<MatmulArgs>(i - 2) : nullptr;
  if (!r || r->y != n->b || fuse_[i - 2].norm != kNone || !reads_q8(*r) || r->one_token || r->w->gated ||
      r->w->parts.size() != 1 || !q8_x_type(r->w->parts[0].type) || r->w->parts[0].row0 != 0)
    return;
  f.resid_in = true;
  fuse_[i - 2].resid_out = i - 1;
  const MatvecShape sh = matvec_shape(r->w->parts[0], *r->w, false, false);
  const uint32_t wg_rows = sh.groups * sh.rpl;  // rows per workgroup of that matvec: per sum of squares
  if (prenorm_xw_ && 32 % wg_rows == 0 && prenorm_xw_->size() >= n->d * 4ull &&
      prenorm_ss_->size() >= n->d / wg_rows * 4ull)
    f.prenorm_rows = fuse_[i - 2].prenorm_rows = wg_rows;
}

// A matmul that reads x as int8 units gets them from the kernel that made x, where it can store them
// (emits_q8); else a quantize_q8 dispatch before it makes them, which one-token passes skip where a
// decode matvec that made x in its workgroup stores them (its rows whole 32-row units), or where x is
// the LM head's copy of the last row of a producer's output (the copy, a break in the compute pass,
// is skipped too: in a one-token pass that row is the producer's only one).
void GraphBuilder::fuse_int8_x(size_t i, const MatmulArgs& m) {
  if (!reads_q8(m)) return;
  const uint32_t max = q8_max(m);
  // Long passes of an int8 GEMM on every part read only the units: the producer may skip f32 x there.
  const uint32_t dead =
      all_q8(*m.w) && q8_gemm_ && max > kQ8MatvecMaxTokens && !read_after(i, m.x) ? kQ8MatvecMaxTokens + 1 : 0;
  auto emit = [&](size_t p, uint32_t max_tokens, uint32_t dead_from) {
    fuse_[p].q8_max = max_tokens, fuse_[p].f32_dead_from = dead_from;
    if (args<CombineArgs>(p) && p > 0 && args<AttnArgs>(p - 1))  // flash and decode attention write x
      fuse_[p - 1].q8_max = max_tokens, fuse_[p - 1].f32_dead_from = dead_from;
  };
  if (!m.one_token && i > 0 && emits_q8(i - 1, *m.x)) return emit(i - 1, max, dead);
  Fusion& f = fuse_[i];
  f.quantize = true;
  const MatmulArgs* p = i > 0 ? args<MatmulArgs>(i - 1) : nullptr;
  if (!m.one_token && p && p->y == m.x && fuse_[i - 1].norm != kNone && p->w->parts.size() == 1 &&
      p->w->parts[0].row0 % 32 == 0) {
    const MatvecShape sh = matvec_shape(p->w->parts[0], *p->w, true, true);
    if (sh.groups * sh.rpl == 32) fuse_[i - 1].q8_out = true, f.quantize_skip_one = true;
  }
  const CopyArgs* c = i > 0 ? args<CopyArgs>(i - 1) : nullptr;
  if (m.one_token && c && c->dst == m.x && i >= 2 && emits_q8(i - 2, *c->src)) {
    emit(i - 2, 1, 0);
    fuse_[i - 1].skip_one_token = true, f.quantize_skip_one = true;
  }
}

// Long passes: the gated GEMM (gate|up) stores h as int8 units itself (h_out_q8.wgsl) and the GEMM on
// h right after it reads them: no quantize_q8 dispatch, no f32 h (the passes: lower_gated_h).
void GraphBuilder::fuse_gated_h(size_t i, const MatmulArgs& m) {
  const MatmulArgs* g = i > 0 ? args<MatmulArgs>(i - 1) : nullptr;
  if (m.one_token || !g || g->y != m.x || !fuse_[i].quantize || !gated_h_capable(*g) || m.w->parts.size() != 1 ||
      m.w->cols != g->w->parts[0].rows)
    return;
  fuse_[i].h_from = i - 1;
}

// One-token passes past the unsplit attention's positions: the QKV matvec just before (its x made in
// its workgroup, a lane group's two rows a rope pair) stores the rows as rope_kv would (y_rope.wgsl),
// for heads of adjacent rope pairs without QK-norm or bias (Llama), and rope_kv skips them. Earlier
// steps keep the plain matvec: their attention makes the heads itself, and the rotation in the matvec
// only cost there (H200: -1% decode on Llama-3.2-1B Q4_0 at short context, +4.7% at 4,096 positions;
// bench/EXPERIMENTS.md). Of one part, or of two types in one dispatch where its bindings and y_rope's
// five fit the device's limit of storage buffers (those after a projection that stored the residual's
// sum bind two fewer). H200: +2.5% decode at 4,096 positions on Llama-3.2-1B Q4_K_M, whose v rows are
// Q6_K in 8 of 16 layers.
void GraphBuilder::fuse_rope_into_matvec(size_t i, const RopeArgs& r) {
  const MatmulArgs* m = i > 0 ? args<MatmulArgs>(i - 1) : nullptr;
  if (!m || m->y != r.qkv || fuse_[i - 1].norm == kNone || r.s.neox || r.s.qk_norm || r.s.bias || r.s.rot % 2 != 0)
    return;
  const Matrix& w = *m->w;
  const MatrixPart* two = second_part(w);
  if ((w.parts.size() > 1 && !two) || w.gated || w.parts[0].row0 != 0) return;
  const uint32_t storage = 10 - (fuse_[i - 1].resid_in ? 2 : 0) + (two ? 1 : 0);
  if (matvec_shape(w.parts[0], w, true, true).rpl != 2 || storage > k_.device().limits().maxStorageBuffersPerShaderStage)
    return;
  fuse_[i].rope_in_matvec = true;
  fuse_[i - 1].rope_out = i;
}

// The attention right after rope_kv makes the query heads from the raw qkv rows itself: flash
// attention in the passes it serves (q_flash_rope.wgsl; rope_kv there makes only the keys and values),
// where the device binds the 10 storage buffers that takes; decode attention in short decode steps
// (q_in_rope.wgsl; rope_kv skips them) and in the split decode steps past them, the key and value heads
// too (q_in_rope_split.wgsl), unless the QKV matvec does rope_kv's work there (rope_in_matvec).
void GraphBuilder::fuse_rope_into_attention(size_t i, const AttnArgs& a) {
  if (i == 0 || !args<RopeArgs>(i - 1)) return;
  Fusion &f = fuse_[i], &r = fuse_[i - 1];
  if (rope_in_flash_ && flash_serves(a.s.hd, a.s.nh, a.s.nkv) &&
      k_.device().limits().maxStorageBuffersPerShaderStage >= 10)
    f.q_in_flash = r.q_in_flash = true;
  if (rope_in_decode_) {
    f.q_in_decode = r.q_in_decode = true;
    f.q_in_decode_split = r.q_in_decode_split = !r.rope_in_matvec;
  }
}


// The experts' gate|up matmul reads its x as int8 units: where the norm that made x can store them
// too (emits_q8), it does, over every pass the experts read (q8_max_ tokens), and the experts skip
// their quantize_q8. Between the two only the router's matmul and the route may run: they leave the
// units alone (a quantized router's quantize_q8 would store the same ones).
void GraphBuilder::fuse_moe_x(size_t i, const MoeMatmulArgs& m) {
  if (!m.gate_up) return fuse_moe_h(i, m);
  if (!xq_ || !q8_x_type(m.e->gate_up_type)) return;
  for (size_t j = i; j-- > 0;) {
    if (const MatmulArgs* r = args<MatmulArgs>(j); r && r->x == m.x && r->y != m.x) continue;
    if (args<MoeRouteArgs>(j)) continue;
    if (!emits_q8(j, *m.x)) return;
    fuse_[j].q8_max = std::max(fuse_[j].q8_max, q8_max_);
    fuse_[i].moe_x_made = true;
    return;
  }
}

// One-token passes: the gate|up matvec stores each pair's h as int8 units too, a unit a workgroup
// (32 rows), in hq/hs (xq holds its own x), and the down projection reads them there.
void GraphBuilder::fuse_moe_h(size_t i, const MoeMatmulArgs& m) {
  const MoeMatmulArgs* g = i > 0 ? args<MoeMatmulArgs>(i - 1) : nullptr;
  const Experts& e = *m.e;
  if (!g || !g->gate_up || g->y != m.x || g->e != m.e || !xq_ || !hq_ || !q8_x_type(e.gate_up_type) ||
      !q8_x_type(e.down_type) || e.ff % 32 != 0 || (uint64_t)m.k * e.ff > std::min(hq_->size(), hs_->size() / 8 * 32))
    return;
  fuse_[i - 1].moe_h_q8 = true;
  fuse_[i].moe_h_made = true;
}

// One-token passes: the experts' down projection sums its K pairs weighted into the combine's
// output itself (matvec_moe.wgsl by token), and the combine skips them (one dispatch a layer and
// the [K][hidden] rows between them saved).
void GraphBuilder::fuse_moe_combine(size_t i, const MoeCombineArgs& c) {
  const MoeMatmulArgs* m = i > 0 ? args<MoeMatmulArgs>(i - 1) : nullptr;
  if (!m || m->gate_up || m->y != c.ys || m->k != c.k || c.k > 16) return;
  fuse_[i - 1].moe_combine = i;
  fuse_[i].skip_one_token = true;
}

}  // namespace ztvm
