// The quantized types the GPU reads as stored in the GGUF (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K,
// IQ4_NL, IQ4_XS, MXFP4: their weight_*.wgsl and dotq8_*.wgsl) through every path the forward pass
// takes on a matrix — embed, the decode matvec, the token-group matvec, the int8 GEMM, the f32 GEMM,
// plain and gated, and a two-type QKV's one dispatch — against the CPU twins (dequantize_row, ref::).
// The older types' cases are in gpu_matmul_test.cpp and gpu_matvec_q8_test.cpp.
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>

#include <cstring>
#include <fstream>
#include <iterator>

#include "engine/gpu_layout.h"
#include "gpu_kernels_rig.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

const GgmlType kTypes[] = {GgmlType::Q4_1, GgmlType::Q5_0,   GgmlType::Q5_1,   GgmlType::Q2_K, GgmlType::Q3_K,
                           GgmlType::Q5_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

// Rows whose blocks start at every alignment the type allows: 9 units of 32 (22-, 18- and 17-byte
// blocks: rows 2 or 1 bytes apart from a word), or 3 super-blocks (Q3_K's 330-byte rows).
uint32_t cols_for(GgmlType t) { return block_elems(t) == 32 ? 288 : 768; }

struct MatmulRun {
  std::vector<float> y;
  std::string variant;  // what the pass ran (runs())
};

// y = W x for T tokens through one matmul op of a graph built as the forward pass builds it: int8 x
// for passes of up to 130 tokens (4 tokens x 2 rows x 16 lanes in groups), the int8 GEMM past 64.
// q8 false: no int8 x, every pass on the f32 GEMM (or the f32 matvec).
MatmulRun run_matmul(gpu::Kernels& k, const Matrix& m, const std::vector<float>& x, uint32_t T, size_t out, bool q8) {
  const uint32_t cols = (uint32_t)(x.size() / T), max_tokens = 130;
  gpu::Buffer xb = upload("test.x", x), y = device().buffer("test.y", out * 4);
  gpu::Buffer xq = device().buffer("test.xq", (size_t)max_tokens * cols);
  gpu::Buffer xs = device().buffer("test.xs", (size_t)max_tokens * cols / 32 * 8);
  gpu::Buffer step = step_buffer(0, T);
  Graph g;
  GraphBuilder b(k, g, step);
  if (q8) b.use_q8_x(xq, xs, max_tokens, 4, 2, 16), b.use_q8_gemm(true);
  b.matmul(y, xb, m).finish();
  run(g, 0, T);
  return {read(y, out), runs(g, g.ops.size() - 1, T)};
}

}  // namespace

class QuantTypeTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(QuantTypeTest, EmbedIsTheDequantizedRow) {
  const GgmlType t = GetParam();
  const uint32_t cols = cols_for(t);
  gpu::Kernels k(device());
  EncodedMatrix table(t, 20, cols, 6);
  std::vector<int32_t> ids = {3, 0, 19, 17, 3};
  Matrix m = upload_matrix(device(), "test.embd", {&table.view});
  gpu::Buffer idb = device().buffer("test.ids", ids.size() * 4), x = device().buffer("test.x", ids.size() * cols * 4);
  device().write(idb, ids.data(), ids.size() * 4);
  gpu::Buffer step = step_buffer(0, (uint32_t)ids.size());
  Graph g;
  GraphBuilder(k, g, step).embed(x, idb, m).finish();
  run(g, 0, (uint32_t)ids.size());
  // d * q + m in f32 on both sides, but the GPU may fuse it (one rounding instead of two).
  const std::vector<float> want = ref::embed(table.ref(), ids), got = read(x, want.size());
  for (size_t i = 0; i < want.size(); i++)
    ASSERT_NEAR(got[i], want[i], 1e-6f * std::max(1.f, std::fabs(want[i]))) << type_name(t) << " element " << i;
}

// The GPU's decoding against llama.cpp's own, with no CPU twin between: the first three rows of
// tests/fixtures/quant_ref/TYPE.blocks (random codes, scales of either sign down to subnormal halves,
// MXFP4 exponents down to 0) embedded on the GPU equal gguf-py's dequantization in TYPE.f32.
TEST_P(QuantTypeTest, EmbedEqualsGgufPyOnRandomBlocks) {
  const GgmlType t = GetParam();
  const std::string base = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/quant_ref/" + type_name(t);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  };
  const std::vector<uint8_t> blocks = slurp(base + ".blocks"), floats = slurp(base + ".f32");
  const uint32_t cols = block_elems(t) == 32 ? 512 : 1024, rows = 3;
  ASSERT_GE(blocks.size(), row_bytes(t, cols) * rows) << base;
  ASSERT_GE(floats.size(), (size_t)cols * rows * 4) << base;
  std::vector<float> want((size_t)cols * rows);
  std::memcpy(want.data(), floats.data(), want.size() * 4);
  TensorView view;
  view.name = "quant_ref", view.type = t, view.ne = {cols, rows}, view.data = blocks.data();
  view.nbytes = row_bytes(t, cols) * rows;
  gpu::Kernels k(device());
  Matrix m = upload_matrix(device(), "test.embd", {&view});
  const std::vector<int32_t> ids = {0, 1, 2};
  gpu::Buffer idb = device().buffer("test.ids", 12), x = device().buffer("test.x", want.size() * 4);
  device().write(idb, ids.data(), 12);
  gpu::Buffer step = step_buffer(0, rows);
  Graph g;
  GraphBuilder(k, g, step).embed(x, idb, m).finish();
  run(g, 0, rows);
  const std::vector<float> got = read(x, want.size());
  // d * scale * q + m may fuse on the GPU: one rounding of the largest term apart where they cancel.
  float top = 0;
  for (float v : want) top = std::max(top, std::fabs(v));
  for (size_t i = 0; i < want.size(); i++)
    ASSERT_NEAR(got[i], want[i], 1e-6f * top) << type_name(t) << " element " << i;
}

TEST_P(QuantTypeTest, EveryMatmulPathMatchesCpuTwin) {
  const GgmlType t = GetParam();
  const uint32_t cols = cols_for(t), rows = 70;
  const bool int8 = int8_dot_type(t);
  gpu::Kernels k(device());
  EncodedMatrix w(t, rows, cols, 11), gate(t, 38, cols, 12), up(t, 38, cols, 13);
  Matrix plain = upload_matrix(device(), "test.w", {&w.view});
  Matrix gated = upload_gated(device(), "test.gate_up", gate.view, up.view);
  for (uint32_t T : {1u, 5u, 100u}) {
    const std::vector<float> x = random_vec((size_t)T * cols, 20 + T), x8 = ref::quantize_q8(x);
    for (bool is_gated : {false, true}) {
      const Matrix& m = is_gated ? gated : plain;
      auto twin = [&](const std::vector<float>& in) {
        return is_gated ? ref::gated_matmul(gate.ref(), up.ref(), in) : ref::matmul(w.ref(), in);
      };
      const std::string at = std::string(type_name(t)) + (is_gated ? " gated" : " plain") + " T=" + std::to_string(T);
      // As the forward pass runs it: int8 x into the matvecs and the int8 GEMM (Q2_K: f32 x throughout).
      const std::vector<float> want = twin(int8 ? x8 : x);
      const MatmulRun r = run_matmul(k, m, x, T, want.size(), true);
      EXPECT_EQ(r.variant, T == 1 ? "single" : !int8 ? "main" : T <= 64 ? "few" : "main") << at;
      EXPECT_LT(nmse(r.y, want), int8 ? 1e-9 : 1e-10) << at;
      // Without int8 x: the f32 GEMM on every pass (one token too), except Q2_K's f32 matvec.
      if (T == 100 || !int8) continue;
      const std::vector<float> exact = twin(x);
      const MatmulRun f = run_matmul(k, m, x, T, exact.size(), false);
      EXPECT_EQ(f.variant, "main") << at;
      EXPECT_LT(nmse(f.y, exact), 1e-10) << at << " f32 x";
      EXPECT_GT(nmse(r.y, exact), 1e-9) << at << ": the int8 path ran";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(InPlace, QuantTypeTest, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// A Q5_K_M QKV (q|k Q5_K, v Q6_K) and an IQ4_XS one with a Q5_K v, after add_rmsnorm: one-token
// passes run one dispatch over both types (matvec.wgsl's second copy of a weight snippet, every w_*
// name renamed), which makes x from the residual step itself.
TEST(QuantTypes, TwoTypeQkvInOneDispatch) {
  gpu::Kernels k(device());
  const uint32_t d = 512, T = 1;
  for (auto [t1, t2] : {std::pair{GgmlType::Q5_K, GgmlType::Q6_K}, std::pair{GgmlType::IQ4_XS, GgmlType::Q5_K}}) {
    EncodedMatrix qk(t1, 40, d, 91), v(t2, 24, d, 92);
    Matrix m = upload_matrix(device(), "test.qkv", {&qk.view, &v.view});
    ASSERT_EQ(m.parts.size(), 2u);
    const std::vector<float> a = random_vec(d, 93), b = random_vec(d, 94), nw = random_vec(d, 95, 0.3f);
    gpu::Buffer ab = upload("test.a", a), bb = upload("test.b", b), nwb = upload("test.norm", nw);
    gpu::Buffer xb = device().buffer("test.xb", d * 4), sum = device().buffer("test.sum", d * 4);
    gpu::Buffer y = device().buffer("test.y", 64 * 4), step = step_buffer(0, T);
    gpu::Buffer xq = device().buffer("test.xq", 4 * d), xs = device().buffer("test.xs", 4 * d / 32 * 8);
    Graph g;
    GraphBuilder gb(k, g, step);
    gb.use_q8_x(xq, xs, 4);
    gb.add_rmsnorm(xb, sum, ab, bb, nwb, d, 1e-5f);
    gb.matmul(y, xb, m).finish();
    ASSERT_EQ(g.ops.size(), 3u);
    const std::string pair = std::string(type_name(t1)) + "+" + type_name(t2);
    EXPECT_EQ(runs(g, 0, T), "skip") << pair;
    EXPECT_EQ(role(g, 1, "single"), "matvec_q8_" + weight_snippet(t1).substr(7) + "_" + weight_snippet(t2).substr(7) + "_norm");
    EXPECT_EQ(runs(g, 2, T), "skip") << pair;
    run(g, 0, T);
    std::vector<float> s(d);
    for (uint32_t i = 0; i < d; i++) s[i] = a[i] + b[i];
    const std::vector<float> x8 = ref::quantize_q8(ref::rmsnorm(s, nw, d, 1e-5f));
    std::vector<float> want = ref::matmul(qk.ref(), x8), rv = ref::matmul(v.ref(), x8);
    want.insert(want.end(), rv.begin(), rv.end());
    EXPECT_LT(nmse(read(y, 64), want), 1e-8) << pair;  // margin: the GPU's rmsnorm (gpu_matvec_q8_test)
  }
}
