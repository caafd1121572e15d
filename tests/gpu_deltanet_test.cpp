// Qwen3.5's gated DeltaNet kernels against their CPU twins (reference/ops.h), each fed the same inputs
// as its twin: the causal conv1d + SiLU with its window carried between passes (deltanet_conv.wgsl),
// the gated delta rule over a pass's tokens with its state carried (deltanet_scan.wgsl), the gated
// output norm (gated_rmsnorm.wgsl), and gated attention's output gate (sigmoid_gate.wgsl). Shapes: the
// fixture's heads (nk 2 x dk 64, nv 4 x dv 64) and Qwen3.5's (16 x 128, 32 x 128), both head orders,
// passes of 1, 3 and 37 tokens carried on from one another, and a pass split in two equal to one pass.
//
// Thresholds: the kernels compute in f32 what the twins compute in double (rounding each stored value
// to f32), so the outputs differ by f32 roundings (lavapipe: conv 6e-15, delta rule 6e-14 and its
// state 4e-14 over 37 tokens, sigmoid gate 3e-15 NMSE); 1e-10 leaves room for the exp and inverse
// square roots of other devices' math libraries, and a wrong index or head order gives 0.1 to 2.
#include <gtest/gtest.h>

#include "gpu_kernels_rig.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

using Shape = GraphBuilder::DeltaShape;

ref::DeltaShape twin_shape(const Shape& s) { return {s.nk, s.dk, s.nv, s.dv, s.tiled}; }

std::string name(const Shape& s) {
  return "nk=" + std::to_string(s.nk) + " dk=" + std::to_string(s.dk) + " nv=" + std::to_string(s.nv) +
         " dv=" + std::to_string(s.dv) + (s.tiled ? " tiled" : " grouped");
}

// One pass's inputs, as the layer's projections would make them.
struct PassInputs {
  std::vector<float> qkv, a, b, z;  // [n][C], [n][nv], [n][nv], [n][nv dv]
};

PassInputs random_pass(const Shape& s, uint32_t n, uint32_t seed) {
  return {random_vec((size_t)n * s.channels(), seed), random_vec((size_t)n * s.nv, seed + 1),
          random_vec((size_t)n * s.nv, seed + 2, 2.f), random_vec((size_t)n * s.nv * s.dv, seed + 3)};
}

// What a pass leaves: each kernel's output and the layer's two states.
struct PassOutputs {
  std::vector<float> conv, o, y, conv_state, ssm_state;
};

// A DeltaNet layer's three kernels as forward.cpp would list them, over passes of up to max_tokens,
// with its weights (random, A < 0 as ssm_a is) and its state buffers.
struct Layer {
  Shape s;
  uint32_t max_tokens;
  float eps = 1e-6f;
  std::vector<float> w, A, dt, norm_w;
  gpu::Buffer step, qkv, a, b, z, conv, o, y, conv_state, ssm_state, w_buf, A_buf, dt_buf, norm_buf;
  Graph g;

  Layer(gpu::Kernels& k, const Shape& shape, uint32_t max_n) : s(shape), max_tokens(max_n) {
    const uint32_t C = s.channels(), vd = s.nv * s.dv;
    w = random_vec((size_t)C * s.conv_kernel, 11, 0.5f);
    A = random_vec(s.nv, 12, 0.5f);
    for (float& x : A) x = -std::exp(x);
    dt = random_vec(s.nv, 13, 0.5f), norm_w = random_vec(s.dv, 14);
    auto f32 = [&](const std::string& label, size_t floats) { return device().buffer("test." + label, floats * 4); };
    step = step_buffer(0, 1);
    qkv = f32("qkv", (size_t)max_n * C), a = f32("a", (size_t)max_n * s.nv), b = f32("b", (size_t)max_n * s.nv);
    z = f32("z", (size_t)max_n * vd), conv = f32("conv", (size_t)max_n * C), o = f32("o", (size_t)max_n * vd);
    y = f32("y", (size_t)max_n * vd);
    conv_state = device().buffer("test.conv_state", GraphBuilder::deltanet_conv_state_bytes(s));
    ssm_state = device().buffer("test.ssm_state", GraphBuilder::deltanet_scan_state_bytes(s));
    w_buf = upload("test.conv1d", w), A_buf = upload("test.ssm_a", A), dt_buf = upload("test.ssm_dt", dt);
    norm_buf = upload("test.ssm_norm", norm_w);
    GraphBuilder gb(k, g, step);
    gb.deltanet_conv(conv, conv_state, qkv, w_buf, s);
    gb.deltanet_scan(o, ssm_state, conv, a, b, A_buf, dt_buf, s);
    gb.gated_rmsnorm(y, o, z, norm_buf, s.dv, s.nv, eps);
    gb.finish();
    // Garbage in the states: a pass at position 0 must not read them.
    fill(conv_state, GraphBuilder::deltanet_conv_state_bytes(s) / 4, 21);
    fill(ssm_state, GraphBuilder::deltanet_scan_state_bytes(s) / 4, 22);
  }
  static void fill(const gpu::Buffer& buf, size_t floats, uint32_t seed) {
    const std::vector<float> v = random_vec(floats, seed, 100.f);
    device().write(buf, v.data(), v.size() * 4);
  }

  PassOutputs pass(uint32_t pos0, const PassInputs& in) {
    const uint32_t n = (uint32_t)(in.a.size() / s.nv), vd = s.nv * s.dv;
    const StepParams p{pos0, n, 0, 0};
    device().write(step, &p, sizeof p);
    device().write(qkv, in.qkv.data(), in.qkv.size() * 4), device().write(a, in.a.data(), in.a.size() * 4);
    device().write(b, in.b.data(), in.b.size() * 4), device().write(z, in.z.data(), in.z.size() * 4);
    run(g, pos0, n);
    return {read(conv, (size_t)n * s.channels()), read(o, (size_t)n * vd), read(y, (size_t)n * vd),
            read(conv_state, GraphBuilder::deltanet_conv_state_bytes(s) / 4),
            read(ssm_state, GraphBuilder::deltanet_scan_state_bytes(s) / 4)};
  }
};

// The CPU layer's state between passes, as reference/model.cpp keeps it.
struct TwinState {
  std::vector<float> conv, ssm;
};

// Each kernel's twin on the inputs the kernel read: the conv on the pass's qkv (with the twin's window),
// the scan on the GPU's conv output (with the twin's S), the norm on the GPU's o. Checks the outputs and
// the states the pass leaves.
void expect_pass_matches_twin(const Layer& L, const PassInputs& in, const PassOutputs& got, TwinState& st,
                              const std::string& at) {
  const Shape& s = L.s;
  const uint32_t n = (uint32_t)(in.a.size() / s.nv), C = s.channels(), vd = s.nv * s.dv;
  const std::vector<float> conv = ref::causal_conv1d(in.qkv, L.w, C, s.conv_kernel, &st.conv);
  EXPECT_LT(nmse(got.conv, conv), 1e-10) << at << ": conv";
  EXPECT_EQ(got.conv_state, st.conv) << at << ": conv state";  // copies of the inputs
  st.ssm.resize((size_t)s.nv * s.dk * s.dv, 0.f);
  std::vector<float> o((size_t)n * vd), gate(s.nv), beta(s.nv);
  for (uint32_t t = 0; t < n; t++) {
    ref::deltanet_gates(&in.a[t * s.nv], &in.b[t * s.nv], L.A, L.dt, s.nv, gate.data(), beta.data());
    ref::gated_delta_rule_step(&got.conv[(size_t)t * C], gate.data(), beta.data(), st.ssm.data(), &o[(size_t)t * vd],
                               twin_shape(s));
  }
  EXPECT_LT(nmse(got.o, o), 1e-10) << at << ": delta rule";
  EXPECT_LT(nmse(got.ssm_state, st.ssm), 1e-10) << at << ": delta rule state";
  EXPECT_LT(nmse(got.y, ref::gated_rmsnorm(got.o, in.z, L.norm_w, s.dv, L.eps)), 1e-10) << at << ": gated norm";
  st.ssm = got.ssm_state;  // the next pass's twin starts where the GPU is (each kernel checked on its own)
  st.conv = got.conv_state;
}

// Passes of these lengths, each from where the last left off (the first at position 0), against the twins.
void check_passes(const Shape& s, const std::vector<uint32_t>& lengths, uint32_t seed) {
  gpu::Kernels k(device());
  Layer L(k, s, *std::max_element(lengths.begin(), lengths.end()));
  TwinState st;
  uint32_t pos = 0;
  for (uint32_t n : lengths) {
    const PassInputs in = random_pass(s, n, seed + pos);
    const PassOutputs got = L.pass(pos, in);
    expect_pass_matches_twin(L, in, got, st, name(s) + " pass of " + std::to_string(n) + " at " + std::to_string(pos));
    pos += n;
  }
}

Shape fixture(bool tiled) { return {2, 64, 4, 64, 4, tiled}; }
Shape qwen35(bool tiled) { return {16, 128, 32, 128, 4, tiled}; }

class DeltaNetOrder : public ::testing::TestWithParam<bool> {};

// 3, then two one-token passes (the conv's window then shifts through its old rows), then 37.
TEST_P(DeltaNetOrder, FixturePassesMatchCpuTwin) { check_passes(fixture(GetParam()), {3, 1, 1, 37}, 100); }

// A single pass of each length from position 0, its states garbage beforehand.
TEST_P(DeltaNetOrder, FixtureFirstPassesMatchCpuTwin) {
  for (uint32_t n : {1u, 3u, 37u}) check_passes(fixture(GetParam()), {n}, 200 + n);
}

// Qwen3.5's heads (8,192 conv channels, a 128 x 128 state per value head): few tokens, for lavapipe.
TEST_P(DeltaNetOrder, Qwen35PassesMatchCpuTwin) { check_passes(qwen35(GetParam()), {3, 1}, 300); }

// 37 tokens as 20 + 17 leave what one pass of 37 leaves, exactly: the same f32 operations per token,
// the state only moving between registers and its buffer.
TEST_P(DeltaNetOrder, SplitPassEqualsOnePass) {
  const Shape s = fixture(GetParam());
  gpu::Kernels k(device());
  const PassInputs all = random_pass(s, 37, 400);
  auto part = [&](uint32_t t0, uint32_t n) {
    auto rows = [&](const std::vector<float>& v, size_t w) {
      return std::vector<float>(v.begin() + t0 * w, v.begin() + (t0 + n) * w);
    };
    return PassInputs{rows(all.qkv, s.channels()), rows(all.a, s.nv), rows(all.b, s.nv), rows(all.z, s.nv * s.dv)};
  };
  Layer one(k, s, 37), two(k, s, 37);
  const PassOutputs whole = one.pass(0, all);
  const PassOutputs first = two.pass(0, part(0, 20)), second = two.pass(20, part(20, 17));
  auto cat = [](std::vector<float> x, const std::vector<float>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  EXPECT_EQ(cat(first.conv, second.conv), whole.conv);
  EXPECT_EQ(cat(first.o, second.o), whole.o);
  EXPECT_EQ(cat(first.y, second.y), whole.y);
  EXPECT_EQ(second.conv_state, whole.conv_state);
  EXPECT_EQ(second.ssm_state, whole.ssm_state);
  // And the one pass against the twins.
  TwinState st;
  expect_pass_matches_twin(one, all, whole, st, name(s) + " one pass of 37");
}

INSTANTIATE_TEST_SUITE_P(HeadOrders, DeltaNetOrder, ::testing::Values(false, true),
                         [](const auto& info) { return std::string(info.param ? "Tiled" : "Grouped"); });

// Gated attention's output gate read from attn_q's interleaved rows (and, the layout the kernel also
// takes, a separate gate buffer), in place on att.
TEST(SigmoidGate, MatchesCpuTwin) {
  gpu::Kernels k(device());
  struct Case { uint32_t nh, hd, n; };
  for (const Case c : {Case{4, 64, 3}, Case{16, 256, 5}, Case{3, 24, 1}}) {
    const uint32_t w = c.nh * c.hd;
    const std::vector<float> q_full = random_vec((size_t)c.n * 2 * w, 500 + c.hd, 2.f);
    const std::vector<float> att0 = random_vec((size_t)c.n * w, 600 + c.hd);
    std::vector<float> q, gate;
    ref::split_q_gate(q_full, c.nh, c.hd, &q, &gate);
    std::vector<float> want = att0;
    ref::sigmoid_gate(want, gate);
    for (bool interleaved : {true, false}) {
      gpu::Buffer att = upload("test.att", att0), src = upload("test.q_full", interleaved ? q_full : gate);
      gpu::Buffer step = step_buffer(0, c.n);
      Graph g;
      GraphBuilder gb(k, g, step);
      if (interleaved) gb.sigmoid_gate(att, src, c.nh, c.hd, 2 * w, c.hd, 2 * c.hd);
      else gb.sigmoid_gate(att, src, c.nh, c.hd, w, 0, c.hd);
      gb.finish();
      run(g, 0, c.n);
      EXPECT_LT(nmse(read(att, (size_t)c.n * w), want), 1e-12)
          << "nh=" << c.nh << " hd=" << c.hd << " n=" << c.n << (interleaved ? " interleaved" : " separate");
    }
  }
}

// Shapes the scan does not take are refused by name at build, not run wrong.
TEST(DeltaNet, RefusesShapesTheScanDoesNotTake) {
  gpu::Kernels k(device());
  gpu::Buffer step = step_buffer(0, 1), buf = device().buffer("test.any", 1 << 20);
  for (const Shape s : {Shape{2, 48, 4, 64, 4, false}, Shape{2, 64, 3, 64, 4, false}, Shape{2, 64, 4, 40, 4, false}}) {
    Graph g;
    GraphBuilder gb(k, g, step);
    EXPECT_THROW(gb.deltanet_scan(buf, buf, buf, buf, buf, buf, buf, s), ModelError) << name(s);
  }
  Graph g;
  GraphBuilder gb(k, g, step);
  EXPECT_THROW(gb.deltanet_conv(buf, buf, buf, buf, Shape{2, 64, 4, 64, 9, false}), ModelError);
}

}  // namespace
