// The decode matvec with x quantized to int8 (GraphBuilder::use_q8_x: quantize_q8.wgsl, then the
// dotq8_<type>.wgsl dots) against its CPU twin, ref::matmul of ref::quantize_q8(x). Longer passes
// of the same graph skip the quantization and must still give the f32 GEMM's result.
#include <gtest/gtest.h>

#include "gpu_kernels_rig.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

struct Q8Case {
  GgmlType type;
  uint32_t rows, cols;
};

// y for a one-token pass (and, for T > 1, a longer one) of a graph built with int8 x.
std::vector<float> run_matmul(gpu::Kernels& k, Graph& g, const Matrix& m, const std::vector<float>& x, uint32_t T,
                              size_t out) {
  const uint32_t cols = (uint32_t)(x.size() / T);
  gpu::Buffer xb = upload("test.x", x), y = device().buffer("test.y", out * 4);
  gpu::Buffer xq = device().buffer("test.xq", cols), xs = device().buffer("test.xs", cols / 32 * 8);
  gpu::Buffer step = step_buffer(0, T);
  GraphBuilder b(k, g, step);
  b.use_q8_x(xq, xs);
  b.matmul(y, xb, m);
  run(g, 0, T);
  return read(y, out);
}

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
  EXPECT_EQ(g.ops[0].single_role, "quantize_q8");
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
  EXPECT_EQ(g.ops[3].single_role, "matvec_f16");
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
    std::vector<float> got = run_matmul(k, g, m, x, T, (size_t)T * 70);
    EXPECT_EQ(g.ops[0].variant(T), Variant::Skip);
    EXPECT_LT(nmse(got, ref::matmul(w.ref(), x)), 1e-10) << "T=" << T;
  }
}

// add_rmsnorm right before the matvec stores its output as int8 units itself (x_out_q8.wgsl): no
// quantize_q8 dispatch, same result as the twin (rmsnorm, then quantize_q8, then the matmul).
TEST(Int8Matvec, NormEmitsUnitsForTheNextMatvec) {
  gpu::Kernels k(device());
  const uint32_t d = 512;
  EncodedMatrix w(GgmlType::Q4_K, 96, d, 41);
  Matrix m = upload_matrix(device(), "test.w", {&w.view});
  std::vector<float> a = random_vec(d, 42), bres = random_vec(d, 43), nw = random_vec(d, 44, 0.3f);
  gpu::Buffer ab = upload("test.a", a), bb = upload("test.b", bres), nwb = upload("test.norm", nw);
  gpu::Buffer xb = device().buffer("test.xb", d * 4), sum = device().buffer("test.sum", d * 4);
  gpu::Buffer y = device().buffer("test.y", 96 * 4), step = step_buffer(0, 1);
  gpu::Buffer xq = device().buffer("test.xq", d), xs = device().buffer("test.xs", d / 32 * 8);
  Graph g;
  GraphBuilder b(k, g, step);
  b.use_q8_x(xq, xs);
  b.add_rmsnorm(xb, sum, ab, bb, nwb, d, 1e-5f);
  b.matmul(y, xb, m);
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(g.ops[0].single_role, "add_rmsnorm_q8");
  run(g, 0, 1);
  std::vector<float> s(d);
  for (uint32_t i = 0; i < d; i++) s[i] = a[i] + bres[i];
  const std::vector<float> normed = ref::rmsnorm(s, nw, d, 1e-5f);
  EXPECT_LT(nmse(read(xb, d), normed), 1e-12);  // the f32 output is still written
  EXPECT_LT(nmse(read(y, 96), ref::matmul(w.ref(), ref::quantize_q8(normed))), 1e-9);
}
