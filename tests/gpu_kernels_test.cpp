// Every kernel against its CPU twin (src/reference/ops.h) on random data, through the same
// GraphBuilder the forward pass uses. Runs on whatever adapter Dawn picks (lavapipe in CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <unistd.h>

#include "gpu_test_util.h"
#include "engine/forward.h"
#include "engine/generator.h"
#include "engine/graph.h"
#include "engine/sampling.h"
#include "engine/weights.h"
#include "model/model_error.h"
#include "model/synth.h"
#include "reference/model.h"
#include "reference/ops.h"

using namespace ztvm;
using test::device;
using test::nmse;

namespace {

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// A weight matrix encoded in `type`, with a TensorView over the bytes.
struct EncodedMatrix {
  std::vector<uint8_t> bytes;
  TensorView view;
  EncodedMatrix(GgmlType type, uint32_t rows, uint32_t cols, uint32_t seed) {
    std::vector<float> w = random_vec((size_t)rows * cols, seed, 0.5f);
    uint64_t rb = row_bytes(type, cols);
    bytes.resize(rb * rows);
    for (uint32_t r = 0; r < rows; r++) quantize_row(type, &w[(size_t)r * cols], bytes.data() + r * rb, cols);
    view.name = "test";
    view.type = type;
    view.ne = {cols, rows};
    view.data = bytes.data();
    view.nbytes = bytes.size();
  }
  ref::WeightRef ref() const { return {view.type, bytes.data(), (uint32_t)view.rows(), (uint32_t)view.cols()}; }
};

gpu::Buffer upload(const std::string& label, const std::vector<float>& v) {
  gpu::Buffer b = device().buffer(label, v.size() * 4);
  device().write(b, v.data(), v.size() * 4);
  return b;
}

gpu::Buffer step_buffer(uint32_t pos0, uint32_t n, uint32_t out_index = 0) {
  StepParams p{pos0, n, out_index, 0};
  gpu::Buffer b = device().buffer("test.step", sizeof p, gpu::kUniform);
  device().write(b, &p, sizeof p);
  return b;
}

void run(const Graph& g, uint32_t pos0, uint32_t n) {
  gpu::Recorder rec(device(), "test");
  g.encode(rec, pos0, n);
  rec.submit();
  device().wait_idle();
}

std::vector<float> read(const gpu::Buffer& b, size_t n) { return device().read_as<float>(b, n); }

}  // namespace

struct MatmulCase {
  GgmlType type;
  uint32_t rows, cols, tokens;
};

class MatmulTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulTest, MatchesCpu) {
  const MatmulCase c = GetParam();
  gpu::Kernels k(device());
  EncodedMatrix w(c.type, c.rows, c.cols, 1);
  std::vector<float> x = random_vec((size_t)c.tokens * c.cols, 2);
  Matrix m = upload_matrix(device(), "test.w", {&w.view});
  gpu::Buffer xb = upload("test.x", x), y = device().buffer("test.y", (size_t)c.tokens * c.rows * 4);
  gpu::Buffer step = step_buffer(0, c.tokens);
  Graph g;
  GraphBuilder(k, g, step).matmul(y, xb, m);
  run(g, 0, c.tokens);
  std::vector<float> want = ref::matmul(w.ref(), x);
  double e = nmse(read(y, want.size()), want);
  EXPECT_LT(e, 1e-10) << type_name(c.type) << " " << c.rows << "x" << c.cols << " T=" << c.tokens;
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, MatmulTest,
    ::testing::Values(MatmulCase{GgmlType::F32, 70, 172, 1}, MatmulCase{GgmlType::F32, 33, 64, 11},
                      MatmulCase{GgmlType::F16, 70, 172, 3}, MatmulCase{GgmlType::BF16, 40, 96, 9},
                      MatmulCase{GgmlType::Q8_0, 70, 256, 1}, MatmulCase{GgmlType::Q8_0, 19, 96, 17},
                      MatmulCase{GgmlType::Q4_0, 70, 256, 1}, MatmulCase{GgmlType::Q4_0, 21, 160, 9},
                      MatmulCase{GgmlType::Q4_K, 70, 512, 1}, MatmulCase{GgmlType::Q4_K, 9, 256, 13},
                      MatmulCase{GgmlType::Q6_K, 70, 512, 1}, MatmulCase{GgmlType::Q6_K, 9, 256, 13},
                      MatmulCase{GgmlType::Q4_0, 130, 96, 70}, MatmulCase{GgmlType::F16, 65, 100, 129},
                      MatmulCase{GgmlType::Q4_K, 4101, 256, 1}, MatmulCase{GgmlType::Q8_0, 16403, 64, 1},
                      // rows of 4096+ columns: the matvec's 64-lane groups; 2048+ rows: 2 rows per lane
                      MatmulCase{GgmlType::Q4_0, 37, 4096, 1}, MatmulCase{GgmlType::Q6_K, 2050, 4352, 1}),
    [](const auto& info) {
      return std::string(type_name(info.param.type)) + "_" + std::to_string(info.param.rows) + "x" +
             std::to_string(info.param.cols) + "_T" + std::to_string(info.param.tokens);
    });

TEST(Kernels, GatedMatmulMatchesCpu) {
  gpu::Kernels k(device());
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::F16}) {
    for (uint32_t T : {1u, 5u, 67u}) {  // decode (matvec kernel) and prefill (gemm kernel)
      EncodedMatrix gate(t, 48, 256, 3), up(t, 48, 256, 4);
      std::vector<float> x = random_vec(T * 256, 5);
      Matrix m = upload_gated(device(), "test.gate_up", gate.view, up.view);
      gpu::Buffer xb = upload("test.x", x), y = device().buffer("test.h", T * 48 * 4);
      gpu::Buffer step = step_buffer(0, T);
      Graph g;
      GraphBuilder(k, g, step).matmul(y, xb, m);
      run(g, 0, T);
      std::vector<float> want = ref::gated_matmul(gate.ref(), up.ref(), x);
      EXPECT_LT(nmse(read(y, want.size()), want), 1e-10) << type_name(t) << " T=" << T;
    }
  }
}

// Passes of 2..64 tokens run matmul_tokens, one token the matvec, longer passes gemm. Each short
// pass is run twice: with the dispatch's own choice, and pinned to gemm (its `few` variant dropped),
// so both kernels are checked at the same token counts. 768 columns = 1.5 sweeps of matmul_tokens;
// the row counts leave its last row block partial, 35 tokens its last token group.
class ShortPassTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(ShortPassTest, PlainAndGatedMatchCpu) {
  const GgmlType t = GetParam();
  const uint32_t cols = 768;
  gpu::Kernels k(device());
  // 38 gated rows: upload_gated writes the up half after the gate half, at a 4-byte aligned offset.
  EncodedMatrix w(t, 70, cols, 31), gate(t, 38, cols, 32), up(t, 38, cols, 33);
  Matrix plain = upload_matrix(device(), "test.w", {&w.view});
  Matrix gated = upload_gated(device(), "test.gate_up", gate.view, up.view);
  for (uint32_t T : {1u, 2u, 7u, 35u, 64u}) {
    std::vector<float> x = random_vec((size_t)T * cols, 34 + T);
    gpu::Buffer xb = upload("test.x", x), step = step_buffer(0, T);
    const std::vector<float> want_plain = ref::matmul(w.ref(), x);
    const std::vector<float> want_gated = ref::gated_matmul(gate.ref(), up.ref(), x);
    for (bool pin_gemm : {false, true}) {
      if (pin_gemm && T == 1) continue;
      for (bool is_gated : {false, true}) {
        const std::vector<float>& want = is_gated ? want_gated : want_plain;
        gpu::Buffer y = device().buffer("test.y", want.size() * 4);
        Graph g;
        GraphBuilder b(k, g, step);
        b.use_few_tokens_kernel(true);
        b.matmul(y, xb, is_gated ? gated : plain);
        ASSERT_EQ(g.ops.size(), 1u);
        if (pin_gemm) g.ops[0].few = nullptr;
        const Variant expect = T == 1 ? Variant::Single : pin_gemm ? Variant::Main : Variant::Few;
        EXPECT_EQ(g.ops[0].variant(T), expect) << "T=" << T;
        run(g, 0, T);
        EXPECT_LT(nmse(read(y, want.size()), want), 1e-10)
            << type_name(t) << (is_gated ? " gated" : " plain") << " T=" << T << (pin_gemm ? " (gemm)" : "");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ShortPassTest,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                                           GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// A matrix of two parts (types differ, as a mixed QKV): each part's short-pass kernel writes its rows
// at its Y_OFFSET within rows of the full width.
TEST(Kernels, ShortPassWritesEachPartAtItsOffset) {
  gpu::Kernels k(device());
  const uint32_t cols = 512, T = 35;
  EncodedMatrix a(GgmlType::Q4_0, 40, cols, 41), b(GgmlType::Q8_0, 27, cols, 42);
  Matrix m = upload_matrix(device(), "test.qkv", {&a.view, &b.view});
  ASSERT_EQ(m.parts.size(), 2u);
  std::vector<float> x = random_vec((size_t)T * cols, 43);
  gpu::Buffer xb = upload("test.x", x), y = device().buffer("test.y", (size_t)T * 67 * 4);
  gpu::Buffer step = step_buffer(0, T);
  Graph g;
  GraphBuilder gb(k, g, step);
  gb.use_few_tokens_kernel(true);
  gb.matmul(y, xb, m);
  for (const Dispatch& d : g.ops) {
    EXPECT_EQ(d.variant(T), Variant::Few);
    EXPECT_EQ(d.variant(1), Variant::Single);
    EXPECT_EQ(d.variant(65), Variant::Main);  // past the default chunk: gemm
  }
  run(g, 0, T);
  const std::vector<float> ya = ref::matmul(a.ref(), x), yb = ref::matmul(b.ref(), x);
  std::vector<float> want;
  for (uint32_t t = 0; t < T; t++) {
    want.insert(want.end(), ya.begin() + t * 40, ya.begin() + (t + 1) * 40);
    want.insert(want.end(), yb.begin() + t * 27, yb.begin() + (t + 1) * 27);
  }
  EXPECT_LT(nmse(read(y, want.size()), want), 1e-10);
}

// Split-K GEMM (Variant::Split): short passes on matrices of few row tiles run gemm with KSPLIT > 1
// into a scratch, then gemm_reduce. Each case runs with the split off, at the builder's own choice,
// and forced to 5 (24 units do not divide by 5: uneven K ranges). y and the scratch start as NaN, so
// an output or a partial left unwritten fails the NMSE check.
namespace {

gpu::Buffer nan_buffer(const std::string& label, size_t floats) {
  gpu::Buffer b = device().buffer(label, floats * 4);
  std::vector<float> v(floats, std::nanf(""));
  device().write(b, v.data(), v.size() * 4);
  return b;
}

// Encodes and runs a pass, returning how many dispatches it recorded.
uint32_t run_counted(const Graph& g, uint32_t pos0, uint32_t n) {
  gpu::Recorder rec(device(), "test");
  g.encode(rec, pos0, n);
  const uint32_t dispatches = rec.dispatches();
  rec.submit();
  device().wait_idle();
  return dispatches;
}

}  // namespace

class SplitKTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(SplitKTest, PlainAndGatedMatchCpu) {
  const GgmlType t = GetParam();
  const uint32_t cols = 768;  // 24 units of 32 columns
  gpu::Kernels k(device());
  EncodedMatrix w(t, 70, cols, 51), gate(t, 38, cols, 52), up(t, 38, cols, 53);  // 2 row tiles each
  Matrix plain = upload_matrix(device(), "test.w", {&w.view});
  Matrix gated = upload_gated(device(), "test.gate_up", gate.view, up.view);
  const uint32_t max_tokens = GraphBuilder::kSplitMaxTokens;
  for (uint32_t T : {1u, 2u, 7u, 35u, 64u}) {
    std::vector<float> x = random_vec((size_t)T * cols, 54 + T);
    gpu::Buffer xb = upload("test.x", x), step = step_buffer(0, T);
    const std::vector<float> want_plain = ref::matmul(w.ref(), x);
    const std::vector<float> want_gated = ref::gated_matmul(gate.ref(), up.ref(), x);
    for (uint32_t force : {~0u, 0u, 5u}) {  // ~0: split off; 0: the builder's choice
      const bool split = force != ~0u;
      for (bool is_gated : {false, true}) {
        const std::vector<float>& want = is_gated ? want_gated : want_plain;
        gpu::Buffer y = nan_buffer("test.y", want.size());
        gpu::Buffer scratch = nan_buffer("test.gemm_part", 5 * max_tokens * 76);  // ksplit <= 5, 76 virtual rows
        Graph g;
        GraphBuilder b(k, g, step);
        if (split) b.use_split_k(scratch, max_tokens, force);
        b.matmul(y, xb, is_gated ? gated : plain);
        ASSERT_EQ(g.ops.size(), 1u);
        const Dispatch& d = g.ops[0];
        const Variant expect = T == 1 ? Variant::Single : split ? Variant::Split : Variant::Main;
        ASSERT_EQ(d.variant(T), expect) << "T=" << T;
        if (expect == Variant::Split) {
          EXPECT_EQ(d.ksplit, force ? force : GraphBuilder::choose_ksplit(2, 24));
        }
        EXPECT_EQ(run_counted(g, 0, T), expect == Variant::Split ? 2u : 1u);  // split: gemm + reduce
        EXPECT_LT(nmse(read(y, want.size()), want), 1e-10) << type_name(t) << (is_gated ? " gated" : " plain")
                                                           << " T=" << T << " ksplit=" << d.ksplit;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SplitKTest,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                                           GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// Two parts (mixed types, as a mixed QKV) share one scratch: part b's split must not see part a's
// partials, and each reduce writes its rows at its Y_OFFSET within rows of the full width. Passes
// longer than the split's limit fall back to the unsplit GEMM.
TEST(Kernels, SplitKWritesEachPartAtItsOffset) {
  gpu::Kernels k(device());
  const uint32_t cols = 512, T = 35;
  EncodedMatrix a(GgmlType::Q4_0, 40, cols, 61), b(GgmlType::Q8_0, 27, cols, 62);
  Matrix m = upload_matrix(device(), "test.qkv", {&a.view, &b.view});
  ASSERT_EQ(m.parts.size(), 2u);
  std::vector<float> x = random_vec((size_t)T * cols, 63);
  gpu::Buffer xb = upload("test.x", x), y = nan_buffer("test.y", (size_t)T * 67);
  gpu::Buffer scratch = nan_buffer("test.gemm_part", GraphBuilder::split_k_scratch_bytes(40) / 4);
  gpu::Buffer step = step_buffer(0, T);
  Graph g;
  GraphBuilder gb(k, g, step);
  gb.use_split_k(scratch, 40, 3);  // 16 units: ranges of 5, 5, 6
  gb.matmul(y, xb, m);
  ASSERT_EQ(g.ops.size(), 2u);
  for (const Dispatch& d : g.ops) {
    EXPECT_EQ(d.variant(T), Variant::Split);
    EXPECT_EQ(d.variant(41), Variant::Main);
  }
  EXPECT_EQ(run_counted(g, 0, T), 4u);
  const std::vector<float> ya = ref::matmul(a.ref(), x), yb = ref::matmul(b.ref(), x);
  std::vector<float> want;
  for (uint32_t t = 0; t < T; t++) {
    want.insert(want.end(), ya.begin() + t * 40, ya.begin() + (t + 1) * 40);
    want.insert(want.end(), yb.begin() + t * 27, yb.begin() + (t + 1) * 27);
  }
  EXPECT_LT(nmse(read(y, want.size()), want), 1e-10);
}

// The rule on Llama-3.2-1B's prefill matrices (row tiles, units): every one the unsplit GEMM runs on
// fewer than 2 workgroups per H200 SM (132) is split to at least 256 groups, each split keeping 8+
// units; matrices with enough tiles (the LM head, 2004) are left alone. A forced split larger than
// the scratch is refused.
TEST(Kernels, SplitKRuleFillsTheGpu) {
  struct Shape { uint32_t row_tiles, units; };
  for (Shape s : {Shape{48, 64}, Shape{32, 64}, Shape{256, 64}, Shape{32, 256}}) {  // qkv, o, gate|up, down
    const uint32_t ks = GraphBuilder::choose_ksplit(s.row_tiles, s.units);
    EXPECT_GE(ks * s.row_tiles, 256u) << s.row_tiles << " tiles";
    EXPECT_GE(s.units / ks, 8u) << s.row_tiles << " tiles";
    EXPECT_LE((uint64_t)ks * s.row_tiles * 64 * 64 * 4, GraphBuilder::split_k_scratch_bytes(64));
  }
  EXPECT_EQ(GraphBuilder::choose_ksplit(2004, 64), 1u);
  EXPECT_EQ(GraphBuilder::choose_ksplit(304, 80), 1u);  // Qwen3-4B gate|up: 304 tiles already
  EXPECT_EQ(GraphBuilder::choose_ksplit(8, 8), 1u);     // K too short to share

  gpu::Kernels k(device());
  EncodedMatrix w(GgmlType::F32, 70, 256, 64);
  Matrix m = upload_matrix(device(), "test.w", {&w.view});
  gpu::Buffer x = device().buffer("test.x", 64 * 256 * 4), y = device().buffer("test.y", 64 * 70 * 4);
  gpu::Buffer small = device().buffer("test.gemm_part", 4 * 64 * 70 * 4 - 4), step = step_buffer(0, 64);
  Graph g;
  GraphBuilder gb(k, g, step);
  gb.use_split_k(small, 64, 4);
  EXPECT_THROW(gb.matmul(y, x, m), ModelError);
}

// The whole forward pass with the split on: the synth "tiny" llama widened to 512 columns (16 units,
// so every matrix splits), Q4_0, prefilled in chunks of 16 tokens (the last of 3), against the CPU
// reference forward pass.
TEST(Kernels, SplitKForwardMatchesCpuReference) {
  ModelConfig c = synth_shape("tiny");
  c.hidden_size = 512, c.head_dim = c.rotary_dim = 64;  // 8 heads x 64
  const std::string path = std::filesystem::temp_directory_path() / ("ztvm_splitk_" + std::to_string(::getpid()) + ".gguf");
  synth_model(c, QuantMix::Q4_0, nullptr, path);
  auto model = open_model(path);
  std::filesystem::remove(path);
  Forward fwd(device(), *model, 64, 16);
  size_t split_ops = 0;
  for (const Dispatch& d : fwd.graph(Head::AllLogits).ops) split_ops += d.variant(16) == Variant::Split;
  EXPECT_EQ(split_ops, 2u * 4u + 1u) << "qkv, o, gate|up and down of both layers, and the LM head";
  std::vector<int32_t> ids(35);
  for (uint32_t i = 0; i < ids.size(); i++) ids[i] = (int32_t)((i * 37 + 1) % model->config.vocab_size);
  std::vector<float> gpu = Generator(fwd).logits(ids);
  std::vector<float> cpu = ref::forward_logits(*model, ids);
  ASSERT_EQ(gpu.size(), cpu.size());
  EXPECT_LT(nmse(gpu, cpu), 1e-9);
}

TEST(Kernels, EmbedMatchesCpu) {
  gpu::Kernels k(device());
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    EncodedMatrix table(t, 50, 256, 6);
    std::vector<int32_t> ids = {3, 0, 49, 17, 3};
    Matrix m = upload_matrix(device(), "test.embd", {&table.view});
    gpu::Buffer idb = device().buffer("test.ids", ids.size() * 4), x = device().buffer("test.x", ids.size() * 256 * 4);
    device().write(idb, ids.data(), ids.size() * 4);
    gpu::Buffer step = step_buffer(0, (uint32_t)ids.size());
    Graph g;
    GraphBuilder(k, g, step).embed(x, idb, m);
    run(g, 0, (uint32_t)ids.size());
    std::vector<float> want = ref::embed(table.ref(), ids);
    EXPECT_EQ(read(x, want.size()), want) << type_name(t);
  }
}

TEST(Kernels, RmsNormAndAddRmsNormMatchCpu) {
  gpu::Kernels k(device());
  const uint32_t d = 300, T = 4;
  std::vector<float> a = random_vec(T * d, 7), b = random_vec(T * d, 8), w = random_vec(d, 9);
  gpu::Buffer ab = upload("test.a", a), bb = upload("test.b", b), wb = upload("test.w", w);
  gpu::Buffer y = device().buffer("test.y", T * d * 4), sum = device().buffer("test.sum", T * d * 4);
  gpu::Buffer y2 = device().buffer("test.y2", T * d * 4);
  gpu::Buffer step = step_buffer(0, T);
  Graph g;
  GraphBuilder gb(k, g, step);
  gb.rmsnorm(y, ab, wb, d, 1e-5f);
  gb.add_rmsnorm(y2, sum, ab, bb, wb, d, 1e-5f);
  run(g, 0, T);
  EXPECT_LT(nmse(read(y, T * d), ref::rmsnorm(a, w, d, 1e-5f)), 1e-12);
  std::vector<float> s(T * d);
  for (size_t i = 0; i < s.size(); i++) s[i] = a[i] + b[i];
  EXPECT_EQ(read(sum, T * d), s);
  EXPECT_LT(nmse(read(y2, T * d), ref::rmsnorm(s, w, d, 1e-5f)), 1e-12);
}

// RoPE + KV append + split-K paged attention over a chunk at a non-zero position, with a shuffled
// page table, several splits, GQA, both RoPE styles, QK-norm and bias.
struct AttnCase {
  bool neox, qk_norm, bias;
  uint32_t rot;
};
class AttentionTest : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionTest, MatchesCpu) {
  const AttnCase ac = GetParam();
  gpu::Kernels k(device());
  const uint32_t hd = 32, nh = 4, nkv = 2, page = 4, split = 16, ctx = 64;
  const uint32_t pos0 = 37, T = 6, qkvw = (nh + 2 * nkv) * hd, kvw = nkv * hd;
  const float theta = 10000.f, eps = 1e-6f;
  ModelConfig cfg;
  cfg.rotary_dim = ac.rot;
  cfg.rope_theta = theta;
  ref::AttnShape rs{hd, nh, nkv, ac.rot, ac.neox, ac.qk_norm, eps};
  GraphBuilder::AttnShape gs{hd, nh, nkv, ac.rot, page, split, ac.neox, ac.qk_norm, ac.bias, eps};

  // Earlier positions come from the CPU; the GPU cache gets the same rows at their paged slots.
  std::vector<float> aux = random_vec(2 * hd + qkvw, 10, 0.3f);
  for (uint32_t i = 0; i < 2 * hd; i++) aux[i] += 1.f;
  const std::vector<float> raw = random_vec((size_t)(pos0 + T) * qkvw, 11);  // un-rotated projections
  std::vector<float> rows = raw;
  std::vector<float> keys, values;
  for (uint32_t p = 0; p < pos0 + T; p++) {
    ref::rope_qkv(&rows[p * qkvw], aux, ac.bias, rs, p, theta, {});
    keys.insert(keys.end(), &rows[p * qkvw + nh * hd], &rows[p * qkvw + (nh + nkv) * hd]);
    values.insert(values.end(), &rows[p * qkvw + (nh + nkv) * hd], &rows[(p + 1) * qkvw]);
  }
  std::vector<uint32_t> pages(ctx / page);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(12));
  std::vector<float> kc((size_t)ctx * kvw, 0.f), vc((size_t)ctx * kvw, 0.f);
  for (uint32_t p = 0; p < pos0; p++) {
    size_t slot = ((size_t)pages[p / page] * page + p % page) * kvw;
    std::copy(&keys[p * kvw], &keys[(p + 1) * kvw], &kc[slot]);
    std::copy(&values[p * kvw], &values[(p + 1) * kvw], &vc[slot]);
  }
  std::vector<float> qkv_in(raw.begin() + (size_t)pos0 * qkvw, raw.end());  // the chunk's raw rows
  std::vector<float> table = rope_table(cfg, ctx);
  gpu::Buffer qkv = upload("test.qkv", qkv_in), auxb = upload("test.aux", aux), rope = upload("test.rope", table);
  gpu::Buffer kcb = upload("test.k_cache", kc), vcb = upload("test.v_cache", vc);
  gpu::Buffer pageb = device().buffer("test.pages", pages.size() * 4);
  device().write(pageb, pages.data(), pages.size() * 4);
  gpu::Buffer q = device().buffer("test.q", T * nh * hd * 4), att = device().buffer("test.att", T * nh * hd * 4);
  gpu::Buffer part = device().buffer("test.part", (size_t)T * nh * (ctx / split) * (hd + 2) * 4);
  gpu::Buffer step = step_buffer(pos0, T);
  Graph g;
  GraphBuilder gb(k, g, step);
  gb.rope_kv(q, kcb, vcb, qkv, auxb, rope, pageb, gs);
  gb.attention(part, q, kcb, vcb, pageb, gs);
  gb.attention_combine(att, part, gs);
  run(g, pos0, T);

  std::vector<float> want_q, want_att;
  for (uint32_t t = 0; t < T; t++) {
    const float* row = &rows[(pos0 + t) * qkvw];
    want_q.insert(want_q.end(), row, row + nh * hd);
    std::vector<float> o = ref::attention(row, keys, values, pos0 + t, rs);
    want_att.insert(want_att.end(), o.begin(), o.end());
  }
  EXPECT_LT(nmse(read(q, want_q.size()), want_q), 1e-11);
  std::vector<float> kc_gpu = read(kcb, kc.size()), vc_gpu = read(vcb, vc.size());
  for (uint32_t t = 0; t < T; t++) {
    uint32_t p = pos0 + t;
    size_t slot = ((size_t)pages[p / page] * page + p % page) * kvw;
    std::vector<float> gk(&kc_gpu[slot], &kc_gpu[slot + kvw]), wk(&keys[p * kvw], &keys[(p + 1) * kvw]);
    std::vector<float> gv(&vc_gpu[slot], &vc_gpu[slot + kvw]), wv(&values[p * kvw], &values[(p + 1) * kvw]);
    EXPECT_LT(nmse(gk, wk), 1e-11) << "key at " << p;
    EXPECT_EQ(gv, wv) << "value at " << p;
  }
  EXPECT_LT(nmse(read(att, want_att.size()), want_att), 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionTest,
                         ::testing::Values(AttnCase{false, false, false, 32}, AttnCase{true, false, false, 32},
                                           AttnCase{true, true, false, 32}, AttnCase{true, false, true, 16},
                                           AttnCase{false, false, true, 8}),
                         [](const auto& info) {
                           const AttnCase& c = info.param;
                           return std::string(c.neox ? "neox" : "normal") + (c.qk_norm ? "_qknorm" : "") +
                                  (c.bias ? "_bias" : "") + "_rot" + std::to_string(c.rot);
                         });

TEST(Kernels, ArgmaxPicksLowestIndexOfMaximum) {
  gpu::Kernels k(device());
  const uint32_t n = 5000;
  std::vector<float> logits = random_vec(n, 13);
  logits[4321] = 50.f;
  logits[1234] = 50.f;  // a tie: the lower index wins
  logits[77] = std::nanf("");
  gpu::Buffer lb = upload("test.logits", logits), ids = device().buffer("test.ids", 16), toks = device().buffer("test.tokens", 64);
  gpu::Buffer part = device().buffer("test.part", GraphBuilder::kArgmaxParts * 8);
  gpu::Buffer step = step_buffer(0, 1, 5);
  Graph g;
  GraphBuilder(k, g, step).argmax(ids, toks, part, lb, n);
  run(g, 0, 1);
  EXPECT_EQ(device().read_as<uint32_t>(ids, 1)[0], 1234u);
  EXPECT_EQ(device().read_as<uint32_t>(toks, 6)[5], 1234u);
}

TEST(Kernels, CompileErrorNamesTheKernel) {
  try {
    device().pipeline("broken_kernel", "@compute @workgroup_size(1) fn main() { let x: u32 = undefined_symbol; }");
    FAIL() << "expected a GpuError";
  } catch (const gpu::GpuError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("broken_kernel"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undefined_symbol"), std::string::npos) << msg;
  }
}

// Random sampling: the draw always lies in the set top-k/top-p/min-p allow (computed here on the CPU
// from the untempered logits), its frequencies follow softmax(l / T) over that set, top-k 1 is argmax,
// the same seed repeats, and the repeat penalty pushes a recent token down.
namespace {

struct SampleRig {
  gpu::Kernels k{device()};
  uint32_t n;
  gpu::Buffer logits, ids, toks, params;
  std::vector<float> l;
  SampleRig(const std::vector<float>& values, const SamplingParams& p) : n((uint32_t)values.size()), l(values) {
    logits = upload("test.logits", l);
    ids = device().buffer("test.ids", 16);
    toks = device().buffer("test.tokens", 4 * 4096);
    params = device().buffer("test.sampling", sizeof(SamplingUniform), gpu::kUniform);
    SamplingUniform u{p.temperature, p.top_p, p.min_p, p.repeat_penalty, p.presence_penalty, p.frequency_penalty,
                      (uint32_t)p.top_k, (uint32_t)p.repeat_last_n, (uint32_t)p.seed, (uint32_t)(p.seed >> 32), 0, 0};
    device().write(params, &u, sizeof u);
  }
  // Draws at step index `out` (the RNG counter); the logits are restored first (sampling edits them).
  uint32_t draw(uint32_t out) {
    device().write(logits, l.data(), l.size() * 4);
    gpu::Buffer step = step_buffer(0, 1, out);
    Graph g1;
    GraphBuilder(k, g1, step).sample(ids, toks, logits, params, n);
    run(g1, 0, 1);
    return device().read_as<uint32_t>(ids, 1)[0];
  }
};

}  // namespace

TEST(Kernels, SampleFollowsTheTruncatedDistribution) {
  const uint32_t n = 50;
  std::vector<float> l = random_vec(n, 21, 2.f);
  SamplingParams p;
  p.temperature = 0.7f, p.top_k = 20, p.top_p = 0.9f, p.min_p = 0.02f, p.seed = 7;
  // The allowed set, llama.cpp's way, on the untempered logits.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return l[a] > l[b]; });
  const float mx = l[order[0]];
  std::vector<bool> allowed(n, false);
  double total = 0, mass = 0;
  for (uint32_t i = 0; i < (uint32_t)p.top_k; i++)
    if (std::exp(l[order[i]] - mx) >= p.min_p) total += std::exp(l[order[i]] - mx);
  for (uint32_t i = 0; i < (uint32_t)p.top_k && std::exp(l[order[i]] - mx) >= p.min_p; i++) {
    allowed[order[i]] = true;
    mass += std::exp(l[order[i]] - mx);
    if (mass >= p.top_p * total) break;
  }
  std::vector<double> want(n, 0.0);
  double z = 0;
  for (uint32_t i = 0; i < n; i++)
    if (allowed[i]) z += (want[i] = std::exp((l[i] - mx) / p.temperature));
  for (auto& w : want) w /= z;

  SampleRig rig(l, p);
  const uint32_t draws = 1500;
  std::vector<double> freq(n, 0.0);
  for (uint32_t d = 0; d < draws; d++) {
    uint32_t t = rig.draw(d);
    ASSERT_LT(t, n);
    EXPECT_TRUE(allowed[t]) << "token " << t << " is outside top-k/top-p/min-p";
    freq[t] += 1.0 / draws;
  }
  for (uint32_t i = 0; i < n; i++) EXPECT_NEAR(freq[i], want[i], 0.045) << "token " << i;
  EXPECT_EQ(rig.draw(3), rig.draw(3));  // same seed and step, same token
}

TEST(Kernels, SampleTopK1IsArgmaxAndPenaltyDemotes) {
  std::vector<float> l = random_vec(3000, 22);
  l[1234] = 9.f;
  l[77] = 6.f;
  SamplingParams p;
  p.temperature = 1.5f, p.top_k = 1, p.seed = 99;
  SampleRig rig(l, p);
  for (uint32_t d = 0; d < 5; d++) EXPECT_EQ(rig.draw(d), 1234u);
  // History holds 1234 at steps 0..4 (written by those draws): a repeat penalty of 2 halves its logit
  // (9 -> 4.5), so the top-1 token becomes 77.
  SamplingParams q = p;
  q.repeat_penalty = 2.f, q.repeat_last_n = 8;
  SamplingUniform u{q.temperature, q.top_p, q.min_p, q.repeat_penalty, q.presence_penalty, q.frequency_penalty,
                    (uint32_t)q.top_k, (uint32_t)q.repeat_last_n, (uint32_t)q.seed, 0, 0, 0};
  device().write(rig.params, &u, sizeof u);
  EXPECT_EQ(rig.draw(5), 77u);
}
