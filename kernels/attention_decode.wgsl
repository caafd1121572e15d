//!include REDUCE
// One-token attention without split-K, for decode steps at short context: one 256-thread workgroup
// per query head takes every position, 256 at a time with an online softmax, and writes att (and, as
// attention_combine would, its int8 units) itself. The split kernel (attention.wgsl) needs a second
// dispatch to merge its splits; in a decode step's chain of dependent dispatches that merge cost
// ~4.5 us per layer on the H200 (bench/EXPERIMENTS.md), more than the positions themselves.
//
// Per block of 256 positions: thread lid scores position b + lid (its key read in HD / 8 loads of 8
// halves), the block's max and sum come from two-level reductions, and for softmax·V the threads are
// NG groups of HD / 8: thread (g, c) adds up the value chunk c (8 dims, one 16-byte load) of the
// positions g, g + NG, ..., BATCH loads in flight. The groups' sums meet in workgroup memory at the
// end. HD <= 128.
//
// With SPLITS (long contexts) a workgroup takes one query head's step.split positions and writes the
// split's unnormalised output, max and sum to `part` (bound where att is otherwise), as attention.wgsl
// does, for attention_combine; the host then sizes WG to the split (64 or 128, graph_attention.cpp).
//
// SG_SOFT (splits, subgroups of a fixed size that HD / 8 divides): no barrier in the block loop. Each
// subgroup keeps its own running max, sum and output over the positions its own lanes scored, its
// weights passed lane to lane by subgroupShuffle instead of through workgroup memory, so no subgroup
// waits for another's key loads; the subgroups' maxima and sums meet once, after the last block.
// H200, Qwen3-4B at 4,096 positions: +2.1% decode on Q4_0, +1.8% on Q4_K_M (bench/EXPERIMENTS.md).
//
// QIN says where the query comes from: q_in_plain (rope_kv.wgsl or the QKV matvec made it and appended
// this token's key and value), q_in_rope (without splits) or q_in_rope_split (with them): this kernel
// makes the heads from the raw qkv row, and rope_kv is skipped. REDUCE (reduce_wg or reduce_sg:
// subgroups, in the split kernel) is block_reduce.
//!include common
//!include PACK8 q8_pack8_none
//!include XOUT
//!include QIN

override HD: u32;
override NH: u32;
override NKV: u32;
override PAGE: u32;
override SCALE: f32;

override WG: u32 = 256u;
override SPLITS: bool = false;  // false: every position in one workgroup; true: splits of step.split
override SG_SOFT: bool = false;  // softmax·V per subgroup (above); only with reduce_sg.wgsl
const NEG: f32 = -1e30;  // finite "minus infinity": exp(NEG - NEG) stays defined
const BATCH = 8u;  // 16-byte value chunks each thread loads before any is used (H200: 8 beat 16)
override C: u32 = HD / 8u;   // 16-byte chunks (8 dims) per value row
override NG: u32 = WG / C;   // position groups in softmax·V (HD 96: 21 x 12 threads, the rest idle)

// QIN (q_in_plain or q_in_rope) declares bindings 1..3 (the query source, the caches) and any after 5.
@group(0) @binding(0) var<storage, read_write> att: array<f32>;   // [NH*HD] (one token); SPLITS: part
@group(0) @binding(4) var<storage, read> pages: array<u32>;
@group(0) @binding(5) var<uniform> step: Step;
const XQ_BINDING = 6u + QIN_BINDINGS;

var<workgroup> qv: array<vec4f, 32>;    // the query row, scaled (HD / 4)
var<workgroup> pw: array<f32, WG>;      // the block's weights
var<workgroup> osum: array<vec4f, 2u * WG>;  // [g][c][2]: each group's share of the output
var<workgroup> outv: array<f32, 128>;   // the head's output, for its int8 units (EMIT_Q8)
var<workgroup> sg_m: array<f32, 64>;    // SG_SOFT: each subgroup's max and sum after the last block
var<workgroup> sg_l: array<f32, 64>;

// Value chunk c (dims 8c..8c+7, as 8 halves) of position b + i for KV head kvh.
fn value_chunk(b: u32, i: u32, kvh: u32, c: u32) -> vec4u {
  let vb = ((pages[(b + i) / PAGE] * PAGE + (b + i) % PAGE) * NKV + kvh) * (HD / 8u);
  return fresh_value(b + i, c, v_cache[vb + c]);
}
fn halves8(v: vec4u) -> array<vec4f, 2> {
  return array<vec4f, 2>(vec4f(unpack2x16float(v.x), unpack2x16float(v.y)),
                         vec4f(unpack2x16float(v.z), unpack2x16float(v.w)));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32, sgi: SgIn) {
  reduce_init(sgi);
  let n_all = step.pos0 + 1u;  // the token sees positions [0, pos0]
  let span = select(n_all, step.split, SPLITS);  // positions per split
  let n_splits = (n_all + span - 1u) / span;
  let wg = flat_group(wid, nwg);
  if (wg >= NH * n_splits) { return; }  // uniform: the whole workgroup
  // Split-major: the workgroups of one split (every head, a KV head's query heads side by side) are
  // neighbours in launch order (H200 at 4k: +1.3% decode on Llama-3.2-1B, +1.8% on Qwen3-4B against
  // head-major, bench/EXPERIMENTS.md).
  let split = wg / NH;
  let h = wg % NH;
  let kvh = h / (NH / NKV);
  let start = split * span;  // 0 without splits
  let n = min(n_all, start + span);  // positions [start, n)
  q_prepare(h, kvh, step.pos0, lid, n == n_all);
  workgroupBarrier();
  let g = lid / C;
  let c = lid % C;
  var m = NEG;
  var l = 0.0;               // the workgroup's running sum (every thread holds it)
  var o0 = vec4f(0.0);       // dims 8c..8c+3 over group g's positions
  var o1 = vec4f(0.0);       // dims 8c+4..8c+7
  for (var b = start; b < n; b += WG) {
    let p = b + lid;
    let pc = min(p, n - 1u);  // past the positions: a valid key, its score dropped (no branch around the loads)
    let kb = (pages[pc / PAGE] * NKV + kvh) * (HD / 8u) * PAGE + pc % PAGE;
    var s0 = 0.0;
    var s1 = 0.0;
    for (var d = 0u; d < HD / 8u; d++) {
      let kk = k_cache[kb + d * PAGE];
      s0 += dot(qv[2u * d], vec4f(unpack2x16float(kk.x), unpack2x16float(kk.y)));
      s1 += dot(qv[2u * d + 1u], vec4f(unpack2x16float(kk.z), unpack2x16float(kk.w)));
    }
    let s = select(NEG, fresh_score(p, s0 + s1), p < n);
    if (SG_SOFT) {
      // The subgroup's sz positions from sb are gs groups of C lanes: lane (gi, c) adds chunk c of
      // positions sb + gi, sb + gi + gs, ... (C of them), each weighted by the e of the lane that scored it.
      let sz = sg_size();
      let sb = lid - sg_lane();
      let gs = sz / C;
      let gi = sg_lane() / C;
      var v: array<vec4u, BATCH>;  // loaded before the reductions, as below
      for (var j = 0u; j < BATCH; j++) { v[j] = value_chunk(b, min(sb + gi + j * gs, n - b - 1u), kvh, c); }
      let mx = max(m, sg_max(s));
      let alpha = exp(m - mx);
      m = mx;
      let e = select(0.0, exp(s - m), p < n);
      l = l * alpha + sg_add(e);
      o0 *= alpha;
      o1 *= alpha;
      for (var j0 = 0u; j0 < C; j0 += BATCH) {
        if (j0 > 0u) {
          for (var j = 0u; j < BATCH; j++) { v[j] = value_chunk(b, min(sb + gi + (j0 + j) * gs, n - b - 1u), kvh, c); }
        }
        for (var j = 0u; j < BATCH; j++) {
          let pj = select(0.0, sg_shuffle(e, min(gi + (j0 + j) * gs, sz - 1u)), j0 + j < C);  // e is 0 past n
          let hv = halves8(v[j]);
          o0 = fma(vec4f(pj), hv[0], o0);
          o1 = fma(vec4f(pj), hv[1], o1);
        }
      }
      continue;
    }
    // The first batch of this thread's values now: they do not depend on the weights, so their loads
    // overlap the two reductions below.
    let cnt = min(WG, n - b);
    var v: array<vec4u, BATCH>;
    if (g < NG) {
      for (var j = 0u; j < BATCH; j++) { v[j] = value_chunk(b, min(g + j * NG, cnt - 1u), kvh, c); }
    }
    let mx = max(m, block_reduce(lid, s, true));  // its first barrier: every thread is past the last block's pw
    let alpha = exp(m - mx);
    m = mx;
    let e = select(0.0, exp(s - m), p < n);
    pw[lid] = e;
    l = l * alpha + block_reduce(lid, e, false);  // its barriers also publish pw
    o0 *= alpha;
    o1 *= alpha;
    if (g < NG) {
      for (var i0 = g; i0 < cnt; i0 += NG * BATCH) {
        if (i0 != g) {  // later batches: all BATCH loads issued before any is used
          for (var j = 0u; j < BATCH; j++) { v[j] = value_chunk(b, min(i0 + j * NG, cnt - 1u), kvh, c); }
        }
        for (var j = 0u; j < BATCH; j++) {
          let i = i0 + j * NG;
          let pj = select(0.0, pw[min(i, cnt - 1u)], i < cnt);  // past the block: weighted 0
          let hv = halves8(v[j]);
          o0 = fma(vec4f(pj), hv[0], o0);
          o1 = fma(vec4f(pj), hv[1], o1);
        }
      }
    }
  }
  if (SG_SOFT) {  // the subgroups meet: every thread's output rescaled to the workgroup's max
    if (sg_lane() == 0u) {
      sg_m[lid / sg_size()] = m;
      sg_l[lid / sg_size()] = l;
    }
    workgroupBarrier();
    var mw = NEG;
    for (var k = 0u; k < WG / sg_size(); k++) { mw = max(mw, sg_m[k]); }
    var lw = 0.0;
    for (var k = 0u; k < WG / sg_size(); k++) { lw += sg_l[k] * exp(sg_m[k] - mw); }
    let sc = exp(m - mw);
    o0 *= sc;
    o1 *= sc;
    m = mw;
    l = lw;
  }
  osum[2u * lid] = o0;
  osum[2u * lid + 1u] = o1;
  workgroupBarrier();
  if (lid < C) {  // chunk lid of the head's output: the groups' sums
    var r0 = vec4f(0.0);
    var r1 = vec4f(0.0);
    for (var gg = 0u; gg < NG; gg++) {
      r0 += osum[2u * (gg * C + lid)];
      r1 += osum[2u * (gg * C + lid) + 1u];
    }
    if (SPLITS) {  // the split's unnormalised share for attention_combine: [NH][splits][HD + 2]
      let pb = (h * n_splits + split) * (HD + 2u);
      for (var k = 0u; k < 4u; k++) {
        att[pb + 8u * lid + k] = r0[k];
        att[pb + 8u * lid + 4u + k] = r1[k];
      }
      if (lid == 0u) {
        att[pb + HD] = m;
        att[pb + HD + 1u] = l;
      }
    } else {
      for (var k = 0u; k < 4u; k++) {
        att[h * HD + 8u * lid + k] = r0[k] / l;
        att[h * HD + 8u * lid + 4u + k] = r1[k] / l;
        outv[8u * lid + k] = r0[k] / l;
        outv[8u * lid + 4u + k] = r1[k] / l;
      }
    }
  }
  if (EMIT_Q8 && !SPLITS) {  // a matvec on quantized weights reads att next: this head's HD / 32 units
    workgroupBarrier();
    for (var k0 = 0u; k0 < HD / 4u && PACK8; k0 += WG) {  // 8 threads a unit (q8_pack8.wgsl)
      let k = min(k0 + lid, HD / 4u - 1u);
      let e = 4u * k;
      store_q8_vec4(h * HD / 32u, k, k0 + lid < HD / 4u, vec4f(outv[e], outv[e + 1u], outv[e + 2u], outv[e + 3u]));
    }
    for (var u = lid; u < HD / 32u && !PACK8; u += WG) {
      var v: array<vec4f, 8>;
      for (var i = 0u; i < 8u; i++) {
        let e = u * 32u + i * 4u;
        v[i] = vec4f(outv[e], outv[e + 1u], outv[e + 2u], outv[e + 3u]);
      }
      store_q8(h * HD / 32u + u, &v);
    }
  }
}
