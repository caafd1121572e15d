//!include REDUCE
// Merges attention's split partials: out = sum_s o_s e^(m_s - M) / sum_s l_s e^(m_s - M).
// One workgroup per (token, head), a thread a dim up to WG (64, or 128 on heads past 64 dims; more dims
// take turns). The splits' maxima and sums are read in parallel (thread s takes splits s, s + WG, ...)
// and reduced in workgroup memory; then each chunk of CHUNK splits gets its weights e^(m_s - M) / L
// computed once, and every thread adds up its dims over the chunk, loading BATCH splits at a time (one
// at a time, the loads chained: ~13 us per layer at 4k on the H200), the first batch before the
// reductions: a step of up to BATCH splits loads every value before its weights are known.
//!include common
//!include PACK8 q8_pack8_none
//!include XOUT

override HD: u32;
override NH: u32;

@group(0) @binding(0) var<storage, read_write> att: array<f32>;  // [T, NH*HD]
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<uniform> step: Step;
const XQ_BINDING = 3u;

var<workgroup> wts: array<f32, WG>;  // weights of the current chunk of splits
var<workgroup> outv: array<f32, 256>;  // the head's output, for its int8 units (EMIT_Q8)
// 24: a 4k decode step's 17 splits (of 256 positions) in one batch, so no load waits on a weight
// (H200: +1.1% decode on Llama-3.2-1B Q4_0 at 4,096 positions, +0.7% on Qwen3-4B, against 8).
const BATCH = 24u;
const CHUNK = 2u * BATCH;  // splits a round of weights: whole batches, one weight a thread (<= WG)
override WG: u32 = 64u;  // threads (block_reduce's), the host's choice
override DPT: u32 = (HD + WG - 1u) / WG;  // dims per thread (at most 4)

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32, sgi: SgIn) {
  reduce_init(sgi);
  let n_splits = (step.pos0 + step.n_tokens + step.split - 1u) / step.split;
  let g = flat_group(wid, nwg);
  let t = g / NH;
  let h = g % NH;
  if (t >= step.n_tokens) { return; }
  let base = (t * NH + h) * n_splits * (HD + 2u);
  // The first batch of values now: they do not depend on the weights, so their loads overlap the two
  // reductions below.
  var v0: array<vec4f, BATCH>;
  for (var i = 0u; i < BATCH; i++) {
    let pb = base + min(i, n_splits - 1u) * (HD + 2u);
    for (var j = 0u; j < DPT; j++) { v0[i][j] = part[pb + min(lid + j * WG, HD - 1u)]; }
  }
  // Split lid's max and sum from one load, kept for the total and the first chunk's weight (H200 at
  // 4,096 positions: decode +0.3..+0.6% against reading them again for each, bench/EXPERIMENTS.md).
  let sr = min(lid, n_splits - 1u);
  let m0 = part[base + sr * (HD + 2u) + HD];
  let l0 = part[base + sr * (HD + 2u) + HD + 1u];
  var mx = select(-1e30, m0, lid < n_splits);
  for (var s = lid + WG; s < n_splits; s += WG) { mx = max(mx, part[base + s * (HD + 2u) + HD]); }
  mx = block_reduce(lid, mx, true);
  var l = select(0.0, l0 * exp(m0 - mx), lid < n_splits);
  for (var s = lid + WG; s < n_splits; s += WG) {
    let pb = base + s * (HD + 2u);
    l += part[pb + HD + 1u] * exp(part[pb + HD] - mx);
  }
  let inv_l = 1.0 / block_reduce(lid, l, false);
  var acc = vec4f(0.0);  // dims lid, lid + WG, ... (those past HD stay 0)
  for (var c = 0u; c < n_splits; c += CHUNK) {
    let n = min(CHUNK, n_splits - c);
    var wt = 0.0;
    if (lid < n) {
      let mc = select(part[base + (c + lid) * (HD + 2u) + HD], m0, c == 0u);
      wt = exp(mc - mx) * inv_l;
    }
    wts[lid] = wt;  // 0 past n
    workgroupBarrier();
    // BATCH splits' values are loaded before any is used, so their latencies overlap.
    for (var s0 = 0u; s0 < n; s0 += BATCH) {
      var v = v0;
      if (c + s0 > 0u) {
        for (var i = 0u; i < BATCH; i++) {
          let pb = base + (c + min(s0 + i, n - 1u)) * (HD + 2u);  // past n: a valid split, weighted 0
          for (var j = 0u; j < DPT; j++) { v[i][j] = part[pb + min(lid + j * WG, HD - 1u)]; }
        }
      }
      for (var i = 0u; i < BATCH; i++) { acc += v[i] * wts[s0 + i]; }
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < 4u; j++) {
    let d = lid + j * WG;
    if (d < HD) { att[t * NH * HD + h * HD + d] = acc[j]; }
  }
  if (EMIT_Q8) {  // passes short enough for the matvec (GraphBuilder); this head's HD / 32 units
    for (var j = 0u; j < 4u; j++) {
      let d = lid + j * WG;
      if (d < HD) { outv[d] = acc[j]; }
    }
    workgroupBarrier();
    for (var k0 = 0u; k0 < HD / 4u && PACK8; k0 += WG) {  // 8 threads a unit (q8_pack8.wgsl)
      let k = min(k0 + lid, HD / 4u - 1u);
      let e = 4u * k;
      store_q8_vec4((t * NH * HD + h * HD) / 32u, k, k0 + lid < HD / 4u,
                    vec4f(outv[e], outv[e + 1u], outv[e + 2u], outv[e + 3u]));
    }
    for (var u = lid; u < HD / 32u && !PACK8; u += WG) {
      var v: array<vec4f, 8>;
      for (var i = 0u; i < 8u; i++) {
        let e = u * 32u + i * 4u;
        v[i] = vec4f(outv[e], outv[e + 1u], outv[e + 2u], outv[e + 3u]);
      }
      store_q8((t * NH * HD + h * HD) / 32u + u, &v);
    }
  }
}
