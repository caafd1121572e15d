#include "engine/graph.h"

#include <algorithm>
#include <cmath>

#include "model/model_error.h"

namespace ztvm {

std::string weight_snippet(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return "weight_f32";
    case GgmlType::F16: return "weight_f16";
    case GgmlType::BF16: return "weight_bf16";
    case GgmlType::Q8_0: return "weight_q8_0";
    case GgmlType::Q4_0: return "weight_q4_0";
    case GgmlType::Q4_K: return "weight_q4_k";
    case GgmlType::Q6_K: return "weight_q6_k";
    default: throw ModelError(std::string("no GPU kernel for weight type ") + type_name(t));
  }
}

void Graph::encode(gpu::Recorder& rec, uint32_t pos0, uint32_t n_tokens) const {
  const uint32_t tiles = (n_tokens + 63) / 64;
  for (const Dispatch& d : ops) {
    if (!d.pipeline) {
      rec.copy(*d.src, (uint64_t)(n_tokens - 1) * d.b * 4, *d.dst, 0, (uint64_t)d.b * 4);
      continue;
    }
    if (d.single && (n_tokens == 1 || d.always_single)) {
      rec.dispatch(*d.single, d.single_group, d.single_groups, 1, d.single_role, d.bytes);
      continue;
    }
    uint32_t groups = d.a;
    switch (d.grid) {
      case Grid::Fixed: break;
      case Grid::PerToken: groups = d.a * n_tokens; break;
      case Grid::GemmTiles: groups = d.a * tiles; break;
      case Grid::AttentionSplits: groups = d.a * n_tokens * ((pos0 + n_tokens + d.b - 1) / d.b); break;
    }
    rec.dispatch(*d.pipeline, d.group, groups, 1, d.role, d.bytes);
  }
}

void GraphBuilder::add(const gpu::KernelKey& key, const std::vector<gpu::Binding>& b, Grid grid, uint32_t a,
                       uint32_t bb, uint64_t bytes) {
  const gpu::Pipeline& p = k_.get(key);
  std::string label = key.kernel + ":" + b[0].buffer->label();
  Dispatch d;
  d.pipeline = &p;
  d.group = k_.device().bind(p, b, label);
  d.grid = grid, d.a = a, d.b = bb, d.bytes = bytes;
  d.role = key.kernel + (key.includes.count("WEIGHT") ? "_" + key.includes.at("WEIGHT").substr(7) : "");
  g_.ops.push_back(std::move(d));
}

void GraphBuilder::embed(const gpu::Buffer& x, const gpu::Buffer& ids, const Matrix& table) {
  if (table.parts.size() != 1) throw ModelError("token_embd split across buffers is not supported yet");
  const MatrixPart& p = table.parts[0];
  add({"embed", {{"WEIGHT", weight_snippet(p.type)}}, {{"COLS", table.cols}}}, {x, ids, p.buf, *step_}, Grid::PerToken, 1);
}

void GraphBuilder::rmsnorm(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& w, uint32_t d, float eps) {
  add({"rmsnorm", {}, {{"D", d}, {"EPS", eps}}}, {y, x, w, *step_}, Grid::PerToken, 1);
}

void GraphBuilder::add_rmsnorm(const gpu::Buffer& y, const gpu::Buffer& sum, const gpu::Buffer& a, const gpu::Buffer& b,
                               const gpu::Buffer& w, uint32_t d, float eps) {
  add({"add_rmsnorm", {}, {{"D", d}, {"EPS", eps}}}, {y, sum, a, b, w, *step_}, Grid::PerToken, 1);
}

void GraphBuilder::matmul(const gpu::Buffer& y, const gpu::Buffer& x, const Matrix& w, uint32_t y_stride,
                          bool one_token) {
  if (one_token && w.cols % 32 != 0) throw ModelError("LM head width " + std::to_string(w.cols) + " is not a multiple of 32");
  for (const MatrixPart& p : w.parts) {
    std::map<std::string, double> c = {{"ROWS", p.rows}, {"COLS", w.cols}, {"Y_OFFSET", p.row0},
                                       {"Y_STRIDE", y_stride ? y_stride : w.rows}};
    if (w.gated) c["GATED"] = 1;
    const uint32_t row_tiles = (p.rows + (w.gated ? 31 : 63)) / (w.gated ? 32 : 64);
    add({"gemm", {{"WEIGHT", weight_snippet(p.type)}}, c}, {y, x, p.buf, *step_}, Grid::GemmTiles, row_tiles, 0,
        p.buf.size());
    if (w.cols % 32 == 0) {  // decode: the matvec kernel (rows of whole 32-element units)
      // Rows per lane group: enough workgroups to fill a large GPU on short matrices, x reuse on long ones.
      const uint32_t rpl = p.rows >= 16384 ? 4 : p.rows >= 4096 ? 2 : 1;
      std::map<std::string, double> mc = {{"ROWS", p.rows}, {"COLS", w.cols}, {"Y_OFFSET", p.row0}, {"RPL", rpl}};
      if (w.gated) mc["GATED"] = 1;
      std::string snippet = weight_snippet(p.type);
      const gpu::Pipeline& mv = k_.get({"matvec", {{"WEIGHT", snippet}, {"DOT", "dot_" + snippet.substr(7)}}, mc});
      Dispatch& d = g_.ops.back();
      d.single = &mv;
      d.single_group = k_.device().bind(mv, {y, x, p.buf}, "matvec:" + y.label());
      d.single_groups = (p.rows + 2 * rpl - 1) / (2 * rpl);  // 2 lane groups per workgroup
      d.always_single = one_token;
      d.single_role = "matvec_" + snippet.substr(7) + (w.gated ? "_gated" : "");
    }
  }
}

void GraphBuilder::rope_kv(const gpu::Buffer& q, const gpu::Buffer& k_cache, const gpu::Buffer& v_cache,
                           const gpu::Buffer& qkv, const gpu::Buffer& aux, const gpu::Buffer& rope,
                           const gpu::Buffer& pages, const AttnShape& s) {
  add({"rope_kv", {},
       {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"ROT", s.rot}, {"PAGE", s.page}, {"NEOX", s.neox},
        {"QK_NORM", s.qk_norm}, {"HAS_BIAS", s.bias}, {"EPS", s.eps}}},
      {q, k_cache, v_cache, qkv, aux, rope, pages, *step_}, Grid::PerToken, s.nh + 2 * s.nkv);
}

void GraphBuilder::attention(const gpu::Buffer& part, const gpu::Buffer& q, const gpu::Buffer& k_cache,
                             const gpu::Buffer& v_cache, const gpu::Buffer& pages, const AttnShape& s) {
  add({"attention", {},
       {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"PAGE", s.page}, {"SPLIT", s.split},
        {"SCALE", 1.0 / std::sqrt((double)s.hd)}}},
      {part, q, k_cache, v_cache, pages, *step_}, Grid::AttentionSplits, s.nh, s.split);
}

void GraphBuilder::attention_combine(const gpu::Buffer& att, const gpu::Buffer& part, const AttnShape& s) {
  add({"attention_combine", {}, {{"HD", s.hd}, {"NH", s.nh}, {"SPLIT", s.split}}}, {att, part, *step_},
      Grid::PerToken, s.nh);
}

void GraphBuilder::argmax(const gpu::Buffer& ids, const gpu::Buffer& tokens, const gpu::Buffer& part,
                          const gpu::Buffer& logits, uint32_t vocab) {
  const std::map<std::string, double> c = {{"N", vocab}, {"PARTS", kArgmaxParts}};
  add({"argmax", {}, c}, {ids, tokens, part, logits, *step_}, Grid::Fixed, kArgmaxParts);
  auto final_c = c;
  final_c["FINAL"] = 1;
  add({"argmax", {}, final_c}, {ids, tokens, part, logits, *step_}, Grid::Fixed, 1);
}

void GraphBuilder::sample(const gpu::Buffer& ids, const gpu::Buffer& tokens, const gpu::Buffer& logits,
                          const gpu::Buffer& params, uint32_t vocab) {
  add({"sample", {}, {{"N", vocab}}}, {ids, tokens, logits, params, *step_}, Grid::Fixed, 1);
}

void GraphBuilder::copy_last_row(const gpu::Buffer& dst, const gpu::Buffer& src, uint32_t width) {
  Dispatch d;
  d.src = &src, d.dst = &dst, d.b = width;
  d.role = "copy";
  g_.ops.push_back(std::move(d));
}

}  // namespace ztvm
