// The mixture-of-experts kernels against their CPU twins (reference/ops.h): the router's top-k
// (moe_route.wgsl) with ties, more experts than a workgroup's threads, and both weightings; and a
// whole sparse FFN — route, the experts' gate|up and down matvecs over their stacked rows
// (matvec_moe.wgsl), the weighted sum (moe_combine.wgsl) — for every expert type the forward pass
// reads, in passes of one token, a few and more than the int8 matvec's token groups; and passes long
// enough for the experts' int8 GEMM (gemm_q8.wgsl on moe_sort's tiles, gemm_moe_tiles.wgsl), with h
// kept as int8 units between gate|up and down where hq holds every pass's pairs.
#include <gtest/gtest.h>

#include <memory>

#include "engine/gpu_layout.h"
#include "gpu_kernels_rig.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

struct Routed {
  std::vector<uint32_t> ids;
  std::vector<float> wts;
};

Routed run_route(gpu::Kernels& k, const std::vector<float>& logits, uint32_t T, uint32_t E, uint32_t K, bool norm) {
  gpu::Buffer lb = upload("test.logits", logits), step = step_buffer(0, T);
  gpu::Buffer ids = device().buffer("test.ids", T * K * 4), wts = device().buffer("test.wts", T * K * 4);
  gpu::Buffer plan = device().buffer("test.plan", GraphBuilder::moe_plan_bytes(E, K, T));
  Graph g;
  GraphBuilder(k, g, step).moe_route(ids, wts, plan, lb, E, K, norm).finish();
  run(g, 0, T);
  return {device().read_as<uint32_t>(ids, T * K), read(wts, T * K)};
}

TEST(Moe, RouteMatchesCpu) {
  gpu::Kernels k(device());
  struct Case { uint32_t T, E, K; bool norm; };
  for (const Case c : {Case{3, 4, 2, true}, Case{5, 8, 8, true}, Case{2, 130, 8, true}, Case{4, 128, 8, false},
                       Case{1, 256, 1, true}, Case{70, 6, 3, true}, Case{2, 600, 8, true}}) {
    std::vector<float> logits = random_vec((size_t)c.T * c.E, 7 + c.E, 2.f);
    // Ties: token 0's experts 1 and 2 equal and the largest; the lower index goes first.
    logits[2] = logits[1] = 9.f;
    if (c.E > 70) logits[70] = 9.f;  // and one in another thread's stride
    const Routed got = run_route(k, logits, c.T, c.E, c.K, c.norm);
    const std::string at = "T=" + std::to_string(c.T) + " E=" + std::to_string(c.E) + " K=" + std::to_string(c.K);
    for (uint32_t t = 0; t < c.T; t++) {
      const ref::Route want = ref::moe_route(&logits[(size_t)t * c.E], c.E, c.K, c.norm);
      for (uint32_t j = 0; j < c.K; j++) {
        EXPECT_EQ(got.ids[t * c.K + j], want.ids[j]) << at << " token " << t << " slot " << j;
        EXPECT_NEAR(got.wts[t * c.K + j], want.weights[j], 1e-6) << at << " token " << t << " slot " << j;
      }
    }
    EXPECT_EQ(got.ids[0], 1u) << at;
    EXPECT_EQ(got.ids[1], c.K > 1 ? 2u : got.ids[1]) << at;
  }
}

// E experts of ff rows on d columns, each encoded in `type` (gate, up, down from their own seeds).
struct TestExperts {
  std::vector<EncodedMatrix> gate, up, down;
  EncodedMatrix router;
  Experts gpu;
  TestExperts(GgmlType type, uint32_t E, uint32_t ff, uint32_t d)
      : router(GgmlType::F32, E, d, 99) {
    ExpertViews g, u, dn;
    for (uint32_t e = 0; e < E; e++) {
      gate.emplace_back(type, ff, d, 100 + e), up.emplace_back(type, ff, d, 200 + e), down.emplace_back(type, d, ff, 300 + e);
    }
    for (uint32_t e = 0; e < E; e++) g.push_back(&gate[e].view), u.push_back(&up[e].view), dn.push_back(&down[e].view);
    gpu = upload_experts(device(), "test.", router.view, g, u, dn);
  }
};

// The sparse FFN of T tokens on the GPU, as forward.cpp lists it after the router's matmul.
// long_h: hq/hs hold max_tokens tokens' pairs of h (the GEMMs' int8 h), else one token's.
std::vector<float> run_ffn(gpu::Kernels& k, const TestExperts& x, const std::vector<float>& xb,
                           const std::vector<float>& logits, uint32_t T, uint32_t K, bool long_h, std::string* roles) {
  const uint32_t d = x.gpu.hidden, ff = x.gpu.ff, max_tokens = 160, h_tokens = long_h ? max_tokens : 1;
  gpu::Buffer xbuf = upload("test.xb", xb), lb = upload("test.logits", logits), step = step_buffer(0, T);
  gpu::Buffer ids = device().buffer("test.ids", T * K * 4), wts = device().buffer("test.wts", T * K * 4);
  gpu::Buffer plan = device().buffer("test.plan", GraphBuilder::moe_plan_bytes(x.gpu.count, K, T));
  gpu::Buffer h = device().buffer("test.h", (size_t)T * K * ff * 4), ys = device().buffer("test.ys", (size_t)T * K * d * 4);
  gpu::Buffer y = device().buffer("test.y", (size_t)T * d * 4);
  gpu::Buffer xq = device().buffer("test.xq", (size_t)max_tokens * K * std::max(d, ff));
  gpu::Buffer xs = device().buffer("test.xs", (size_t)max_tokens * K * std::max(d, ff) / 32 * 8);
  gpu::Buffer hq = device().buffer("test.hq", (size_t)h_tokens * K * ff);
  gpu::Buffer hs = device().buffer("test.hs", (size_t)h_tokens * K * ff / 32 * 8);
  Graph g;
  GraphBuilder b(k, g, step);
  b.use_q8_x(xq, xs, max_tokens, 4, 2, 16);
  b.use_q8_h(hq, hs);  // one-token passes: gate|up stores h's int8 units there for down
  b.use_q8_gemm(true);  // long passes: the experts' GEMM (graph_moe.cpp add_moe_gemm)
  b.moe_route(ids, wts, plan, lb, x.gpu.count, K, true);
  b.moe_matmul(h, xbuf, ids, plan, x.gpu, true, K).moe_matmul(ys, h, ids, plan, x.gpu, false, K);
  b.moe_combine(y, ys, wts, d, K).finish();
  // The pass as recorded, and the roles of what it dispatched (a trace line ends "role bytes").
  std::vector<std::string> lines;
  gpu::Recorder rec(device(), "test");
  rec.trace(&lines);
  g.encode(rec, 0, T);
  rec.submit();
  device().wait_idle();
  for (const std::string& l : lines) {
    const std::string head = l.substr(0, l.rfind(' '));
    *roles += (roles->empty() ? "" : " ") + head.substr(head.rfind(' ') + 1);
  }
  return read(y, (size_t)T * d);
}

class MoeTypeTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MoeTypeTest, SparseFfnMatchesCpuTwin) {
  const GgmlType t = GetParam();
  const bool int8 = int8_dot_type(t);
  const uint32_t ff = block_elems(t) == 32 ? 160 : 256, d = block_elems(t) == 32 ? 288 : 256;
  gpu::Kernels k(device());
  // 3 of 6 experts; and 8 of 16 (Qwen3-MoE's k) for some types: the one-token down projection sums
  // 8 pairs in a workgroup, and 70 or 130 tokens run the experts' GEMM (n k >= 4 E) on experts of
  // none to 130 pairs (tiles of 64: one full, some part full). long_h: h as int8 units between them.
  struct Shape { uint32_t E, K, T; bool long_h; };
  std::vector<Shape> shapes = {{6, 3, 1, false}, {6, 3, 3, false}, {6, 3, 70, false}};  // 70: experts of up to ~50 pairs
  if (t == GgmlType::Q4_K || t == GgmlType::F32) shapes.insert(shapes.end(), {{16, 8, 1, false}, {16, 8, 5, false}});
  if (t == GgmlType::Q4_K || t == GgmlType::Q6_K || t == GgmlType::Q8_0 || t == GgmlType::Q4_0 || t == GgmlType::IQ4_XS)
    shapes.insert(shapes.end(), {{16, 8, 70, false}, {16, 8, 130, true}});
  std::unique_ptr<TestExperts> experts;
  for (const auto [E, K, T, long_h] : shapes) {
    if (!experts || experts->gpu.count != E) experts = std::make_unique<TestExperts>(t, E, ff, d);
    const TestExperts& x = *experts;
    const std::vector<float> xb = random_vec((size_t)T * d, 40 + T);
    std::vector<float> logits = random_vec((size_t)T * E, 50 + T, 2.f);
    if (E == 16) {  // expert 0 chosen by every token (130 pairs: three tiles), 14 and 15 by none
      for (uint32_t t0 = 0; t0 < T; t0++) logits[t0 * E] = 8.f, logits[t0 * E + 14] = logits[t0 * E + 15] = -30.f;
    }
    // The twin: per token its route, each expert's gate|up on x (as int8 units where the GPU reads
    // them so), then down on h (so too), summed with the router's weights.
    std::vector<double> want((size_t)T * d, 0.0);
    for (uint32_t t0 = 0; t0 < T; t0++) {
      const ref::Route r = ref::moe_route(&logits[(size_t)t0 * E], E, K, true);
      std::vector<float> x_t(xb.begin() + (size_t)t0 * d, xb.begin() + (size_t)(t0 + 1) * d);
      if (int8) x_t = ref::quantize_q8(x_t);
      for (uint32_t j = 0; j < K; j++) {
        const uint32_t e = r.ids[j];
        std::vector<float> h = ref::gated_matmul(x.gate[e].ref(), x.up[e].ref(), x_t);
        if (int8) h = ref::quantize_q8(h);
        const std::vector<float> y = ref::matmul(x.down[e].ref(), h);
        for (uint32_t i = 0; i < d; i++) want[(size_t)t0 * d + i] += r.weights[j] * y[i];
      }
    }
    std::string roles;
    const std::vector<float> got = run_ffn(k, x, xb, logits, T, K, long_h, &roles);
    const std::string at = std::string(type_name(t)) + " T=" + std::to_string(T) + " K=" + std::to_string(K);
    const std::string s = weight_snippet(t).substr(7);
    // One token by pair, its down projection by token with the weighted sum in it; more grouped by
    // expert, after the plan (moe_sort), then the combine.
    const std::string g = T == 1 ? "" : "_grouped", sort = T == 1 ? "" : " moe_sort", q8 = int8 ? "q8_" : "";
    // int8: the gate|up matvec of one token stores h's int8 units too, so no quantize_q8 before down.
    const std::string quantize = int8 ? " quantize_q8" : "", down = T == 1 ? "_combine" : "_grouped moe_combine";
    const std::string gated = T == 1 ? (int8 ? "_gated_q8" : "_gated") : "_gated_grouped";
    // Passes of n k >= 4 E pairs (int8 types): the GEMM, h as int8 units where hq holds them (and four
    // units a step fit the workgroup memory).
    const bool gemm = int8 && T >= GraphBuilder::moe_gemm_min_tokens(E, K);
    const bool h = gemm && long_h && device().limits().maxComputeWorkgroupStorageSize >= 4 * 5120 + 1024;
    if (gemm) {
      EXPECT_EQ(roles, "moe_route moe_sort quantize_q8 gemm_moe_q8_" + s + "_gated" + (h ? "_h" : " quantize_q8") +
                           " gemm_moe_q8_" + s + " moe_combine") << at;
    } else {
      EXPECT_EQ(roles, "moe_route" + sort + quantize + " matvec_moe_" + q8 + s + gated + (T == 1 ? "" : quantize) +
                           " matvec_moe_" + q8 + s + down) << at;
    }
    // int8: h is quantized again for down, and an h the GPU sums a rounding apart may land on the other
    // side of a unit's step (1/127 of its max), a few in 50,000 at T=70: 3e-8 measured (one matmul: 1e-9).
    EXPECT_LT(nmse(got, std::vector<float>(want.begin(), want.end())), int8 ? 1e-7 : 1e-10) << at;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MoeTypeTest,
                         ::testing::Values(GgmlType::F16, GgmlType::F32, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q4_K,
                                           GgmlType::Q6_K, GgmlType::Q5_K, GgmlType::Q3_K, GgmlType::IQ4_XS, GgmlType::MXFP4),
                         [](const auto& info) { return std::string(type_name(info.param)); });

}  // namespace
