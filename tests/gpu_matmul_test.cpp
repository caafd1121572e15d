// The matmul kernels against their CPU twins: the decode matvec, the tiled GEMM, split-K GEMM with its
// reduce, for every weight type (the int8-x matvec: gpu_matvec_q8_test.cpp), through the GraphBuilder the forward pass uses.
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <unistd.h>
#include "engine/forward.h"
#include "engine/generator.h"
#include "engine/graph.h"
#include "engine/sampling.h"
#include "engine/weights.h"
#include "model/model_error.h"
#include "model/synth.h"
#include "reference/model.h"
#include "reference/ops.h"

#include "gpu_kernels_rig.h"

using namespace ztvm;
using namespace ztvm::test;

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
  GraphBuilder(k, g, step).matmul(y, xb, m).finish();
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
                      // float units in 16-byte loads (rows of 8k columns; 4k for F32), a last part unit elementwise
                      MatmulCase{GgmlType::F16, 70, 264, 5}, MatmulCase{GgmlType::F32, 33, 100, 7},
                      // one token of quantized weights without int8 x: the GEMM (the matvec: gpu_matvec_q8_test)
                      MatmulCase{GgmlType::Q4_K, 4101, 256, 1}, MatmulCase{GgmlType::Q8_0, 16403, 64, 1},
                      // the f32-x matvec: 8192+ rows 4 rows per lane, 2048+ rows 2, rows of 4096+ columns 64 lanes
                      MatmulCase{GgmlType::F16, 16403, 64, 1}, MatmulCase{GgmlType::BF16, 2050, 4352, 1},
                      MatmulCase{GgmlType::F32, 37, 4096, 1}),
    [](const auto& info) {
      return std::string(type_name(info.param.type)) + "_" + std::to_string(info.param.rows) + "x" +
             std::to_string(info.param.cols) + "_T" + std::to_string(info.param.tokens);
    });

// An LM head of a width that is not whole 32-element units (no matvec takes it): the last token's
// row through the GEMM, one token tile whatever the pass's length, in a pass of 70 tokens.
TEST(Kernels, OneTokenHeadOfAnyWidth) {
  gpu::Kernels k(device());
  for (GgmlType t : {GgmlType::F32, GgmlType::F16}) {
    EncodedMatrix w(t, 130, 100, 3);
    Matrix m = upload_matrix(device(), "test.head", {&w.view});
    const std::vector<float> x = random_vec(100, 4);
    gpu::Buffer xb = upload("test.x_last", x), y = device().buffer("test.logits", 130 * 4);
    gpu::Buffer step = step_buffer(0, 70), last = step_buffer(69, 1);
    Graph g;
    GraphBuilder b(k, g, step);
    b.use_step(last);
    b.matmul(y, xb, m, 0, true).finish();
    ASSERT_EQ(g.ops.size(), 1u);
    EXPECT_EQ(runs(g, 0, 70), "main");
    run(g, 0, 70);
    EXPECT_LT(nmse(read(y, 130), ref::matmul(w.ref(), x)), 1e-10) << type_name(t);
  }
}

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
      GraphBuilder(k, g, step).matmul(y, xb, m).finish();
      run(g, 0, T);
      std::vector<float> want = ref::gated_matmul(gate.ref(), up.ref(), x);
      EXPECT_LT(nmse(read(y, want.size()), want), 1e-10) << type_name(t) << " T=" << T;
    }
  }
}

// Split-K GEMM (MatmulOp::split): short passes on matrices of few row tiles run gemm with KSPLIT > 1
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
        const uint32_t ks_max = std::max(5u, GraphBuilder::choose_ksplit(2, 24));  // forced 5 or the rule's
        gpu::Buffer scratch = nan_buffer("test.gemm_part", ks_max * max_tokens * 76);  // 76 virtual rows
        Graph g;
        GraphBuilder b(k, g, step);
        if (split) b.use_split_k(scratch, max_tokens, force);
        b.matmul(y, xb, is_gated ? gated : plain).finish();
        ASSERT_EQ(g.ops.size(), 1u);
        const MatmulOp& d = g.op<MatmulOp>(0);
        // One token: the matvec for float weights; quantized ones need int8 x for it (gpu_matvec_q8_test.cpp).
        const bool float_type = t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
        const std::string expect = T == 1 && float_type ? "single" : split ? "split" : "main";
        ASSERT_EQ(runs(g, 0, T), expect) << "T=" << T;
        if (expect == "split") {
          EXPECT_EQ(d.ksplit, force ? force : GraphBuilder::choose_ksplit(2, 24));
        }
        EXPECT_EQ(run_counted(g, 0, T), expect == "split" ? 2u : 1u);  // split: gemm + reduce
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

// gemm.wgsl's 8 x 4 micro-tile (RQ 2, 128-row tiles), which the rule below gives only large grids,
// forced on every unsplit pass and checked against the CPU: plain and gated, rows past a tile, tokens
// past a token tile, 4 and 8 tiles of 128 rows.
TEST(Kernels, WideGemmTilesMatchCpu) {
  if (device().limits().maxComputeWorkgroupStorageSize < 24576) GTEST_SKIP() << "the 8 x 4 tiles need 24 KB of workgroup memory";
  gpu::Kernels k(device());
  for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0}) {
    EncodedMatrix w(t, 200, 256, 81), gate(t, 70, 256, 82), up(t, 70, 256, 83);
    Matrix plain = upload_matrix(device(), "test.w", {&w.view});
    Matrix gated = upload_gated(device(), "test.gate_up", gate.view, up.view);
    for (uint32_t T : {35u, 67u}) {
      std::vector<float> x = random_vec((size_t)T * 256, 84 + T);
      gpu::Buffer xb = upload("test.x", x), step = step_buffer(0, T);
      for (bool is_gated : {false, true}) {
        const std::vector<float> want = is_gated ? ref::gated_matmul(gate.ref(), up.ref(), x) : ref::matmul(w.ref(), x);
        gpu::Buffer y = nan_buffer("test.y", want.size());
        Graph g;
        GraphBuilder b(k, g, step);
        b.force_gemm_wide();
        b.matmul(y, xb, is_gated ? gated : plain).finish();
        ASSERT_EQ(g.ops.size(), 1u);
        ASSERT_TRUE(g.op<MatmulOp>(0).wide);
        EXPECT_EQ(g.op<MatmulOp>(0).wide_a, 2u);
        run(g, 0, T);
        {  // unforced, a matrix this small fills no wave either way: no wide pipeline is made
          Graph g2;
          GraphBuilder(k, g2, step).matmul(y, xb, is_gated ? gated : plain).finish();
          EXPECT_FALSE(g2.op<MatmulOp>(0).wide);
        }
        EXPECT_LT(nmse(read(y, want.size()), want), 1e-10) << type_name(t) << (is_gated ? " gated" : " plain") << " T=" << T;
      }
    }
  }
}

TEST(Kernels, WideGemmRuleKeepsTheWavesFull) {
  // Qwen3-4B at 1,024 tokens: qkv (96 / 48 tiles) and gate|up (304 / 152) wide; attn_output and
  // ffn_down (40 / 20: 640 narrow workgroups fill 81% of three waves, 320 wide ones 61% of two) narrow.
  EXPECT_TRUE(GraphBuilder::gemm_wide_pays(96, 48, 1024));
  EXPECT_TRUE(GraphBuilder::gemm_wide_pays(304, 152, 1024));
  EXPECT_FALSE(GraphBuilder::gemm_wide_pays(40, 20, 1024));
  EXPECT_TRUE(GraphBuilder::gemm_wide_pays(40, 20, 512));  // 61% either way
  // Llama-3.2-1B at 1,024: qkv (48 / 24: 97% against 73%) narrow; attn_output and ffn_down wide.
  EXPECT_FALSE(GraphBuilder::gemm_wide_pays(48, 24, 1024));
  EXPECT_TRUE(GraphBuilder::gemm_wide_pays(32, 16, 1024));
}

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
  gb.matmul(y, xb, m).finish();
  ASSERT_EQ(g.ops.size(), 2u);
  for (size_t i = 0; i < g.ops.size(); i++) {
    EXPECT_EQ(runs(g, i, T), "split");
    EXPECT_EQ(runs_gemm(g, i, 41), "gemm");
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

// A QKV's tensors are one part per run of one type (a Q4_K_M layer: q|k Q4_K, v Q6_K), each run's
// rows back to back in its buffer; the GEMM over the parts gives the concatenation's rows.
TEST(Kernels, QkvIsOnePartPerRunOfOneType) {
  gpu::Kernels k(device());
  const uint32_t cols = 256, T = 5;
  EncodedMatrix q(GgmlType::Q4_K, 64, cols, 71), kk(GgmlType::Q4_K, 32, cols, 72), v(GgmlType::Q6_K, 32, cols, 73);
  Matrix m = upload_matrix(device(), "test.qkv", {&q.view, &kk.view, &v.view});
  ASSERT_EQ(m.parts.size(), 2u);
  EXPECT_EQ(m.rows, 128u);
  EXPECT_EQ(m.parts[0].type, GgmlType::Q4_K);
  EXPECT_EQ(m.parts[0].rows, 96u);
  EXPECT_EQ(m.parts[1].row0, 96u);
  EXPECT_EQ(upload_matrix(device(), "test.qkv3", {&q.view, &v.view, &kk.view}).parts.size(), 3u);
  EXPECT_EQ(upload_matrix(device(), "test.qk", {&q.view, &kk.view}).parts.size(), 1u);
  std::vector<float> x = random_vec((size_t)T * cols, 74);
  gpu::Buffer xb = upload("test.x", x), y = nan_buffer("test.y", (size_t)T * 128);
  gpu::Buffer step = step_buffer(0, T);
  Graph g;
  GraphBuilder gb(k, g, step);
  gb.matmul(y, xb, m).finish();
  run(g, 0, T);
  std::vector<float> want;
  const std::vector<float> yq = ref::matmul(q.ref(), x), yk = ref::matmul(kk.ref(), x), yv = ref::matmul(v.ref(), x);
  for (uint32_t t = 0; t < T; t++) {
    want.insert(want.end(), yq.begin() + t * 64, yq.begin() + (t + 1) * 64);
    want.insert(want.end(), yk.begin() + t * 32, yk.begin() + (t + 1) * 32);
    want.insert(want.end(), yv.begin() + t * 32, yv.begin() + (t + 1) * 32);
  }
  EXPECT_LT(nmse(read(y, want.size()), want), 1e-10);
}

// gemm_q8's split (passes of 65..512 tokens): two halves only where they fill the H200's waves (264
// workgroups at once) clearly better, on the shapes measured in bench/EXPERIMENTS.md at 512 tokens.
TEST(Kernels, Q8SplitRuleTakesHalfEmptyWaves) {
  EXPECT_EQ(GraphBuilder::choose_q8_ksplit(40, 512), 2u);    // Qwen3-4B attn_output, ffn_down: 320 of 528
  EXPECT_EQ(GraphBuilder::choose_q8_ksplit(96, 512), 1u);    // its qkv: 768 of 792
  EXPECT_EQ(GraphBuilder::choose_q8_ksplit(304, 512), 1u);   // its gate|up
  EXPECT_EQ(GraphBuilder::choose_q8_ksplit(32, 512), 1u);    // Llama-3.2-1B attn_output, ffn_down: one full wave
  EXPECT_EQ(GraphBuilder::choose_q8_ksplit(48, 512), 2u);    // its qkv: 384 of 528
}

// The rule on Llama-3.2-1B's prefill matrices (row tiles, units): every one the unsplit GEMM runs on
// fewer than 4 workgroups per H200 SM (132) is split to at least 256 groups, each split keeping 4+
// units; matrices with enough tiles (the LM head, 2004) are left alone. A forced split larger than
// the scratch is refused.
TEST(Kernels, SplitKRuleFillsTheGpu) {
  struct Shape { uint32_t row_tiles, units; };
  for (Shape s : {Shape{48, 64}, Shape{32, 64}, Shape{256, 64}, Shape{32, 256}}) {  // qkv, o, gate|up, down
    const uint32_t ks = GraphBuilder::choose_ksplit(s.row_tiles, s.units);
    EXPECT_GE(ks * s.row_tiles, 256u) << s.row_tiles << " tiles";
    EXPECT_GE(s.units / ks, 4u) << s.row_tiles << " tiles";
    EXPECT_LE((uint64_t)ks * s.row_tiles * 64 * 64 * 4, GraphBuilder::split_k_scratch_bytes(64));
  }
  EXPECT_EQ(GraphBuilder::choose_ksplit(2004, 64), 1u);
  EXPECT_GE(GraphBuilder::choose_ksplit(304, 80), 2u);  // Qwen3-4B gate|up: 304 tiles, still split
  EXPECT_EQ(GraphBuilder::choose_ksplit(600, 80), 1u);  // enough tiles
  EXPECT_EQ(GraphBuilder::choose_ksplit(8, 7), 1u);     // K too short to share

  gpu::Kernels k(device());
  EncodedMatrix w(GgmlType::F32, 70, 256, 64);
  Matrix m = upload_matrix(device(), "test.w", {&w.view});
  gpu::Buffer x = device().buffer("test.x", 64 * 256 * 4), y = device().buffer("test.y", 64 * 70 * 4);
  gpu::Buffer small = device().buffer("test.gemm_part", 4 * 64 * 70 * 4 - 16), step = step_buffer(0, 64);
  Graph g;
  GraphBuilder gb(k, g, step);
  gb.use_split_k(small, 64, 4);
  gb.matmul(y, x, m);
  EXPECT_THROW(gb.finish(), ModelError);
}

// The whole forward pass with the split on: the synth "tiny" llama widened to 512 columns (16 units,
// so every matrix splits), F16 (quantized weights take the int8 matvec in passes this short),
// prefilled in chunks of 16 tokens (the last of 3), against the CPU reference forward pass.
TEST(Kernels, SplitKForwardMatchesCpuReference) {
  ModelConfig c = synth_shape("tiny");
  c.hidden_size = 512, c.head_dim = c.rotary_dim = 64;  // 8 heads x 64
  const std::string path = std::filesystem::temp_directory_path() / ("ztvm_splitk_" + std::to_string(::getpid()) + ".gguf");
  synth_model(c, QuantMix::F16, nullptr, path);
  auto model = open_model(path);
  std::filesystem::remove(path);
  Forward fwd(device(), *model, 64, 16);
  size_t split_ops = 0;
  const Graph& g = fwd.graph(Head::AllLogits);
  for (size_t i = 0; i < g.ops.size(); i++) split_ops += runs(g, i, 16) == "split";
  EXPECT_EQ(split_ops, 2u * 4u + 1u) << "qkv, o, gate|up and down of both layers, and the LM head";
  expect_logits_match_cpu(fwd, *model, 35);
}

