// The gated DeltaNet ops of GraphBuilder (graph.h), Qwen3.5's linear-attention layer: the causal conv1d
// + SiLU over q|k|v (deltanet_conv.wgsl), the gated delta rule over the pass's tokens
// (deltanet_scan.wgsl), the gated output norm (gated_rmsnorm.wgsl); and its gated attention's output
// gate (sigmoid_gate.wgsl). Each layer's conv window and delta-rule state live in buffers the caller
// makes (deltanet_*_state_bytes) and carry from pass to pass.
#include <algorithm>

#include "engine/graph.h"
#include "model/model_error.h"

namespace ztvm {

namespace {

constexpr uint32_t kWg = 64;  // every kernel here: 64 threads

// The scan's columns of S a workgroup (64 / its row groups, each of up to 32 rows).
uint32_t scan_cols(uint32_t dk) { return kWg / std::max<uint32_t>(1, dk / 32); }

}  // namespace

GraphBuilder& GraphBuilder::deltanet_conv(const gpu::Buffer& y, const gpu::Buffer& state, const gpu::Buffer& qkv,
                                          const gpu::Buffer& w, const DeltaShape& s) {
  if (s.conv_kernel < 2 || s.conv_kernel > 8)
    throw ModelError("DeltaNet conv of " + std::to_string(s.conv_kernel) + " taps: the kernel takes 2 to 8");
  if (state.size() < deltanet_conv_state_bytes(s) || w.size() < 4ull * s.channels() * s.conv_kernel)
    throw std::invalid_argument("deltanet_conv: state or weight buffer too small");
  return list(DeltaConvArgs{&y, &state, &qkv, &w, s});
}

GraphBuilder& GraphBuilder::deltanet_scan(const gpu::Buffer& o, const gpu::Buffer& state, const gpu::Buffer& x,
                                          const gpu::Buffer& a, const gpu::Buffer& b, const gpu::Buffer& A,
                                          const gpu::Buffer& dt_bias, const DeltaShape& s) {
  const uint32_t cols = scan_cols(s.dk);
  if (s.nk == 0 || s.nv % s.nk != 0 || s.dk % 32 != 0 || s.dk > 512 || kWg % (s.dk / 32) != 0 || s.dv % cols != 0)
    throw ModelError("DeltaNet heads of " + std::to_string(s.dk) + " x " + std::to_string(s.dv) + " (" +
                     std::to_string(s.nk) + " key, " + std::to_string(s.nv) +
                     " value): the scan takes key heads of 32, 64, 128, 256 or 512, value heads a multiple of " +
                     std::to_string(cols) + " and nv a multiple of nk");
  if (state.size() < deltanet_scan_state_bytes(s)) throw std::invalid_argument("deltanet_scan: state buffer too small");
  return list(DeltaScanArgs{&o, &state, &x, &a, &b, &A, &dt_bias, s});
}

GraphBuilder& GraphBuilder::gated_rmsnorm(const gpu::Buffer& y, const gpu::Buffer& x, const gpu::Buffer& z,
                                          const gpu::Buffer& w, uint32_t d, uint32_t heads, float eps) {
  return list(GatedNormArgs{&y, &x, &z, &w, d, heads, eps});
}

GraphBuilder& GraphBuilder::sigmoid_gate(const gpu::Buffer& att, const gpu::Buffer& gate, uint32_t nh, uint32_t hd,
                                         uint32_t stride, uint32_t offset, uint32_t head_stride) {
  return list(SigmoidGateArgs{&att, &gate, nh, hd, stride, offset, head_stride});
}

// The conv a thread per (token, channel); then the window's last inputs into the state, a thread a
// channel, in the next dispatch (after every read of the old state).
void GraphBuilder::lower_deltanet_conv(const DeltaConvArgs& a) {
  const uint32_t C = a.s.channels(), blocks = (C + kWg - 1) / kWg;
  const gpu::KernelKey key{"deltanet_conv", {}, {{"C", C}, {"KC", a.s.conv_kernel}}};
  const std::vector<gpu::Binding> b = {*a.y, *a.state, *a.x, *a.w, *step_};
  add<RowOp>(key, b).a = blocks;
  gpu::KernelKey uk = key;
  uk.constants["STATE_UPDATE"] = 1;
  FixedOp& up = add<FixedOp>(uk, b);
  up.groups = blocks;
  up.main.role = "deltanet_conv_state";
}

// A workgroup per value head and block of scan_cols columns of its state, whatever the pass's length:
// the tokens are walked inside.
void GraphBuilder::lower_deltanet_scan(const DeltaScanArgs& a) {
  const DeltaShape& s = a.s;
  const uint32_t cols = scan_cols(s.dk);
  const gpu::KernelKey key{"deltanet_scan", {},
                           {{"NK", s.nk}, {"DK", s.dk}, {"NV", s.nv}, {"DV", s.dv}, {"TILED", s.tiled ? 1 : 0},
                            {"COLS", cols}}};
  add<FixedOp>(key, {*a.y, *a.state, *a.x, *a.a, *a.b, *a.A, *a.dt_bias, *step_}).groups = s.nv * (s.dv / cols);
}

void GraphBuilder::lower_gated_rmsnorm(const GatedNormArgs& a) {
  const gpu::KernelKey key{"gated_rmsnorm", {}, {{"D", a.d}, {"HEADS", a.heads}, {"EPS", a.eps}}};
  add<RowOp>(key, {*a.y, *a.x, *a.z, *a.w, *step_}).a = a.heads;
}

void GraphBuilder::lower_sigmoid_gate(const SigmoidGateArgs& a) {
  const gpu::KernelKey key{"sigmoid_gate", {},
                           {{"NH", a.nh}, {"HD", a.hd}, {"STRIDE", a.stride}, {"OFFSET", a.offset},
                            {"HEAD_STRIDE", a.head_stride}}};
  add<RowOp>(key, {*a.y, *a.gate, *step_}).a = (a.nh * a.hd + kWg - 1) / kWg;
}

}  // namespace ztvm
