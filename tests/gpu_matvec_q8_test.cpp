// The matvec with x quantized to int8 (GraphBuilder::use_q8_x: quantize_q8.wgsl, then the
// dotq8_<type>.wgsl dots), for one token and for token groups in short passes, against its CPU twin,
// ref::matmul of ref::quantize_q8(x). Longer passes of the same graph skip the quantization and
// must still give the f32 GEMM's result.
#include <gtest/gtest.h>

#include "gpu_kernels_rig.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

struct Q8Case {
  GgmlType type;
  uint32_t rows, cols;
};

// y for a pass of T tokens of a graph built with int8 x for passes of up to max_tokens.
std::vector<float> run_matmul(gpu::Kernels& k, Graph& g, const Matrix& m, const std::vector<float>& x, uint32_t T,
                              size_t out, uint32_t max_tokens = 1, uint32_t tt = 8, uint32_t rpl = 1,
                              uint32_t lanes = 16) {
  const uint32_t cols = (uint32_t)(x.size() / T);
  gpu::Buffer xb = upload("test.x", x), y = device().buffer("test.y", out * 4);
  gpu::Buffer xq = device().buffer("test.xq", (size_t)std::max(T, max_tokens) * cols);
  gpu::Buffer xs = device().buffer("test.xs", (size_t)std::max(T, max_tokens) * cols / 32 * 8);
  gpu::Buffer step = step_buffer(0, T);
  GraphBuilder b(k, g, step);
  b.use_q8_x(xq, xs, max_tokens, tt, rpl, lanes);
  b.matmul(y, xb, m).finish();
  run(g, 0, T);
  return read(y, out);
}


// The residual step, add_rmsnorm and a matmul on its output, as the forward pass records them: random
// a, b (T x d) and norm weights, int8 x for passes of up to max_tokens, y of T x y_width floats.
struct NormThenMatmul {
  std::vector<float> a, b, nw;
  gpu::Buffer ab, bb, nwb, xb, sum, y, step, xq, xs;
  Graph g;
  NormThenMatmul(gpu::Kernels& k, const Matrix& m, uint32_t d, uint32_t T, uint32_t y_width, uint32_t max_tokens,
                 uint32_t seed)
      : a(random_vec((size_t)T * d, seed)), b(random_vec((size_t)T * d, seed + 1)), nw(random_vec(d, seed + 2, 0.3f)),
        ab(upload("test.a", a)), bb(upload("test.b", b)), nwb(upload("test.norm", nw)),
        xb(device().buffer("test.xb", (size_t)T * d * 4)), sum(device().buffer("test.sum", (size_t)T * d * 4)),
        y(device().buffer("test.y", (size_t)T * y_width * 4)), step(step_buffer(0, T)),
        xq(device().buffer("test.xq", (size_t)max_tokens * d)), xs(device().buffer("test.xs", (size_t)max_tokens * d / 32 * 8)) {
    GraphBuilder gb(k, g, step);
    gb.use_q8_x(xq, xs, max_tokens);
    gb.add_rmsnorm(xb, sum, ab, bb, nwb, d, 1e-5f);
    gb.matmul(y, xb, m).finish();
  }
  std::vector<float> residual() const {  // a + b
    std::vector<float> s(a.size());
    for (size_t i = 0; i < s.size(); i++) s[i] = a[i] + b[i];
    return s;
  }
};
}  // namespace

class Int8MatvecTest : public ::testing::TestWithParam<Q8Case> {};

TEST_P(Int8MatvecTest, MatchesCpuTwin) {
  const Q8Case c = GetParam();
  gpu::Kernels k(device());
  EncodedMatrix w(c.type, c.rows, c.cols, 11);
  Matrix m = upload_matrix(device(), "test.w", {&w.view});
  std::vector<float> x = random_vec(c.cols, 12);
  Graph g;
  std::vector<float> got = run_matmul(k, g, m, x, 1, c.rows);
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(role(g, 0, "single"), "quantize_q8");
  const std::vector<float> twin = ref::matmul(w.ref(), ref::quantize_q8(x));
  const std::vector<float> exact = ref::matmul(w.ref(), x);
  // The integer dots are exact; what differs from the twin is f32 rounding of the scales, and a code
  // off by one where x / d lands on a rounding boundary (GPU division is not correctly rounded).
  const double e_twin = nmse(got, twin), e_f32 = nmse(got, exact);
  EXPECT_LT(e_twin, 1e-9) << type_name(c.type);
  // 8-bit x costs precision against f32 x: measurably (so the int8 path really ran), but little.
  EXPECT_GT(e_f32, 1e-8) << type_name(c.type);
  EXPECT_LT(e_f32, 1e-4) << type_name(c.type);
}

INSTANTIATE_TEST_SUITE_P(
    QuantTypes, Int8MatvecTest,
    ::testing::Values(Q8Case{GgmlType::Q4_0, 70, 256}, Q8Case{GgmlType::Q4_0, 2050, 96},
                      Q8Case{GgmlType::Q4_0, 37, 4096}, Q8Case{GgmlType::Q8_0, 70, 256},
                      Q8Case{GgmlType::Q8_0, 9001, 64}, Q8Case{GgmlType::Q4_K, 70, 512},
                      Q8Case{GgmlType::Q4_K, 4101, 256}, Q8Case{GgmlType::Q6_K, 70, 512},
                      Q8Case{GgmlType::Q6_K, 2050, 4352}),
    [](const auto& info) {
      return std::string(type_name(info.param.type)) + "_" + std::to_string(info.param.rows) + "x" +
             std::to_string(info.param.cols);
    });

TEST(Int8Matvec, GatedMatchesCpuTwin) {
  gpu::Kernels k(device());
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    EncodedMatrix gate(t, 48, 512, 13), up(t, 48, 512, 14);
    Matrix m = upload_gated(device(), "test.gate_up", gate.view, up.view);
    std::vector<float> x = random_vec(512, 15);
    Graph g;
    std::vector<float> got = run_matmul(k, g, m, x, 1, 48);
    const std::vector<float> twin = ref::gated_matmul(gate.ref(), up.ref(), ref::quantize_q8(x));
    EXPECT_LT(nmse(got, twin), 1e-9) << type_name(t);
  }
}

// A mixed QKV (Q4_K, Q6_K, F16 parts): one quantization feeds the int8 parts; the F16 part keeps f32 x.
TEST(Int8Matvec, MixedPartsShareOneQuantization) {
  gpu::Kernels k(device());
  const uint32_t cols = 512;
  EncodedMatrix a(GgmlType::Q4_K, 40, cols, 21), b(GgmlType::Q6_K, 24, cols, 22), f(GgmlType::F16, 8, cols, 23);
  Matrix m = upload_matrix(device(), "test.qkv", {&a.view, &b.view, &f.view});
  ASSERT_EQ(m.parts.size(), 3u);
  std::vector<float> x = random_vec(cols, 24);
  Graph g;
  std::vector<float> got = run_matmul(k, g, m, x, 1, 72);
  ASSERT_EQ(g.ops.size(), 4u);  // one quantize_q8, then a dispatch per part
  EXPECT_EQ(role(g, 3, "single"), "matvec_f16");
  const std::vector<float> xq = ref::quantize_q8(x);
  std::vector<float> want = ref::matmul(a.ref(), xq), wb = ref::matmul(b.ref(), xq), wf = ref::matmul(f.ref(), x);
  want.insert(want.end(), wb.begin(), wb.end());
  want.insert(want.end(), wf.begin(), wf.end());
  EXPECT_LT(nmse(got, want), 1e-9);
}

// Passes of several tokens skip quantize_q8 and run the f32 GEMM, as without int8 x.
TEST(Int8Matvec, LongerPassesKeepF32) {
  gpu::Kernels k(device());
  EncodedMatrix w(GgmlType::Q4_0, 70, 256, 31);
  Matrix m = upload_matrix(device(), "test.w", {&w.view});
  for (uint32_t T : {5u, 70u}) {
    std::vector<float> x = random_vec((size_t)T * 256, 32 + T);
    Graph g;
    std::vector<float> got = run_matmul(k, g, m, x, T, (size_t)T * 70, 4);  // int8 x up to 4 tokens
    EXPECT_EQ(runs(g, 0, T), "skip");
    EXPECT_LT(nmse(got, ref::matmul(w.ref(), x)), 1e-10) << "T=" << T;
  }
}

// add_rmsnorm right before the matvec: one-token passes skip it and the matvec makes its int8 x
// itself (x_q8_norm.wgsl: the residual sum written once, units of sum * weight in workgroup memory,
// the rmsnorm factor on the row sums); longer passes run it, and it stores its output as int8 units
// itself (x_out_q8.wgsl), so no quantize_q8 dispatch either way. Twin: rmsnorm, quantize_q8, matmul.
struct NormCase {
  GgmlType type;
  uint32_t rows, d;
  bool gated;
  uint32_t T;
};
class Int8NormMatvecTest : public ::testing::TestWithParam<NormCase> {};

TEST_P(Int8NormMatvecTest, MatchesCpuTwin) {
  const NormCase c = GetParam();
  const uint32_t d = c.d, T = c.T;
  gpu::Kernels k(device());
  EncodedMatrix w(c.type, c.rows, d, 41), up(c.type, c.rows, d, 45);
  Matrix m = c.gated ? upload_gated(device(), "test.gate_up", w.view, up.view) : upload_matrix(device(), "test.w", {&w.view});
  NormThenMatmul r(k, m, d, T, c.rows, 4, 42);
  const Graph& g = r.g;
  const std::vector<float>& nw = r.nw;
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(role(g, 0, "single"), "add_rmsnorm_q8");
  EXPECT_EQ(runs(g, 0, T), T == 1 ? "skip" : "single");
  EXPECT_EQ(runs(g, 1, T), T == 1 ? "single" : "few");
  EXPECT_EQ(role(g, 1, "single").substr(role(g, 1, "single").size() - 5), "_norm");
  run(g, 0, T);
  const std::vector<float> s = r.residual();
  std::vector<float> normed_all, want, exact;
  EXPECT_EQ(read(r.sum, s.size()), s);  // the residual stream, written exactly once
  for (uint32_t t = 0; t < T; t++) {
    const std::vector<float> normed = ref::rmsnorm(std::vector<float>(&s[t * d], &s[(t + 1) * d]), nw, d, 1e-5f);
    const std::vector<float> x8 = ref::quantize_q8(normed);
    const std::vector<float> tw = c.gated ? ref::gated_matmul(w.ref(), up.ref(), x8) : ref::matmul(w.ref(), x8);
    const std::vector<float> ex = c.gated ? ref::gated_matmul(w.ref(), up.ref(), normed) : ref::matmul(w.ref(), normed);
    normed_all.insert(normed_all.end(), normed.begin(), normed.end());
    want.insert(want.end(), tw.begin(), tw.end());
    exact.insert(exact.end(), ex.begin(), ex.end());
  }
  if (T > 1) {
    EXPECT_LT(nmse(read(r.xb, normed_all.size()), normed_all), 1e-12);  // longer passes: the f32 output too
  }
  const std::vector<float> got = read(r.y, (size_t)T * c.rows);
  // Packing x * weight and scaling the sums rounds differently from packing rmsnorm(x) * weight: an
  // int8 code may land one off on a rounding boundary, hence the margin over the plain matvec's 1e-9.
  EXPECT_LT(nmse(got, want), 1e-8);
  EXPECT_GT(nmse(got, exact), 1e-8);  // the int8 path really ran
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Int8NormMatvecTest,
    ::testing::Values(NormCase{GgmlType::Q4_K, 96, 512, false, 1}, NormCase{GgmlType::Q4_0, 70, 2048, false, 1},
                      NormCase{GgmlType::Q4_0, 2100, 256, false, 1}, NormCase{GgmlType::Q6_K, 48, 4352, true, 1},
                      NormCase{GgmlType::Q8_0, 9000, 64, true, 1}, NormCase{GgmlType::Q4_K, 96, 512, false, 3},
                      NormCase{GgmlType::Q4_0, 48, 256, true, 3}),
    [](const auto& info) {
      const NormCase& c = info.param;
      return std::string(type_name(c.type)) + "_" + std::to_string(c.rows) + "x" + std::to_string(c.d) +
             (c.gated ? "_gated" : "") + "_T" + std::to_string(c.T);
    });

// A QKV of two int8 types after add_rmsnorm (Q4_K_M: q|k Q4_K, v Q6_K): one-token passes skip the
// add_rmsnorm and the second part's dispatch; the first part's matvec makes x and takes both types'
// rows (matvec.wgsl's second weight type). Longer passes run the add_rmsnorm and a dispatch per part.
// Twin: rmsnorm, quantize_q8, matmul per part.
TEST(Int8Matvec, TwoTypeQkvMakesXOnce) {
  gpu::Kernels k(device());
  const uint32_t d = 512;
  EncodedMatrix qk(GgmlType::Q4_K, 40, d, 91), v(GgmlType::Q6_K, 24, d, 92);
  Matrix m = upload_matrix(device(), "test.qkv", {&qk.view, &v.view});
  ASSERT_EQ(m.parts.size(), 2u);
  for (uint32_t T : {1u, 3u}) {
    NormThenMatmul r(k, m, d, T, 64, 4, 93);
    const Graph& g = r.g;
    ASSERT_EQ(g.ops.size(), 3u);
    EXPECT_EQ(runs(g, 0, T), T == 1 ? "skip" : "single");
    EXPECT_EQ(role(g, 1, "single"), "matvec_q8_q4_k_q6_k_norm");
    EXPECT_EQ(runs(g, 2, T), T == 1 ? "skip" : "few");
    run(g, 0, T);
    const std::vector<float> s = r.residual();
    EXPECT_EQ(read(r.sum, s.size()), s) << "T=" << T;
    std::vector<float> want;
    for (uint32_t t = 0; t < T; t++) {
      const std::vector<float> normed = ref::rmsnorm(std::vector<float>(&s[t * d], &s[(t + 1) * d]), r.nw, d, 1e-5f);
      const std::vector<float> x8 = ref::quantize_q8(normed);
      std::vector<float> row = ref::matmul(qk.ref(), x8), rv = ref::matmul(v.ref(), x8);
      row.insert(row.end(), rv.begin(), rv.end());
      want.insert(want.end(), row.begin(), row.end());
    }
    EXPECT_LT(nmse(read(r.y, (size_t)T * 64), want), 1e-8) << "T=" << T;  // margin: Int8NormMatvecTest
  }
}

// The FFN at decode: add_rmsnorm, gate|up, down. The gated matvec makes its x (above) and stores h
// as int8 units itself, so one-token passes skip both the add_rmsnorm and the quantize_q8 before down.
// Both ways of packing units: 8 threads a unit through subgroups (q8_pack8.wgsl), and one thread.
TEST(Int8Matvec, GatedStoresUnitsForDown) {
  gpu::Kernels k(device());
  const uint32_t d = 256, ff = 320;
  for (bool sg : {true, false})
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_K}) {
    EncodedMatrix gate(t, ff, d, 61), up(t, ff, d, 62), down(GgmlType::Q4_0, 96, ff, 63);
    Matrix gu = upload_gated(device(), "test.gate_up", gate.view, up.view);
    Matrix dn = upload_matrix(device(), "test.down", {&down.view});
    std::vector<float> a = random_vec(d, 64), bres = random_vec(d, 65), nw = random_vec(d, 66, 0.3f);
    gpu::Buffer ab = upload("test.a", a), bb = upload("test.b", bres), nwb = upload("test.norm", nw);
    gpu::Buffer xb = device().buffer("test.xb", d * 4), sum = device().buffer("test.sum", d * 4);
    gpu::Buffer h = device().buffer("test.h", ff * 4), y = device().buffer("test.y", 96 * 4);
    gpu::Buffer xq = device().buffer("test.xq", 4 * ff), xs = device().buffer("test.xs", 4 * ff / 32 * 8);
    gpu::Buffer step = step_buffer(0, 1);
    Graph g;
    GraphBuilder b(k, g, step);
    b.use_q8_x(xq, xs, 4);
    b.use_subgroups(sg);
    b.add_rmsnorm(xb, sum, ab, bb, nwb, d, 1e-5f);
    b.matmul(h, xb, gu);
    b.matmul(y, h, dn).finish();
    ASSERT_EQ(g.ops.size(), 4u);
    EXPECT_EQ(role(g, 1, "single"), std::string("matvec_q8_") + (t == GgmlType::Q4_0 ? "q4_0" : "q4_k") + "_gated_norm_q8");
    EXPECT_EQ(role(g, 2, "single"), "quantize_q8");
    EXPECT_EQ(runs(g, 2, 1), "skip");
    EXPECT_EQ(runs(g, 2, 3), "single");  // longer passes still quantize h
    run(g, 0, 1);
    std::vector<float> s(d);
    for (uint32_t i = 0; i < d; i++) s[i] = a[i] + bres[i];
    const std::vector<float> hh = ref::gated_matmul(gate.ref(), up.ref(), ref::quantize_q8(ref::rmsnorm(s, nw, d, 1e-5f)));
    EXPECT_LT(nmse(read(h, ff), hh), 1e-8) << type_name(t) << " subgroups " << sg;
    EXPECT_LT(nmse(read(y, 96), ref::matmul(down.ref(), ref::quantize_q8(hh))), 1e-8)
        << type_name(t) << " subgroups " << sg;
  }
}

// The o projection and the residual step at decode: quantize_q8, the o matvec, add_rmsnorm, the matvec
// after it. In one-token passes the o matvec stores a + Wo x itself (y_resid.wgsl), the add_rmsnorm is
// skipped and the next matvec reads that sum alone (x_q8_norm.wgsl with x_two_none.wgsl); three-token
// passes run all four as before. Both must store the same residual sum and give the CPU twin's output.
// With use_prenorm the o matvec also stores x * the norm's weight and its rows' squares, which the
// next one packs (x_q8_prenorm.wgsl); without it the next one normalizes x itself (x_q8_norm.wgsl).
// Each way with both packs (q8_pack8.wgsl).
// d = 4,608: the next matvec's 1,024 threads make x in two turns (one, partial, with d = 256).
TEST(Int8Matvec, ProjectionStoresTheResidualSum) {
  gpu::Kernels k(device());
  const uint32_t cols = 512;  // o: d x cols (the heads' width)
  for (uint32_t d : {256u, 4608u})
  for (bool sg : {true, false})
  for (bool pre : {true, false})
  for (GgmlType t2 : {GgmlType::Q4_0, GgmlType::Q4_K})
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_K}) {
    EncodedMatrix wo(t, d, cols, 81), w2(t2, 96, d, 82);
    Matrix mo = upload_matrix(device(), "test.wo", {&wo.view}), m2 = upload_matrix(device(), "test.w2", {&w2.view});
    for (uint32_t T : {1u, 3u}) {
      if (d > 256 && T > 1) continue;  // the two-turn prologue is the one-token pass's
      std::vector<float> x = random_vec((size_t)T * cols, 83), a = random_vec((size_t)T * d, 84), nw = random_vec(d, 85, 0.3f);
      gpu::Buffer xb = upload("test.x", x), ab = upload("test.a", a), nwb = upload("test.norm", nw);
      gpu::Buffer proj = device().buffer("test.proj", T * d * 4), sum = device().buffer("test.sum", T * d * 4);
      gpu::Buffer xn = device().buffer("test.xn", T * d * 4), y = device().buffer("test.y", T * 96 * 4);
      gpu::Buffer xw = device().buffer("test.norm_xw", d * 4), ssb = device().buffer("test.norm_ss", d * 4);
      const uint32_t xn_max = std::max(cols, d);  // int8 x of the o matvec's input and of the norm's output
      gpu::Buffer xq = device().buffer("test.xq", 4 * xn_max), xs = device().buffer("test.xs", 4 * xn_max / 32 * 8);
      gpu::Buffer step = step_buffer(0, T);
      Graph g;
      GraphBuilder b(k, g, step);
      b.use_q8_x(xq, xs, 4);
      if (pre) b.use_prenorm(xw, ssb);
      b.use_subgroups(sg);
      b.matmul(proj, xb, mo);
      b.add_rmsnorm(xn, sum, ab, proj, nwb, d, 1e-5f);
      b.matmul(y, xn, m2).finish();
      ASSERT_EQ(g.ops.size(), 4u);
      EXPECT_EQ(role(g, 1, "single"), std::string("matvec_q8_") + (t == GgmlType::Q4_0 ? "q4_0" : "q4_k") + "_resid");
      EXPECT_EQ(runs(g, 2, 1), "skip");
      gpu::Recorder rec(device(), "test.resid");
      g.encode(rec, 0, T);
      EXPECT_EQ(rec.dispatches(), T == 1 ? 3u : 4u) << type_name(t);
      const std::string& next = g.op<MatmulOp>(3).single.pipeline->label();
      EXPECT_EQ(next.find("x_q8_prenorm") != std::string::npos, pre) << next;
      EXPECT_EQ(next.find("q8_pack8_none") == std::string::npos, sg) << next;
      rec.submit();
      device().wait_idle();
      std::vector<float> want_sum, want_y;
      for (uint32_t i = 0; i < T; i++) {
        const std::vector<float> o = ref::matmul(wo.ref(), ref::quantize_q8(std::vector<float>(&x[i * cols], &x[(i + 1) * cols])));
        std::vector<float> s(d);
        for (uint32_t j = 0; j < d; j++) s[j] = a[i * d + j] + o[j];
        const std::vector<float> yy = ref::matmul(w2.ref(), ref::quantize_q8(ref::rmsnorm(s, nw, d, 1e-5f)));
        want_sum.insert(want_sum.end(), s.begin(), s.end());
        want_y.insert(want_y.end(), yy.begin(), yy.end());
      }
      const std::string at = std::string(type_name(t)) + " then " + type_name(t2) + " d=" + std::to_string(d) +
                             " T=" + std::to_string(T) +
                             " subgroups " + std::to_string(sg) + " prenorm " + std::to_string(pre);
      EXPECT_LT(nmse(read(sum, (size_t)T * d), want_sum), 1e-10) << at;
      EXPECT_LT(nmse(read(y, (size_t)T * 96), want_y), 1e-8) << at;
    }
  }
}

// Short passes: token groups of TT through the int8 matvec ("few"), plain and gated, with
// partial last groups, several rows per lane, and columns enough for 64 lanes (the forward pass's
// configuration is 4 tokens x 2 rows x 16 lanes).
struct TokensCase {
  GgmlType type;
  uint32_t rows, cols, tt, rpl, lanes;
};
class Int8TokensTest : public ::testing::TestWithParam<TokensCase> {};

TEST_P(Int8TokensTest, PlainAndGatedMatchCpuTwin) {
  const TokensCase c = GetParam();
  gpu::Kernels k(device());
  EncodedMatrix w(c.type, c.rows, c.cols, 51), gate(c.type, 38, c.cols, 52), up(c.type, 38, c.cols, 53);
  Matrix plain = upload_matrix(device(), "test.w", {&w.view});
  Matrix gated = upload_gated(device(), "test.gate_up", gate.view, up.view);
  for (uint32_t T : {2u, 35u, 64u}) {
    std::vector<float> x = random_vec((size_t)T * c.cols, 54 + T);
    const std::vector<float> xq = ref::quantize_q8(x);
    for (bool is_gated : {false, true}) {
      const std::vector<float> want =
          is_gated ? ref::gated_matmul(gate.ref(), up.ref(), xq) : ref::matmul(w.ref(), xq);
      Graph g;
      std::vector<float> got = run_matmul(k, g, is_gated ? gated : plain, x, T, want.size(), 64, c.tt, c.rpl, c.lanes);
      ASSERT_EQ(g.ops.size(), 2u);
      EXPECT_EQ(runs(g, 0, T), "single");  // quantize_q8, every token
      EXPECT_EQ(runs(g, 1, T), "few");
      EXPECT_EQ(runs(g, 1, 1), "single");
      EXPECT_EQ(runs_gemm(g, 1, 65), "gemm");
      EXPECT_LT(nmse(got, want), 1e-9) << type_name(c.type) << (is_gated ? " gated" : " plain") << " T=" << T;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    QuantTypes, Int8TokensTest,
    ::testing::Values(TokensCase{GgmlType::Q4_0, 70, 768, 8, 1, 8}, TokensCase{GgmlType::Q4_0, 37, 4096, 16, 1, 16},
                      TokensCase{GgmlType::Q8_0, 70, 256, 4, 2, 8}, TokensCase{GgmlType::Q4_K, 70, 512, 8, 2, 16},
                      TokensCase{GgmlType::Q6_K, 33, 512, 8, 1, 32},
                      TokensCase{GgmlType::Q4_0, 70, 512, 4, 4, 16}, TokensCase{GgmlType::Q6_K, 70, 512, 4, 2, 16}),
    [](const auto& info) {
      return std::string(type_name(info.param.type)) + "_" + std::to_string(info.param.rows) + "x" +
             std::to_string(info.param.cols) + "_TT" + std::to_string(info.param.tt) + "_RPL" +
             std::to_string(info.param.rpl) + "_L" + std::to_string(info.param.lanes);
    });

// A matrix of two parts (types differ, as a mixed QKV): each part's token-group matvec writes its rows
// at its Y_OFFSET within rows of the full width; the producer (add_rmsnorm) stores every token's units.
TEST(Int8Matvec, TokenGroupsWriteEachPartAtItsOffset) {
  gpu::Kernels k(device());
  const uint32_t cols = 512, T = 35;
  EncodedMatrix a(GgmlType::Q4_0, 40, cols, 61), b(GgmlType::Q6_K, 27, cols, 62);
  Matrix m = upload_matrix(device(), "test.qkv", {&a.view, &b.view});
  ASSERT_EQ(m.parts.size(), 2u);
  NormThenMatmul r(k, m, cols, T, 67, 64, 63);
  const Graph& g = r.g;
  ASSERT_EQ(g.ops.size(), 3u);  // the norm (emitting units), one matvec per part
  EXPECT_EQ(runs(g, 0, T), "single");
  EXPECT_EQ(runs(g, 0, 65), "main");
  run(g, 0, T);
  const std::vector<float> xq_ref = ref::quantize_q8(ref::rmsnorm(r.residual(), r.nw, cols, 1e-5f));
  const std::vector<float> ya = ref::matmul(a.ref(), xq_ref), yb = ref::matmul(b.ref(), xq_ref);
  std::vector<float> want;
  for (uint32_t t = 0; t < T; t++) {
    want.insert(want.end(), ya.begin() + t * 40, ya.begin() + (t + 1) * 40);
    want.insert(want.end(), yb.begin() + t * 27, yb.begin() + (t + 1) * 27);
  }
  EXPECT_LT(nmse(read(r.y, want.size()), want), 1e-9);
}

// Passes longer than the token-group matvec with use_q8_gemm: gemm_q8.wgsl, int8 tiles in workgroup
// memory, partial row and token tiles, plain and gated, against the same CPU twin.
class Int8GemmTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(Int8GemmTest, PlainAndGatedMatchCpuTwin) {
  const GgmlType type = GetParam();
  // An odd number of 32-column units for the block-32 types: the GEMM's last 64-column step is half empty.
  const uint32_t cols = type == GgmlType::Q4_0 || type == GgmlType::Q8_0 ? 544 : 768;
  gpu::Kernels k(device());
  EncodedMatrix w(type, 70, cols, 71), gate(type, 38, cols, 72), up(type, 38, cols, 73);
  Matrix plain = upload_matrix(device(), "test.w", {&w.view});
  Matrix gated = upload_gated(device(), "test.gate_up", gate.view, up.view);
  gpu::Buffer scratch = device().buffer("test.gemm_part", 3ull * 130 * 2 * 70 * 4);
  for (uint32_t T : {65u, 130u}) {
    std::vector<float> x = random_vec((size_t)T * cols, 74 + T);
    const std::vector<float> xq = ref::quantize_q8(x);
    // ksplit 3: K in three uneven ranges of 4-unit steps (2 of 5 for the block-32 types) written as
    // partials, then gemm_reduce.wgsl.
    for (uint32_t ksplit : {0u, 3u})
    for (bool is_gated : {false, true}) {
      const std::vector<float> want = is_gated ? ref::gated_matmul(gate.ref(), up.ref(), xq) : ref::matmul(w.ref(), xq);
      gpu::Buffer xb = upload("test.x", x), y = device().buffer("test.y", want.size() * 4);
      gpu::Buffer xqb = device().buffer("test.xq", (size_t)T * cols), xs = device().buffer("test.xs", (size_t)T * cols / 32 * 8);
      gpu::Buffer step = step_buffer(0, T);
      Graph g;
      GraphBuilder b(k, g, step);
      b.use_q8_x(xqb, xs, T);
      b.use_q8_gemm(true);
      if (ksplit) b.use_split_k(scratch, 64, ksplit);
      b.matmul(y, xb, is_gated ? gated : plain).finish();
      ASSERT_EQ(g.ops.size(), 2u);
      EXPECT_EQ(runs(g, 1, T), ksplit ? "split" : "main");
      EXPECT_EQ(role(g, 1, "main"), std::string("gemm_q8_") + weight_snippet(type).substr(7));
      run(g, 0, T);
      EXPECT_LT(nmse(read(y, want.size()), want), 1e-9) << type_name(type) << (is_gated ? " gated" : " plain") << " T=" << T
                                                       << " ksplit " << ksplit;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(QuantTypes, Int8GemmTest,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// The FFN's long passes with use_q8_h: the gated GEMM stores h as int8 units itself (h_out_q8.wgsl),
// the quantize_q8 of h is skipped and the GEMM on h reads them. Shorter passes keep f32 h and the
// quantize. The units must be exactly those of the unfused path (same f32 h, same rounding).
TEST(Int8Gemm, GatedStoresUnitsForDownInLongPasses) {
  gpu::Kernels k(device());
  const uint32_t d = 256, ff = 512, out = 96, max_tokens = 130;
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_K}) {
    EncodedMatrix gate(t, ff, d, 81), up(t, ff, d, 82), down(GgmlType::Q6_K, out, ff, 83);
    Matrix gu = upload_gated(device(), "test.gate_up", gate.view, up.view);
    Matrix dn = upload_matrix(device(), "test.down", {&down.view});
    gpu::Buffer xq = device().buffer("test.xq", max_tokens * ff), xs = device().buffer("test.xs", max_tokens * ff / 32 * 8);
    gpu::Buffer hq = device().buffer("test.hq", max_tokens * ff), hs = device().buffer("test.hs", max_tokens * ff / 32 * 8);
    for (uint32_t T : {35u, 65u, 130u}) {
      // x = rmsnorm(a + bres): the add_rmsnorm stores x's units; past 64 tokens the units alone.
      std::vector<float> a = random_vec((size_t)T * d, 84 + T), bres = random_vec((size_t)T * d, 85 + T), x;
      const std::vector<float> nw = random_vec(d, 86, 0.3f);
      for (uint32_t i = 0; i < T; i++) {
        std::vector<float> s(d);
        for (uint32_t j = 0; j < d; j++) s[j] = a[i * d + j] + bres[i * d + j];
        const std::vector<float> n = ref::rmsnorm(s, nw, d, 1e-5f);
        x.insert(x.end(), n.begin(), n.end());
      }
      gpu::Buffer ab = upload("test.a", a), bb = upload("test.b", bres), nwb = upload("test.norm", nw);
      gpu::Buffer xb = device().buffer("test.xb", (size_t)T * d * 4), sum = device().buffer("test.sum", (size_t)T * d * 4);
      gpu::Buffer h = device().buffer("test.h", (size_t)T * ff * 4);
      gpu::Buffer y = device().buffer("test.y", (size_t)T * out * 4);
      gpu::Buffer step = step_buffer(0, T);
      Graph g;
      GraphBuilder b(k, g, step);
      b.use_q8_x(xq, xs, max_tokens);
      b.use_q8_gemm(true);
      b.use_q8_h(hq, hs);
      b.add_rmsnorm(xb, sum, ab, bb, nwb, d, 1e-5f);
      b.matmul(h, xb, gu);
      b.matmul(y, h, dn).finish();
      ASSERT_EQ(g.ops.size(), 4u);  // add_rmsnorm (with x's units), gate|up, quantize h, down
      ASSERT_TRUE(g.op<RowOp>(0).long_main);  // its units alone past 64 tokens
      EXPECT_EQ(g.op<RowOp>(0).long_min, 65u);
      ASSERT_TRUE(g.op<MatmulOp>(1).long_main);
      EXPECT_EQ(g.op<MatmulOp>(1).long_min, 65u);  // past the token-group matvec
      EXPECT_EQ(role(g, 1, "long_main"), std::string("gemm_q8_") + weight_snippet(t).substr(7) + "_hq8");
      EXPECT_EQ(runs(g, 2, 64), "single");
      EXPECT_EQ(runs(g, 2, 65), "skip");
      EXPECT_EQ(g.op<MatmulOp>(3).long_min, 65u);
      run(g, 0, T);
      const std::vector<float> got = read(y, (size_t)T * out);
      const std::vector<float> hh = ref::gated_matmul(gate.ref(), up.ref(), ref::quantize_q8(x));
      // The GPU's rmsnorm may put a value of x one int8 step from the CPU's (division and inverseSqrt
      // are not correctly rounded), which two matmuls carry on: a looser bound than a single matmul's.
      EXPECT_LT(nmse(got, ref::matmul(down.ref(), ref::quantize_q8(hh))), 1e-7) << type_name(t) << " T=" << T;
      if (T < 65) {
        EXPECT_LT(nmse(read(xb, x.size()), x), 1e-12);  // the f32 x too
        continue;
      }
      const std::vector<float> zeros(x.size(), 0.f);
      EXPECT_EQ(read(xb, x.size()), zeros);  // never written
      g.op<RowOp>(0).long_main = {}, g.op<MatmulOp>(1).long_main = {}, g.op<MatmulOp>(3).long_main = {};  // unfused: f32 x and h, quantize_q8
      g.op<RowOp>(2).skip_min = 0;
      run(g, 0, T);
      EXPECT_LT(nmse(read(xb, x.size()), x), 1e-12);
      EXPECT_EQ(read(y, (size_t)T * out), got) << type_name(t) << " T=" << T;
    }
  }
}
