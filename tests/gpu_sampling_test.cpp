// Picking the next token on the GPU against the CPU: argmax (greedy) and sample (temperature,
// top-k/top-p/min-p, penalties), each storing the picked token's embedding row for the next step.
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include "engine/graph.h"
#include "engine/sampling.h"
#include "engine/weights.h"

#include "gpu_kernels_rig.h"

using namespace ztvm;
using namespace ztvm::test;

// argmax: the largest logit, the lowest index on ties, never a NaN. The final pass also stores the
// chosen token's embedding row for the next step (next_embed.wgsl), dequantized as embed.wgsl would;
// with the table in two parts it leaves that to the embed dispatch.
TEST(Kernels, ArgmaxPicksLowestIndexOfMaximum) {
  gpu::Kernels k(device());
  const uint32_t n = 5000, d = 512;
  std::vector<float> logits = random_vec(n, 13);
  logits[4321] = 50.f;
  logits[1234] = 50.f;  // a tie: the lower index wins
  logits[77] = std::nanf("");
  for (GgmlType t : {GgmlType::Q6_K, GgmlType::Q4_0, GgmlType::F16}) {
    EncodedMatrix table(t, n, d, 21);
    Matrix m = upload_matrix(device(), "test.embd", {&table.view});
    gpu::Buffer lb = upload("test.logits", logits), ids = device().buffer("test.ids", 16), toks = device().buffer("test.tokens", 64);
    gpu::Buffer part = device().buffer("test.part", GraphBuilder::kArgmaxParts * 8);
    gpu::Buffer x = upload("test.x", std::vector<float>(d, -7.f));
    gpu::Buffer step = step_buffer(0, 1, 5);
    Graph g;
    GraphBuilder gb(k, g, step);
    EXPECT_TRUE(gb.argmax(ids, toks, part, lb, n, x, m));
    gb.finish();
    run(g, 0, 1);
    EXPECT_EQ(device().read_as<uint32_t>(ids, 1)[0], 1234u) << type_name(t);
    EXPECT_EQ(device().read_as<uint32_t>(toks, 6)[5], 1234u) << type_name(t);
    EXPECT_EQ(read(x, d), table.ref().row(1234)) << type_name(t);
  }
  EncodedMatrix a(GgmlType::Q6_K, 3000, 256, 16), b(GgmlType::Q8_0, 2000, 256, 17);
  Matrix parts = upload_matrix(device(), "test.embd", {&a.view, &b.view});
  gpu::Buffer lb = upload("test.logits", logits), ids = device().buffer("test.ids", 16), toks = device().buffer("test.tokens", 64);
  gpu::Buffer part = device().buffer("test.part", GraphBuilder::kArgmaxParts * 8), x = device().buffer("test.x", 1024);
  gpu::Buffer step = step_buffer(0, 1, 5);
  Graph g;
  GraphBuilder gb(k, g, step);
  EXPECT_FALSE(gb.argmax(ids, toks, part, lb, n, x, parts));
  gb.finish();
  run(g, 0, 1);
  EXPECT_EQ(device().read_as<uint32_t>(ids, 1)[0], 1234u);
}

// Random sampling: the draw always lies in the set top-k/top-p/min-p allow (computed here on the CPU
// from the untempered logits), its frequencies follow softmax(l / T) over that set, top-k 1 is argmax,
// the same seed repeats, and the repeat penalty pushes a recent token down. Every draw also leaves the
// drawn token's embedding row in x (next_embed.wgsl).
namespace {

struct SampleRig {
  gpu::Kernels k{device()};
  uint32_t n;
  gpu::Buffer logits, ids, toks, params, x;
  std::vector<float> l;
  EncodedMatrix table;
  Matrix m;
  SampleRig(const std::vector<float>& values, const SamplingParams& p)
      : n((uint32_t)values.size()), l(values), table(GgmlType::Q8_0, n, 32, 23) {
    m = upload_matrix(device(), "test.embd", {&table.view});
    x = device().buffer("test.x", 32 * 4);
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
    GraphBuilder gb(k, g1, step);
    EXPECT_TRUE(gb.sample(ids, toks, logits, params, n, x, m));
    gb.finish();
    run(g1, 0, 1);
    const uint32_t id = device().read_as<uint32_t>(ids, 1)[0];
    EXPECT_EQ(read(x, 32), table.ref().row(id < n ? id : 0));
    return id;
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
