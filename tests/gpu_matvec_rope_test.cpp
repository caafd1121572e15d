// A Llama QKV (adjacent rope pairs, no QK-norm or bias) at decode: add_rmsnorm, the QKV matvec,
// rope_kv. One-token passes past 512 positions (those of the split attention): the matvec stores q
// rotated and this token's key and value rows in the f16 caches itself (y_rope.wgsl) and rope_kv
// skips them; earlier one-token passes and three-token passes run the plain matvec and rope_kv.
// Twin: rmsnorm, quantize_q8, matmul per part, ref::rope_qkv, f16 rounding of the cache rows.
#include <gtest/gtest.h>

#include "gpu_kernels_rig.h"

using namespace ztvm;
using namespace ztvm::test;

namespace {

// one: a Q4_0 QKV after a plain add_rmsnorm. two: a Q4_K_M file's QKV of two types (q|k Q4_K, v Q6_K)
// after an o projection that stores the residual's sum (y_resid.wgsl), so that its matvec binds few
// enough buffers to take y_rope's too.
void check_rope_in_matvec(bool two) {
  gpu::Kernels k(device());
  const uint32_t d = 256, hd = 64, nh = two ? 24 : 16, nkv = 8, page = 16, ctx = 640, cols = 512;
  const uint32_t qkvw = (nh + 2 * nkv) * hd, qk_rows = (nh + nkv) * hd;
  EncodedMatrix w1(two ? GgmlType::Q4_K : GgmlType::Q4_0, two ? qk_rows : qkvw, d, 71), w2(GgmlType::Q6_K, nkv * hd, d, 75);
  EncodedMatrix wo(GgmlType::Q4_0, d, cols, 76);
  Matrix m = two ? upload_matrix(device(), "test.qkv_w", {&w1.view, &w2.view}) : upload_matrix(device(), "test.qkv_w", {&w1.view});
  Matrix mo = upload_matrix(device(), "test.wo", {&wo.view});
  ModelConfig cfg;
  cfg.rotary_dim = hd;
  cfg.rope_theta = 10000.f;
  const std::vector<float> table = rope_table(cfg, ctx);
  std::vector<uint32_t> pages(ctx / page);
  std::iota(pages.begin(), pages.end(), 0);
  std::reverse(pages.begin(), pages.end());
  const std::vector<float> aux(2 * hd + qkvw, 0.f);  // no norms or bias read (QK-norm off)
  for (auto [pos0, T] : {std::pair{37u, 1u}, std::pair{600u, 1u}, std::pair{600u, 3u}}) {
    const bool in_matvec = T == 1 && pos0 >= 512;
    std::vector<float> a = random_vec((size_t)T * d, 72), b = random_vec((size_t)T * d, 73), nw = random_vec(d, 74, 0.3f);
    const std::vector<float> att = random_vec((size_t)T * cols, 77);  // the o projection's input (two)
    gpu::Buffer ab = upload("test.a", a), bb = upload("test.b", b), nwb = upload("test.norm", nw), attb = upload("test.att", att);
    gpu::Buffer xb = device().buffer("test.xb", T * d * 4), sum = device().buffer("test.sum", T * d * 4);
    gpu::Buffer qkv = device().buffer("test.qkv", T * qkvw * 4), q = device().buffer("test.q", T * nh * hd * 4);
    gpu::Buffer kc = device().buffer("test.k_cache", ctx * nkv * hd * 2), vc = device().buffer("test.v_cache", ctx * nkv * hd * 2);
    gpu::Buffer xq = device().buffer("test.xq", 4 * cols), xs = device().buffer("test.xs", 4 * cols / 32 * 8);
    gpu::Buffer auxb = upload("test.aux", aux), rope = upload("test.rope", table), pageb = device().buffer("test.pages", pages.size() * 4);
    device().write(pageb, pages.data(), pages.size() * 4);
    gpu::Buffer step = step_buffer(pos0, T);
    Graph g;
    GraphBuilder gb(k, g, step);
    gb.use_q8_x(xq, xs, 4);
    if (two) gb.matmul(bb, attb, mo);  // b = Wo att: quantize_q8 and the o matvec
    gb.add_rmsnorm(xb, sum, ab, bb, nwb, d, 1e-5f);
    gb.matmul(qkv, xb, m);
    gb.rope_kv(q, kc, vc, qkv, auxb, rope, pageb, {hd, nh, nkv, hd, page, 32, false, false, false, 1e-6f}).finish();
    const size_t qkv_op = two ? 3 : 1;
    ASSERT_EQ(g.ops.size(), two ? 6u : 3u);
    EXPECT_EQ(role(g, qkv_op, "long_single"), two ? "matvec_q8_q4_k_q6_k_norm_rope" : "matvec_q8_q4_0_norm_rope");
    gpu::Recorder rec(device(), "test.rope_in_matvec");
    g.encode(rec, pos0, T);
    // one-token passes skip the add_rmsnorm (and the second part's dispatch); those past 512 positions
    // rope_kv too
    const uint32_t before = two ? 2 : 0;  // quantize_q8 and the o matvec
    EXPECT_EQ(rec.dispatches(), before + (T == 3 ? (two ? 4u : 3u) : in_matvec ? 1u : 2u)) << "T=" << T << " pos0=" << pos0;
    rec.submit();
    device().wait_idle();
    const std::vector<float> gq = read(q, (size_t)T * nh * hd);
    const std::vector<uint16_t> gk = device().read_as<uint16_t>(kc, ctx * nkv * hd), gv = device().read_as<uint16_t>(vc, ctx * nkv * hd);
    std::vector<float> want_q, want_kv, got_kv;
    for (uint32_t t = 0; t < T; t++) {
      std::vector<float> bt(&b[t * d], &b[(t + 1) * d]), s(d);
      if (two) bt = ref::matmul(wo.ref(), ref::quantize_q8(std::vector<float>(&att[t * cols], &att[(t + 1) * cols])));
      for (uint32_t i = 0; i < d; i++) s[i] = a[t * d + i] + bt[i];
      const std::vector<float> x8 = ref::quantize_q8(ref::rmsnorm(s, nw, d, 1e-5f));
      std::vector<float> row = ref::matmul(w1.ref(), x8);
      if (two) {
        const std::vector<float> rv = ref::matmul(w2.ref(), x8);
        row.insert(row.end(), rv.begin(), rv.end());
      }
      ref::rope_qkv(row.data(), aux, false, {hd, nh, nkv, hd, false, false, 1e-6f}, pos0 + t, cfg.rope_theta, {});
      ref::round_to_f16(&row[nh * hd], 2 * nkv * hd);
      want_q.insert(want_q.end(), row.begin(), row.begin() + nh * hd);
      want_kv.insert(want_kv.end(), row.begin() + nh * hd, row.end());
      const uint32_t p = pos0 + t;
      for (uint32_t i = 0; i < nkv * hd; i++) {  // the cache layouts of rope_kv.wgsl
        const uint32_t kvh = i / hd, e = i % hd;
        got_kv.push_back(f16_to_f32(gk[((((size_t)pages[p / page] * nkv + kvh) * (hd / 8) + e / 8) * page + p % page) * 8 + e % 8]));
      }
      for (uint32_t i = 0; i < nkv * hd; i++)
        got_kv.push_back(f16_to_f32(gv[((size_t)pages[p / page] * page + p % page) * nkv * hd + i]));
    }
    EXPECT_LT(nmse(gq, want_q), 1e-8) << "T=" << T << " pos0=" << pos0;
    EXPECT_LT(nmse(got_kv, want_kv), 1e-6) << "T=" << T << " pos0=" << pos0;  // a half can round the other way
  }
}

}  // namespace

TEST(Int8Matvec, QkvStoresRopedHeadsForOneToken) { check_rope_in_matvec(false); }
TEST(Int8Matvec, TwoTypeQkvStoresRopedHeadsAfterTheResidualSum) { check_rope_in_matvec(true); }
