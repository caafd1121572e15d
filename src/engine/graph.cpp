#include "engine/graph.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "engine/gpu_layout.h"
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

// ---- Listing: forward.cpp's calls, one node each. ----

GraphBuilder& GraphBuilder::list(Args a) {
  if (finished_) throw std::logic_error("graph builder: an op listed after finish()");
  nodes_.push_back(Node{std::move(a), step_});
  return *this;
}

GraphBuilder& GraphBuilder::embed(const gpu::Buffer& x, const gpu::Buffer& ids, const Matrix& table) {
  return list(EmbedArgs{&x, &ids, &table});
}

GraphBuilder& GraphBuilder::rmsnorm(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& w, uint32_t d,
                                    float eps, const gpu::Buffer* zeros, const gpu::Buffer* scratch) {
  // As a residual step x + zeros whose sum goes to scratch, where a matvec may make x from it.
  const bool as_step = zeros && scratch && d % 4 == 0;
  return list(NormArgs{&y, as_step ? scratch : nullptr, &x, as_step ? zeros : nullptr, &w, d, eps, false});
}

GraphBuilder& GraphBuilder::add_rmsnorm(const gpu::Buffer& y, const gpu::Buffer& sum, const gpu::Buffer& a,
                                        const gpu::Buffer& b, const gpu::Buffer& w, uint32_t d, float eps) {
  if (d % 4 != 0) throw ModelError("hidden size " + std::to_string(d) + " is not a multiple of 4");
  return list(NormArgs{&y, &sum, &a, &b, &w, d, eps, true});
}

GraphBuilder& GraphBuilder::matmul(const gpu::Buffer& y, const gpu::Buffer& x, const Matrix& w, uint32_t y_stride,
                                   bool one_token) {
  return list(MatmulArgs{&y, &x, &w, y_stride, one_token});
}

bool GraphBuilder::argmax(const gpu::Buffer& ids, const gpu::Buffer& tokens, const gpu::Buffer& part,
                          const gpu::Buffer& logits, uint32_t vocab, const gpu::Buffer& x, const Matrix& table) {
  list(PickArgs{false, &ids, &tokens, &part, &logits, nullptr, &x, vocab, &table});
  return table.parts.size() == 1;  // add_picker
}

bool GraphBuilder::sample(const gpu::Buffer& ids, const gpu::Buffer& tokens, const gpu::Buffer& logits,
                          const gpu::Buffer& params, uint32_t vocab, const gpu::Buffer& x, const Matrix& table) {
  list(PickArgs{true, &ids, &tokens, nullptr, &logits, &params, &x, vocab, &table});
  return table.parts.size() == 1;
}

GraphBuilder& GraphBuilder::copy_last_row(const gpu::Buffer& dst, const gpu::Buffer& src, uint32_t width) {
  return list(CopyArgs{&dst, &src, width});
}

void GraphBuilder::finish() {
  if (finished_) throw std::logic_error("graph builder: finish() twice");
  finished_ = true;
  plan();  // graph_fuse.cpp
  last_op_.assign(nodes_.size(), kNone);
  for (size_t i = 0; i < nodes_.size(); i++) lower(i);
  g_.finished = true;
}

// ---- Lowering: each node's ops, knowing its fusions. ----

void GraphBuilder::lower(size_t i) {
  node_ = i;
  step_ = nodes_[i].step;
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, EmbedArgs>) lower_embed(a);
        else if constexpr (std::is_same_v<T, NormArgs>) lower_norm(i, a);
        else if constexpr (std::is_same_v<T, MatmulArgs>) lower_matmul(i, a);
        else if constexpr (std::is_same_v<T, RopeArgs>) lower_rope(i, a);
        else if constexpr (std::is_same_v<T, AttnArgs>) lower_attention(i, a);
        else if constexpr (std::is_same_v<T, CombineArgs>) lower_combine(i, a);
        else if constexpr (std::is_same_v<T, CopyArgs>) lower_copy(i, a);
        else if constexpr (std::is_same_v<T, MoeRouteArgs>) lower_moe_route(a);
        else if constexpr (std::is_same_v<T, MoeMatmulArgs>) lower_moe_matmul(i, a);
        else if constexpr (std::is_same_v<T, MoeCombineArgs>) lower_moe_combine(i, a);
        else if constexpr (std::is_same_v<T, DeltaConvArgs>) lower_deltanet_conv(a);
        else if constexpr (std::is_same_v<T, DeltaScanArgs>) lower_deltanet_scan(a);
        else if constexpr (std::is_same_v<T, GatedNormArgs>) lower_gated_rmsnorm(a);
        else if constexpr (std::is_same_v<T, SigmoidGateArgs>) lower_sigmoid_gate(a);
        else lower_pick(a);
      },
      nodes_[i].args);
  last_op_[i] = g_.ops.empty() ? kNone : last();
}

void GraphBuilder::lower_embed(const EmbedArgs& a) {
  const Matrix& table = *a.table;
  for (const MatrixPart& p : table.parts) {  // one part unless the table outgrows a binding (lavapipe: 128 MiB)
    std::map<std::string, double> c = {{"COLS", table.cols}};
    if (table.parts.size() > 1) c["ROW0"] = p.row0, c["ROWS"] = p.rows;
    RowOp& op = add<RowOp>({"embed", {{"WEIGHT", weight_snippet(p.type)}}, c}, {*a.x, *a.ids, p.buf, *step_});
    op.skip_embedded = table.parts.size() == 1;  // argmax can make the row (GraphBuilder::argmax)
  }
}

// The producer's variant that also stores its output as int8 units (XOUT x_out_q8.wgsl) in xq/xs.
Variant GraphBuilder::q8_variant(gpu::KernelKey key, std::vector<gpu::Binding> b, const std::string& label,
                                 const std::string& role) {
  key.includes["XOUT"] = "x_out_q8";
  b.push_back(*xq_), b.push_back(*xs_);
  return variant(key, b, label, role);
}

void GraphBuilder::lower_norm(size_t i, const NormArgs& a) {
  const Fusion& f = fuse_[i];
  gpu::KernelKey key;
  std::vector<gpu::Binding> b;
  if (a.add) {
    // A thread per quad up to 256 threads (a power of two), each keeping up to 4 quads in registers.
    const uint32_t quads = a.d / 4;
    uint32_t wg = 8;
    while (wg < 256 && wg < quads) wg *= 2;
    const uint32_t keep = std::min<uint32_t>(4, (quads + wg - 1) / wg);
    key = {"add_rmsnorm", {{"XOUT", "x_out_none"}}, {{"D", a.d}, {"EPS", a.eps}, {"WG", wg}, {"KEEP", keep}}};
    b = {*a.y, *a.sum, *a.a, *a.b, *a.w, *step_};
  } else {
    key = {"rmsnorm", {{"XOUT", "x_out_none"}}, {{"D", a.d}, {"EPS", a.eps}}};
    b = {*a.y, *a.a, *a.w, *step_};
  }
  RowOp& op = add<RowOp>(key, b);
  op.skip_one_token = f.skip_one_token;
  if (!f.q8_max) return;
  op.single = q8_variant(key, b, key.kernel + "_q8:" + a.y->label(), op.main.role + "_q8");
  op.single_groups = op.a, op.single_max = f.q8_max;
  // Passes whose readers of y all read the units: the int8 units only (F32_OUT).
  if (f.f32_dead_from && a.add) {
    key.constants["F32_OUT"] = 0;
    op.long_main = q8_variant(key, b, key.kernel + "_q8_only:" + a.y->label(), op.single.role);
    op.long_min = f.f32_dead_from;
  }
}

// x -> int8 units in xq/xs (every token of passes up to max_tokens), before the matvecs that read them.
void GraphBuilder::add_quantize_q8(const gpu::Buffer& x, uint32_t cols, bool one_token, uint32_t max_tokens) {
  auto d = std::make_unique<RowOp>();
  d->single = variant({"quantize_q8", {}, {{"COLS", cols}}}, {*xq_, *xs_, x, *step_}, "quantize_q8:" + x.label());
  d->single_groups = (cols / 32 + 63) / 64, d->single_max = max_tokens;
  d->single_only = true, d->always_single = one_token;
  g_.ops.push_back(std::move(d));
}

bool GraphBuilder::q8_x_type(GgmlType t) { return int8_dot_type(t); }

// The kernel that picks the next token (argmax's final pass, sample) with its row of the embedding
// table stored in x (next_embed.wgsl), where the table is one binding (else the embed dispatch stays).
void GraphBuilder::add_picker(gpu::KernelKey key, std::vector<gpu::Binding> b, const gpu::Buffer& x, const Matrix& table) {
  const bool embed = table.parts.size() == 1;
  key.includes["NEXT"] = embed ? "next_embed" : "next_none";
  if (embed) {
    key.includes["WEIGHT"] = weight_snippet(table.parts[0].type);
    key.constants["COLS"] = table.cols;
    b.push_back(x), b.push_back(table.parts[0].buf);
  }
  // Its role in profiles: the kernel's, not the embedding table's type that WEIGHT brings.
  add<FixedOp>(key, b).main.role = key.kernel + (key.constants.count("FINAL") ? "_final" : "");
}

void GraphBuilder::lower_pick(const PickArgs& a) {
  if (a.sample)
    return add_picker({"sample", {}, {{"N", a.vocab}}}, {*a.ids, *a.tokens, *a.logits, *a.params, *step_}, *a.x, *a.table);
  const std::map<std::string, double> c = {{"N", a.vocab}, {"PARTS", kArgmaxParts}};
  add<FixedOp>({"argmax", {{"NEXT", "next_none"}}, c}, {*a.ids, *a.tokens, *a.part, *a.logits, *step_}).groups = kArgmaxParts;
  gpu::KernelKey fk{"argmax", {}, c};
  fk.constants["FINAL"] = 1;
  add_picker(fk, {*a.ids, *a.tokens, *a.part, *a.logits, *step_}, *a.x, *a.table);
}

void GraphBuilder::lower_copy(size_t i, const CopyArgs& a) {
  auto d = std::make_unique<CopyRowOp>();
  d->src = a.src, d->dst = a.dst, d->width = a.width;
  d->skip_one_token = fuse_[i].skip_one_token;
  g_.ops.push_back(std::move(d));
}

}  // namespace ztvm
