// Every kernel against its CPU twin (src/reference/ops.h) on random data, through the same
// GraphBuilder the forward pass uses. Runs on whatever adapter Dawn picks (lavapipe in CI).
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
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
    GraphBuilder(k, g, step).embed(x, idb, m).finish();
    run(g, 0, (uint32_t)ids.size());
    std::vector<float> want = ref::embed(table.ref(), ids);
    EXPECT_EQ(read(x, want.size()), want) << type_name(t);
  }
}

// A table in two parts (as when it outgrows one binding): each token's row comes from its part.
TEST(Kernels, EmbedFromATableInParts) {
  gpu::Kernels k(device());
  EncodedMatrix a(GgmlType::Q6_K, 30, 256, 16), b(GgmlType::Q8_0, 20, 256, 17);  // types differ: two parts
  Matrix m = upload_matrix(device(), "test.embd", {&a.view, &b.view});
  ASSERT_EQ(m.parts.size(), 2u);
  std::vector<int32_t> ids = {31, 0, 49, 29, 30};
  gpu::Buffer idb = device().buffer("test.ids", ids.size() * 4), x = device().buffer("test.x", ids.size() * 256 * 4);
  device().write(idb, ids.data(), ids.size() * 4);
  gpu::Buffer step = step_buffer(0, (uint32_t)ids.size());
  Graph g;
  GraphBuilder(k, g, step).embed(x, idb, m).finish();
  EXPECT_EQ(g.ops.size(), 2u);
  run(g, 0, (uint32_t)ids.size());
  std::vector<float> want;
  for (int32_t id : ids) {
    std::vector<float> row = id < 30 ? a.ref().row(id) : b.ref().row(id - 30);
    want.insert(want.end(), row.begin(), row.end());
  }
  EXPECT_EQ(read(x, want.size()), want);
}

// 64: more of add_rmsnorm's threads (32) than units; 300: a partial last unit; 2048: a thread per
// unit; 8260: more units than its 256 threads.
class NormTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(NormTest, RmsNormAndAddRmsNormMatchCpu) {
  gpu::Kernels k(device());
  const uint32_t d = GetParam(), T = 4;
  std::vector<float> a = random_vec(T * d, 7), b = random_vec(T * d, 8), w = random_vec(d, 9);
  gpu::Buffer ab = upload("test.a", a), bb = upload("test.b", b), wb = upload("test.w", w);
  gpu::Buffer y = device().buffer("test.y", T * d * 4), sum = device().buffer("test.sum", T * d * 4);
  gpu::Buffer y2 = device().buffer("test.y2", T * d * 4);
  gpu::Buffer step = step_buffer(0, T);
  Graph g;
  GraphBuilder gb(k, g, step);
  gb.rmsnorm(y, ab, wb, d, 1e-5f);
  gb.add_rmsnorm(y2, sum, ab, bb, wb, d, 1e-5f);
  gb.finish();
  run(g, 0, T);
  EXPECT_LT(nmse(read(y, T * d), ref::rmsnorm(a, w, d, 1e-5f)), 1e-12);
  std::vector<float> s(T * d);
  for (size_t i = 0; i < s.size(); i++) s[i] = a[i] + b[i];
  EXPECT_EQ(read(sum, T * d), s);
  EXPECT_LT(nmse(read(y2, T * d), ref::rmsnorm(s, w, d, 1e-5f)), 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Widths, NormTest, ::testing::Values(64u, 300u, 2048u, 8260u));

// RoPE + KV append + paged attention over a chunk at a non-zero position, with a shuffled page
// table, several splits, GQA, both RoPE styles, QK-norm and bias; each of the attention kernel's
// forms, and flash attention (no splits) on longer chunks.
// A workgroup per query head and split / per query heads of a KV head and tokens (blocked) / per 32 rows
// (flash) / per query head over every position, or per query head and split (decode, one token).
// FlashSplit: flash attention over splits (short passes deep in the context), merged by the combine.
enum class AttnForm { Heads, Blocked, Flash, FlashSplit, Decode, DecodeSplit };
struct AttnProblem {
  uint32_t pos0, T, hd, nh, nkv, rot, page, split;
  bool neox, qk_norm, bias;
  bool q8 = false;  // a matmul on Q8_0 weights reads att: its producer also stores int8 units (graph.h use_q8_x)
  bool rope_in_decode = false;  // unsplit decode: attention_decode makes the heads, rope_kv is skipped
  bool rope_in_flash = true;    // flash passes: attention_flash makes the queries, rope_kv the keys and values
  bool subgroups = true;  // block reductions through subgroups where the device has them (reduce_sg.wgsl)
};

// Runs the problem through GraphBuilder in `form` and checks q, the cache rows and att against the
// CPU (and with q8, the int8 units against ref::quantize_q8 of att).
static void check_attention(const AttnProblem& pr, AttnForm form, uint32_t flash_halves = 1) {
  gpu::Kernels k(device());
  const uint32_t pos0 = pr.pos0, T = pr.T, hd = pr.hd, nh = pr.nh, nkv = pr.nkv, page = pr.page, split = pr.split;
  const uint32_t ctx = (pos0 + T + 63) / 64 * 64, qkvw = (nh + 2 * nkv) * hd, kvw = nkv * hd;
  const float theta = 10000.f, eps = 1e-6f;
  ModelConfig cfg;
  cfg.rotary_dim = pr.rot;
  cfg.rope_theta = theta;
  ref::AttnShape rs{hd, nh, nkv, pr.rot, pr.neox, pr.qk_norm, eps};
  GraphBuilder::AttnShape gs{hd, nh, nkv, pr.rot, page, split, pr.neox, pr.qk_norm, pr.bias, eps};

  // Earlier positions come from the CPU; the GPU cache gets the same rows at their paged slots.
  std::vector<float> aux = random_vec(2 * hd + qkvw, 10, 0.3f);
  for (uint32_t i = 0; i < 2 * hd; i++) aux[i] += 1.f;
  const std::vector<float> raw = random_vec((size_t)(pos0 + T) * qkvw, 11);  // un-rotated projections
  std::vector<float> rows = raw;
  std::vector<float> keys, values;  // as the cache holds them: through f16
  for (uint32_t p = 0; p < pos0 + T; p++) {
    ref::rope_qkv(&rows[p * qkvw], aux, pr.bias, rs, p, theta, {});
    ref::round_to_f16(&rows[p * qkvw + nh * hd], 2 * kvw);
    keys.insert(keys.end(), &rows[p * qkvw + nh * hd], &rows[p * qkvw + (nh + nkv) * hd]);
    values.insert(values.end(), &rows[p * qkvw + (nh + nkv) * hd], &rows[(p + 1) * qkvw]);
  }
  std::vector<uint32_t> pages(ctx / page);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(12));
  // f16 caches: values in rows [page][position][kv head][dim]; keys dims-major within a page,
  // [page][kv head][dim / 8][position][dim % 8]. k_at: where dim i (kv head i / hd) of position p goes.
  std::vector<uint16_t> kc((size_t)ctx * kvw, 0), vc((size_t)ctx * kvw, 0);
  auto k_at = [&](uint32_t p, uint32_t i) {
    const uint32_t kvh = i / hd, e = i % hd;
    return ((((size_t)pages[p / page] * nkv + kvh) * (hd / 8) + e / 8) * page + p % page) * 8 + e % 8;
  };
  for (uint32_t p = 0; p < pos0; p++) {
    size_t slot = ((size_t)pages[p / page] * page + p % page) * kvw;
    for (uint32_t i = 0; i < kvw; i++) {
      kc[k_at(p, i)] = f32_to_f16(keys[p * kvw + i]);
      vc[slot + i] = f32_to_f16(values[p * kvw + i]);
    }
  }
  std::vector<float> qkv_in(raw.begin() + (size_t)pos0 * qkvw, raw.end());  // the chunk's raw rows
  std::vector<float> table = rope_table(cfg, ctx);
  gpu::Buffer qkv = upload("test.qkv", qkv_in), auxb = upload("test.aux", aux), rope = upload("test.rope", table);
  gpu::Buffer kcb = device().buffer("test.k_cache", kc.size() * 2), vcb = device().buffer("test.v_cache", vc.size() * 2);
  device().write(kcb, kc.data(), kc.size() * 2);
  device().write(vcb, vc.data(), vc.size() * 2);
  gpu::Buffer pageb = device().buffer("test.pages", pages.size() * 4);
  device().write(pageb, pages.data(), pages.size() * 4);
  gpu::Buffer q = device().buffer("test.q", T * nh * hd * 4), att = device().buffer("test.att", T * nh * hd * 4);
  gpu::Buffer part = device().buffer("test.part", (size_t)T * nh * ((ctx + split - 1) / split) * (hd + 2) * 4);
  gpu::Buffer xq = device().buffer("test.xq", T * nh * hd), xs = device().buffer("test.xs", T * nh * hd / 32 * 8);
  gpu::Buffer proj = device().buffer("test.proj", T * 32 * 4);
  EncodedMatrix wo(GgmlType::Q8_0, 32, nh * hd, 14);
  Matrix wom = upload_matrix(device(), "test.wo", {&wo.view});
  const bool flash_form = form == AttnForm::Flash || form == AttnForm::FlashSplit;
  gpu::Buffer step = step_buffer(pos0, T, 0, attention_split(split, pos0 + T, T, flash_form ? nh : 0));
  Graph g;
  GraphBuilder gb(k, g, step);
  if (pr.q8) gb.use_q8_x(xq, xs, T), gb.use_q8_gemm(true);  // passes past 64 tokens: the int8 GEMM reads att
  gb.use_rope_in_decode(pr.rope_in_decode);
  gb.use_rope_in_flash(pr.rope_in_flash);
  gb.use_subgroups(pr.subgroups);
  gb.force_flash_tile(64);  // where it fits (lavapipe: HD <= 64); HD 96 and 128 take 32
  gb.force_flash_halves(flash_halves);  // two: where it fits (lavapipe: HD <= 64)
  gb.rope_kv(q, kcb, vcb, qkv, auxb, rope, pageb, gs);
  gb.attention(att, part, q, kcb, vcb, pageb, gs);
  gb.attention_combine(att, part, gs);
  if (pr.q8) gb.matmul(proj, att, wom);  // att's int8 units: from the combine, or in flash passes the attention
  gb.finish();
  AttentionOp& d = g.op<AttentionOp>(1);
  RowOp &rope_op = g.op<RowOp>(0), &combine = g.op<RowOp>(2);
  ASSERT_TRUE(d.blocked);  // passes of several tokens take it by default
  if (T > 1) {
    ASSERT_LE(d.blocked_min, T);
  }
  if (flash_form) {
    ASSERT_TRUE(d.flash);
    ASSERT_TRUE(d.flash_split);
    ASSERT_LE(d.flash_min, T);
    const bool splits = flash_split_span(pos0 + T, T, nh) != 0;
    ASSERT_EQ(splits, form == AttnForm::FlashSplit);
    ASSERT_EQ(runs(g, 2, T, pos0) == "skip", !splits);  // unsplit flash attention writes att itself
    ASSERT_EQ(bool(d.flash_q8), pr.q8);
    // With rope_in_flash the rope_kv before it makes only the keys and values in those passes.
    ASSERT_EQ(bool(rope_op.long_main), pr.rope_in_flash);
    if (pr.rope_in_flash) { ASSERT_EQ(rope_op.long_min, d.flash_min); }
  } else {
    d.flash = {};
    combine.skip_min = 0;
    rope_op.long_main = {};  // the other kernels read rope_kv's q
  }
  // rope_kv: left to the unsplit decode kernel (q_in_rope.wgsl) when it makes the heads itself
  ASSERT_EQ(rope_op.skip_decode_max, pr.rope_in_decode ? d.decode_max : 0u);
  if (form == AttnForm::Decode) {  // whatever the position (the graph takes it up to kAttnDecodeMax)
    ASSERT_EQ(T, 1u);
    ASSERT_TRUE(d.decode);
    ASSERT_EQ(bool(d.decode_q8), pr.q8);
    ASSERT_EQ(combine.skip_decode_max, d.decode_max);  // it writes att itself
    d.decode_max = combine.skip_decode_max = UINT32_MAX;
    if (pr.rope_in_decode) rope_op.skip_decode_max = UINT32_MAX;
  } else {
    d.decode = {};
    combine.skip_decode_max = 0;
    rope_op.skip_decode_max = 0;  // the splits read the heads rope_kv made
  }
  if (form == AttnForm::DecodeSplit) {  // the same kernel over splits, merged by the combine
    ASSERT_EQ(T, 1u);
    ASSERT_TRUE(d.decode_split);
    // With rope_in_decode the splits make the heads past the unsplit kernel's positions (q_in_rope_split.wgsl)
    ASSERT_EQ(rope_op.skip_long, pr.rope_in_decode);
    if (pr.rope_in_decode) { ASSERT_EQ(rope_op.long_after, d.decode_max); }
  } else {
    d.decode_split = {};
  }
  if (form != AttnForm::Blocked) d.blocked = {};
  const std::vector<float> q_poison((size_t)T * nh * hd, 5.f);
  device().write(q, q_poison.data(), q_poison.size() * 4);
  const uint32_t only_min = d.flash_q8_only_min;
  d.flash_q8_only_min = UINT32_MAX;  // first with the f32 att, checked below; the units alone at the end
  run(g, pos0, T);

  std::vector<float> want_q, want_att;
  for (uint32_t t = 0; t < T; t++) {
    const float* row = &rows[(pos0 + t) * qkvw];
    want_q.insert(want_q.end(), row, row + nh * hd);
    std::vector<float> o = ref::attention(row, keys, values, pos0 + t, rs);
    want_att.insert(want_att.end(), o.begin(), o.end());
  }
  if (flash_form && pr.rope_in_flash) {  // q is made in the workgroup: the q buffer stays untouched
    EXPECT_EQ(read(q, want_q.size()), q_poison);
  } else if (form == AttnForm::DecodeSplit && pr.rope_in_decode && pos0 + 1 > rope_op.long_after) {
    EXPECT_EQ(read(q, want_q.size()), q_poison);  // the splits made the heads: rope_kv was skipped
  } else if (!pr.rope_in_decode || form != AttnForm::Decode) {  // else q stays in the workgroup
    EXPECT_LT(nmse(read(q, want_q.size()), want_q), 1e-11);
  }
  const std::vector<uint16_t> kc_gpu = device().read_as<uint16_t>(kcb, kc.size());
  const std::vector<uint16_t> vc_gpu = device().read_as<uint16_t>(vcb, vc.size());
  for (uint32_t t = 0; t < T; t++) {
    uint32_t p = pos0 + t;
    size_t slot = ((size_t)pages[p / page] * page + p % page) * kvw;
    std::vector<float> gk(kvw), gv(kvw), wk(&keys[p * kvw], &keys[(p + 1) * kvw]);
    std::vector<float> wv(&values[p * kvw], &values[(p + 1) * kvw]);
    for (uint32_t i = 0; i < kvw; i++) gk[i] = f16_to_f32(kc_gpu[k_at(p, i)]), gv[i] = f16_to_f32(vc_gpu[slot + i]);
    EXPECT_LT(nmse(gk, wk), 1e-7) << "key at " << p;  // rope may round a half the other way
    EXPECT_EQ(gv, wv) << "value at " << p;
  }
  const std::vector<float> got = read(att, want_att.size());
  EXPECT_LT(nmse(got, want_att), 1e-10);
  for (uint32_t t = 0; t < T; t++) {  // every token, not just on average
    std::vector<float> a(&got[t * nh * hd], &got[(t + 1) * nh * hd]), w(&want_att[t * nh * hd], &want_att[(t + 1) * nh * hd]);
    EXPECT_LT(nmse(a, w), 1e-9) << "token " << t;
  }
  if (!pr.q8) return;
  // The units as x_q8.wgsl stores them: 32 int8 per unit in xq, (d, sum of q) per unit in xs.
  const std::vector<int8_t> qs = device().read_as<int8_t>(xq, want_att.size());
  const std::vector<float> ds = read(xs, want_att.size() / 32 * 2);
  std::vector<float> deq(want_att.size());
  for (size_t u = 0; u < want_att.size() / 32; u++) {
    int sum = 0;
    for (size_t i = 0; i < 32; i++) deq[u * 32 + i] = ds[2 * u] * qs[u * 32 + i], sum += qs[u * 32 + i];
    ASSERT_EQ(ds[2 * u + 1], (float)sum) << "unit " << u;
  }
  // Against the CPU's int8 form of the GPU's own att: every value within one int8 step, and only a
  // few a step off (a GPU may round a value at x.5 after its scale the other way: the H200 does).
  const std::vector<float> cpu_q = ref::quantize_q8(got);
  size_t far = 0;
  for (size_t i = 0; i < deq.size(); i++) far += std::fabs(deq[i] - cpu_q[i]) > std::fabs(ds[2 * (i / 32)]) * 1.001f;
  EXPECT_EQ(far, 0u) << "int8 values more than one step from the CPU's";
  EXPECT_LT(nmse(deq, cpu_q), 1e-8);
  EXPECT_LT(nmse(deq, want_att), 1e-4);  // int8 rounding
  // Flash passes that only the int8 GEMM reads (past 64 tokens) store the units alone: the same units,
  // att left as it was.
  if (!flash_form || form == AttnForm::FlashSplit || T < 65) return;  // (shorter: the matvec, no int8 GEMM)
  ASSERT_TRUE(d.flash_q8_only);
  ASSERT_EQ(only_min, 65u);
  d.flash_q8_only_min = only_min;
  const std::vector<float> poison(want_att.size(), 7.f);
  device().write(att, poison.data(), poison.size() * 4);
  device().write(xq, std::vector<uint8_t>(want_att.size(), 0).data(), want_att.size());
  run(g, pos0, T);
  EXPECT_EQ(device().read_as<int8_t>(xq, want_att.size()), qs);
  EXPECT_EQ(read(xs, want_att.size() / 32 * 2), ds);
  EXPECT_EQ(read(att, want_att.size()), poison);
}

struct AttnCase {
  bool neox, qk_norm, bias;
  uint32_t rot;
  AttnForm form = AttnForm::Heads;
  uint32_t pos0 = 37;  // 1100: 69 splits, more than attention_combine's chunk of 48
  uint32_t nkv = 2;    // 8: one KV head per query head (blocks of 8 tokens)
};
class AttentionTest : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionTest, MatchesCpu) {
  const AttnCase ac = GetParam();
  check_attention({ac.pos0, 7, 32, 8, ac.nkv, ac.rot, 4, 16, ac.neox, ac.qk_norm, ac.bias}, ac.form);
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionTest,
                         ::testing::Values(AttnCase{false, false, false, 32}, AttnCase{true, false, false, 32},
                                           AttnCase{true, true, false, 32}, AttnCase{true, false, true, 16},
                                           AttnCase{false, false, true, 8}, AttnCase{false, false, false, 32, AttnForm::Blocked},
                                           AttnCase{true, true, true, 16, AttnForm::Blocked},
                                           AttnCase{false, false, false, 32, AttnForm::Heads, 1100},
                                           AttnCase{true, false, false, 32, AttnForm::Blocked, 1100, 4},
                                           AttnCase{true, true, false, 32, AttnForm::Blocked},
                                           AttnCase{false, false, true, 16, AttnForm::Blocked, 1100},
                                           AttnCase{true, false, false, 32, AttnForm::Blocked, 13, 8}),
                         [](const auto& info) {
                           const AttnCase& c = info.param;
                           return std::string(c.neox ? "neox" : "normal") + (c.qk_norm ? "_qknorm" : "") +
                                  (c.bias ? "_bias" : "") + "_rot" + std::to_string(c.rot) +
                                  (c.form == AttnForm::Blocked ? "_blocked" : "") +
                                  (c.pos0 > 64 ? "_long" : "") + (c.nkv == 8 ? "_mha" : "");
                         });

// Flash attention (passes of 2+ tokens, no splits): token counts that are not a multiple of a tile's
// 32 / G tokens, positions from 0 and past the chunk, head sizes 32 to 128, G = 1..8 query heads per
// KV head (nkv = 2), with and without the int8 units of att.
struct FlashCase {
  uint32_t T, pos0, hd, g;
  bool neox, q8;
  AttnProblem problem() const {
    return {pos0, T, hd, 2 * g, 2, neox ? hd : hd / 2, 16, 32, neox, neox, !neox, q8};
  }
};
static std::string flash_case_name(const ::testing::TestParamInfo<FlashCase>& info) {
  const FlashCase& c = info.param;
  return "T" + std::to_string(c.T) + "_pos" + std::to_string(c.pos0) + "_hd" + std::to_string(c.hd) + "_g" +
         std::to_string(c.g) + (c.neox ? "_neox" : "_normal") + (c.q8 ? "_q8" : "");
}
class FlashAttentionTest : public ::testing::TestWithParam<FlashCase> {};

TEST_P(FlashAttentionTest, MatchesCpu) { check_attention(GetParam().problem(), AttnForm::Flash); }
// The same with two halves of 4 warps (HALVES 2), where the device's workgroup memory holds them.
static void check_flash_halves(const FlashCase& c, AttnForm form) {
  if (GraphBuilder::flash_bytes(c.hd, 32, 2) > device().limits().maxComputeWorkgroupStorageSize)
    GTEST_SKIP() << "two halves at " << c.hd << " dims need more workgroup memory than this device has";
  check_attention(c.problem(), form, 2);
}
TEST_P(FlashAttentionTest, TwoHalvesMatchCpu) { check_flash_halves(GetParam(), AttnForm::Flash); }

// `make test` runs Shapes: every head size, G, RoPE style and int8 choice at least once. Sweep, the
// other combinations, runs in `make test-full` (on a fresh machine each case costs lavapipe seconds of
// pipeline compiles).
INSTANTIATE_TEST_SUITE_P(Shapes, FlashAttentionTest,
                         ::testing::Values(FlashCase{70, 0, 64, 1, false, true}, FlashCase{70, 300, 128, 4, true, false},
                                           FlashCase{64, 0, 128, 8, false, true}, FlashCase{70, 300, 96, 2, true, true},
                                           FlashCase{70, 37, 32, 4, false, true}, FlashCase{9, 37, 128, 4, true, true}),
                         flash_case_name);
INSTANTIATE_TEST_SUITE_P(Sweep, FlashAttentionTest,
                         ::testing::Values(FlashCase{130, 37, 128, 1, true, true}, FlashCase{130, 300, 64, 2, true, true},
                                           FlashCase{70, 37, 128, 2, false, true}, FlashCase{130, 0, 64, 4, false, true},
                                           FlashCase{70, 37, 128, 8, true, true}, FlashCase{130, 300, 64, 8, false, false}),
                         flash_case_name);

// Flash attention over splits: passes of 2..128 tokens that end at 2,048+ positions, up to 8 splits of
// whole 64-position steps; G = 1..8, head sizes 64..128, one case whose last split holds a single
// position that only the last of its 40 tokens sees (its other rows store max "minus infinity").
// Devices with fewer than 10 storage bindings a stage: rope_kv makes the queries and flash attention
// reads them (q_flash_plain.wgsl).
TEST(FlashAttention, QueriesFromRopeKvMatchCpu) {
  for (const FlashCase& c : {FlashCase{70, 37, 128, 2, false, true}, FlashCase{130, 300, 64, 4, true, true}}) {
    AttnProblem pr = c.problem();
    pr.rope_in_flash = false;
    check_attention(pr, AttnForm::Flash);
  }
}

class FlashSplitTest : public ::testing::TestWithParam<FlashCase> {};

TEST_P(FlashSplitTest, MatchesCpu) { check_attention(GetParam().problem(), AttnForm::FlashSplit); }
TEST_P(FlashSplitTest, TwoHalvesMatchCpu) { check_flash_halves(GetParam(), AttnForm::FlashSplit); }

INSTANTIATE_TEST_SUITE_P(Shapes, FlashSplitTest,
                         ::testing::Values(FlashCase{40, 2201, 128, 4, true, true}, FlashCase{100, 2000, 64, 4, false, true}),
                         flash_case_name);
INSTANTIATE_TEST_SUITE_P(Sweep, FlashSplitTest,
                         ::testing::Values(FlashCase{2, 2046, 64, 1, false, true}, FlashCase{64, 2500, 128, 8, false, false},
                                           FlashCase{9, 3000, 96, 2, true, true}),
                         flash_case_name);

TEST(FlashSplitSpan, WholeStepsUpToEightSplits) {
  EXPECT_EQ(flash_split_span(2047, 35, 32), 0u);    // too few positions
  EXPECT_EQ(flash_split_span(4096, 1, 32), 0u);     // decode has its own splits
  EXPECT_EQ(flash_split_span(4096, 129, 32), 0u);   // longer passes never
  EXPECT_EQ(flash_split_span(4096, 128, 32), 512u); // 128 workgroups of 32 heads: 8 splits
  EXPECT_EQ(flash_split_span(4096, 128, 80), 0u);   // 320 workgroups fill the GPU without
  EXPECT_EQ(flash_split_span(2048, 2, 32), 256u);   // 8 splits
  EXPECT_EQ(flash_split_span(2241, 40, 32), 320u);  // 7 splits and one position
  EXPECT_EQ(flash_split_span(4131, 35, 32), 576u);  // 8 splits, the last shorter
  EXPECT_EQ(attention_split(128, 4131, 35, 32), 576u);
  EXPECT_EQ(attention_split(128, 4131, 35, 0), 128u);
}

// One-token passes that would take more than 24 splits take splits twice as long; longer passes never.
TEST(AttentionSplit, WideOnlyForLongOneTokenPasses) {
  EXPECT_EQ(attention_split(128, 600, 1), 128u);
  EXPECT_EQ(attention_split(128, 3072, 1), 128u);   // 24 splits
  EXPECT_EQ(attention_split(128, 3073, 1), 256u);   // 25
  EXPECT_EQ(attention_split(128, 4096, 7), 128u);   // a pass of 7 tokens
  EXPECT_EQ(attention_split(32, 700, 1), 32u);      // 22 splits
  EXPECT_EQ(attention_split(32, 800, 1), 64u);      // 25
}

// CTest runs the subgroup kernels' cases again with lavapipe's 512-bit vectors (gpu_kernels_sg16 and
// gpu_matvec_q8_sg16 in CMakeLists.txt), where subgroups hold 16 invocations instead of 8: this checks
// that the device really has that size, so those runs do not pass at the default size unnoticed.
TEST(Subgroups, SizeIsTheOneAsked) {
  const char* want = std::getenv("ZTVM_EXPECT_SUBGROUP");
  if (!want) GTEST_SKIP() << "only in the runs that ask for a subgroup size (ZTVM_EXPECT_SUBGROUP)";
  EXPECT_EQ(device().info().subgroup_min, (uint32_t)std::atoi(want));
  EXPECT_EQ(device().info().subgroup_max, (uint32_t)std::atoi(want));
}

// One-token attention without splits (attention_decode.wgsl): positions within one block of 256 and
// across several, head sizes 32 to 128 (96: the value words do not fill the workgroup), G = 1..8.
struct DecodeCase {
  uint32_t pos0, hd, g;
  bool neox, q8;
  bool split = false;  // over splits of 32 positions and attention_combine
  bool rope = false;   // the heads made in attention_decode (q_in_rope.wgsl), no rope_kv
  bool subgroups = true;  // false: the split kernel and the combine reduce in workgroup memory (reduce_wg)
  uint32_t span = 32;     // positions a split (128: the production kernel's 128 threads)
};
class DecodeAttentionTest : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeAttentionTest, MatchesCpu) {
  const DecodeCase c = GetParam();
  AttnProblem pr{c.pos0, 1, c.hd, 2 * c.g, 2, c.neox ? c.hd : c.hd / 2, 16, c.span, c.neox, c.neox, !c.neox, c.q8, c.rope};
  pr.subgroups = c.subgroups;  // by name: the field after rope_in_decode is rope_in_flash
  check_attention(pr, c.split ? AttnForm::DecodeSplit : AttnForm::Decode);
}

static std::string decode_case_name(const ::testing::TestParamInfo<DecodeCase>& info) {
  const DecodeCase& c = info.param;
  return "pos" + std::to_string(c.pos0) + "_hd" + std::to_string(c.hd) + "_g" + std::to_string(c.g) +
         (c.neox ? "_neox" : "_normal") + (c.q8 ? "_q8" : "") + (c.split ? "_split" : "") + (c.rope ? "_rope" : "") +
         (c.subgroups ? "" : "_nosg") + (c.span != 32 ? "_span" + std::to_string(c.span) : "");
}
INSTANTIATE_TEST_SUITE_P(Shapes, DecodeAttentionTest,
                         ::testing::Values(DecodeCase{0, 64, 1, false, true}, DecodeCase{700, 128, 8, false, true},
                                           DecodeCase{300, 96, 2, true, true}, DecodeCase{100, 32, 4, true, false},
                                           DecodeCase{300, 128, 4, true, true, true}, DecodeCase{700, 96, 1, false, false, true},
                                           DecodeCase{2100, 64, 2, false, true, true},  // 66 splits of 32: 33 of 64 (attention_split)
                                           DecodeCase{37, 128, 4, true, true, false, true}, DecodeCase{300, 128, 4, true, true, true, true},
                                           DecodeCase{1100, 64, 2, false, true, true, true, true, 128},
                                           DecodeCase{1100, 128, 4, true, true, true, true, true, 256},
                                           DecodeCase{2100, 64, 2, false, true, true, false, false}),
                         decode_case_name);
INSTANTIATE_TEST_SUITE_P(Sweep, DecodeAttentionTest,
                         ::testing::Values(DecodeCase{37, 128, 4, true, true}, DecodeCase{255, 64, 2, false, false},
                                           DecodeCase{256, 128, 1, true, true}, DecodeCase{0, 64, 2, false, true, true},
                                           DecodeCase{0, 64, 1, false, true, false, true}, DecodeCase{300, 96, 2, true, false, false, true},
                                           DecodeCase{700, 128, 8, false, true, false, true}, DecodeCase{0, 64, 2, false, true, true, true},
                                           DecodeCase{700, 96, 1, false, false, true, true},
                                           DecodeCase{700, 128, 4, true, true, true, true, true, 128},
                                           DecodeCase{700, 128, 8, false, true, true, false, false}),
                         decode_case_name);

// The whole forward pass with flash attention: the synth "tiny" llama widened to 8 heads x 64 over 2
// KV heads (G = 4), 134 ids prefilled in chunks of 128 and 6 (both flash, the combine skipped), against
// the CPU reference. F16: with this random model's Q8_0 weights even one-token
// passes differ from the int8 CPU twin by ~1e-4 (int8 roundings flip); FlashAttentionTest checks
// the int8 units of att.
// Flash attention's KV tile: 64 positions on heads of 128+ dims where the workgroup memory holds them.
// The shape tests above force 64 where it fits, so lavapipe (32 KB) runs 64 at HD 32 and 64, and 32 at
// HD 96 and 128.
TEST(Kernels, FlashTileFitsWorkgroupMemory) {
  EXPECT_EQ(GraphBuilder::flash_tile(64, 49152), 32u);
  EXPECT_EQ(GraphBuilder::flash_tile(128, 32768), 32u);
  EXPECT_EQ(GraphBuilder::flash_tile(128, 49152), 64u);  // the H200
  EXPECT_LE(GraphBuilder::flash_bytes(64, 64), 32768u);
  EXPECT_GT(GraphBuilder::flash_bytes(96, 64), 32768u);
  EXPECT_EQ(GraphBuilder::flash_halves(128, 49152), 2u);  // the H200: 44.5 KB
  EXPECT_EQ(GraphBuilder::flash_halves(128, 32768), 1u);  // lavapipe
  EXPECT_EQ(GraphBuilder::flash_halves(64, 49152), 1u);   // two workgroups of one half fit there already
  EXPECT_LE(GraphBuilder::flash_bytes(64, 32, 2), 32768u);  // so lavapipe's tests run two halves at 64 dims
}

TEST(Kernels, FlashForwardMatchesCpuReference) {
  ModelConfig c = synth_shape("tiny");
  c.hidden_size = 512, c.head_dim = c.rotary_dim = 64, c.num_key_value_heads = 2;
  const std::string path = std::filesystem::temp_directory_path() / ("ztvm_flash_" + std::to_string(::getpid()) + ".gguf");
  synth_model(c, QuantMix::F16, nullptr, path);
  auto model = open_model(path);
  std::filesystem::remove(path);
  Forward fwd(device(), *model, 256, 128);
  ASSERT_EQ(fwd.max_chunk(), 128u);
  size_t flash = 0, skipped = 0;
  const Graph& g = fwd.graph(Head::AllLogits);
  for (size_t i = 0; i < g.ops.size(); i++) {
    const AttentionOp* a = g.find<AttentionOp>(i);
    flash += a && a->flash && a->flash_min <= 6;
    skipped += runs(g, i, 128) == "skip" && runs(g, i, 6) == "skip";
  }
  EXPECT_EQ(flash, 2u) << "both layers' attention";
  EXPECT_EQ(skipped, 2u) << "both layers' attention_combine";
  expect_logits_match_cpu(fwd, *model, 134);
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

// Errors Dawn reports through an error scope, not the compiler's diagnostics: an override without a
// value fails at pipeline creation, a bind group without one of the kernel's buffers at binding.
TEST(Kernels, ValidationErrorsNameTheKernelAndTheBindGroup) {
  const std::string wgsl =
      "override N: u32;\n@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n"
      "@group(0) @binding(1) var<storage, read> x: array<u32>;\n"
      "@compute @workgroup_size(1) fn main() { y[0] = x[0] + N; }";
  try {
    device().pipeline("kernel_without_n", wgsl);
    FAIL() << "expected a GpuError";
  } catch (const gpu::GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel_without_n"), std::string::npos) << e.what();
  }
  gpu::Pipeline p = device().pipeline("kernel_with_n", wgsl, {{"N", 3}});
  gpu::Buffer y = device().buffer("test.y", 16);
  try {
    device().bind(p, {y}, "bind_without_x");
    FAIL() << "expected a GpuError";
  } catch (const gpu::GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("bind_without_x"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kernel_with_n"), std::string::npos) << e.what();
  }
  gpu::Buffer x = device().buffer("test.x", 16);
  EXPECT_NO_THROW(device().bind(p, {y, x}, "bind_with_x"));
}
