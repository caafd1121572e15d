// Flash attention for long passes (prefill): no split-K and no combine. A workgroup owns a tile of
// 32 query rows, the G query heads of one KV head x 32 / G consecutive tokens (row r: head h0 + r % G
// of token t0 + r / G), walks the positions its rows see (0 .. its last token's) 32 at a time with an
// online softmax (running row max m and sum l), and writes the normalised rows to att, and with
// x_out_q8 also as int8 units for gemm_q8. Token t sees positions [0, pos0 + t]. HD % 32 == 0, <= 128.
// SPLITS: short passes deep in the context (flash_split_span in graph.h) have too few tiles to fill
// the GPU, so each tile's positions are cut into splits of step.split, a workgroup per tile and
// split, and each writes its rows' unnormalised outputs, maxima and sums to part for
// attention_combine.wgsl, in its layout and its units (natural log).
//
// 128 threads; thread (rg, cg), one of 8 row groups and 16 column groups (main pairs the lanes),
// owns the rows rg + 8i (i < 4): in the scores
// S = Q K^T the positions cg + 16k (k < TILE / 16) of the tile, in O = P V the dims
// [cg HD/16, (cg + 1) HD/16). TILE is 64 positions on 128-dim heads where workgroup memory holds it
// (GraphBuilder::flash_tile), so a step's four barriers serve twice the positions, else 32. At either
// size the H200 holds one workgroup per SM (about 54 KB an SM under Vulkan, bench/EXPERIMENTS.md).
// Every workgroup-memory load feeds 16-32 FMAs (the blocked kernel fed 1-2), and the 8 row groups in
// a warp read 8 neighbouring rows or one 128-byte line, so the loads take one pass each.
// QIN says where the queries come from: q_flash_plain (rope_kv.wgsl made them) or q_flash_rope (this
// kernel makes them from the raw qkv rows; rope_kv then makes only the keys and values).
//!include common
//!include XOUT
//!include QIN

override HD: u32;
override NH: u32;
override NKV: u32;
override PAGE: u32;
override G: u32;      // query heads per tile: NH / NKV, dividing 32
override SCALE: f32;  // 1 / sqrt(HD)

@group(0) @binding(0) var<storage, read_write> att: array<vec4f>;  // [T, NH*HD]
@group(0) @binding(2) var<storage, read> k_cache: array<vec4u>;    // [pages][NKV][HD / 8][PAGE] x 8 halves
@group(0) @binding(3) var<storage, read> v_cache: array<vec4u>;    // [pages][PAGE][NKV] rows of HD / 8 x 8 halves
@group(0) @binding(4) var<storage, read> pages: array<u32>;
@group(0) @binding(5) var<uniform> step: Step;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;  // SPLITS: [T][NH][split][HD + 2]
const XQ_BINDING = 7u + QIN_BINDINGS;  // QIN declares binding 1 (the queries' source) and any after 6
override SPLITS: bool = false;

const NEG: f32 = -1e30;  // finite "minus infinity": exp2(NEG - m) is 0, exp2(NEG - NEG) stays defined
const MASKED: f32 = -2e30;  // a masked score: under NEG, so its weight exp2(MASKED - m) is 0 even while m is NEG
const LOG2E: f32 = 1.4426950408889634;
const ROWS = 32u;        // query rows per workgroup
override TILE: u32 = 32u;  // KV positions per step and half: 32 or 64
override PPT: u32 = TILE / 16u;  // positions per thread in the scores
// HALVES 2: 256 threads, two sets of 4 warps; a step is 2 TILE positions, each half its own TILE with
// its own running max, sum and outputs, merged at the end. One workgroup per SM either way on the
// H200 (bench/EXPERIMENTS.md), so this doubles the warps that hide each other's latencies.
override HALVES: u32 = 1u;
override F32_OUT: bool = true;  // false: only the int8 units of att (EMIT_Q8; its readers take those)
override WG: u32 = 128u * HALVES;
override STEP: u32 = TILE * HALVES;
override TQ: u32 = ROWS / G;  // tokens per workgroup
override HD4: u32 = HD / 4u;
override HD8: u32 = HD / 8u;
override QST: u32 = HD / 4u + 1u;  // vec4s per row of qt: one of padding, so neighbouring rows start in other banks
override NL: u32 = TILE * HD / 1024u;  // vec4u each thread loads per step of keys (and of values): STEP x HD / 8 / WG
override W: u32 = HD / 32u;        // f16 pairs (words) of a value row each thread owns: HD / 16 dims
override QT_LEN: u32 = ROWS * QST;
override KV_LEN: u32 = STEP * HD / 8u;
override PT_LEN: u32 = STEP * 8u;
override RED_LEN: u32 = 128u * HALVES;

// 16.5 + 8 + 4 + 2 KB at HD 128 and TILE 32, within lavapipe's 32 KB; 42.5 KB with TILE 64; 44.5 KB in
// two halves of 32 positions (kv, pt and red hold both halves').
var<workgroup> qt: array<vec4f, QT_LEN>;  // [32 rows][QST]: queries x SCALE x log2(e), f32; at the end the output
var<workgroup> kv: array<vec4u, KV_LEN>;  // keys [HD / 8][STEP positions], then values [STEP positions][HD / 8]
var<workgroup> pt: array<vec4f, PT_LEN>;  // [STEP positions][8 row groups]: the weights of rows rg + 8i
var<workgroup> red: array<vec4f, RED_LEN>;  // [half][16 column groups][8 row groups]: partial row maxima, then sums

// This thread's share of a step's keys (positions b..b+STEP-1, past `end` the last valid one, weighted
// 0): vec4u i = lid + WG n is dims [8 (i / STEP), +8) of position b + i % STEP, as kv holds keys.
fn load_keys(b: u32, end: u32, kvh: u32, lid: u32) -> array<vec4u, 8> {
  var r: array<vec4u, 8>;
  for (var n = 0u; n < NL; n++) {
    let i = lid + n * WG;
    let p = min(b + i % STEP, end - 1u);
    r[n] = k_cache[((pages[p / PAGE] * NKV + kvh) * HD8 + i / STEP) * PAGE + p % PAGE];
  }
  return r;
}

// And of its values: vec4u i is dims [8 (i % (HD / 8)), +8) of position b + i / (HD / 8).
fn load_values(b: u32, end: u32, kvh: u32, lid: u32) -> array<vec4u, 8> {
  var r: array<vec4u, 8>;
  for (var n = 0u; n < NL; n++) {
    let i = lid + n * WG;
    let p = min(b + i / HD8, end - 1u);
    r[n] = v_cache[((pages[p / PAGE] * PAGE + p % PAGE) * NKV + kvh) * HD8 + i % HD8];
  }
  return r;
}

fn halves(w: u32, x: u32) -> vec4f {
  return vec4f(unpack2x16float(w), unpack2x16float(x));
}

// acc + qa.ka + qb.kb as a chain of 8 FMAs (dot() + dot() + acc takes 10 instructions).
fn dot8(acc: f32, qa: vec4f, qb: vec4f, ka: vec4f, kb: vec4f) -> f32 {
  var r = acc;
  for (var c = 0u; c < 4u; c++) { r = fma(qa[c], ka[c], r); }
  for (var c = 0u; c < 4u; c++) { r = fma(qb[c], kb[c], r); }
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let T = step.n_tokens;
  let tiles = (T + TQ - 1u) / TQ;
  var wg = flat_group(wid, nwg);
  var n_splits = 1u;
  var sp = 0u;  // this workgroup's split: positions [sp x step.split, + step.split)
  if (SPLITS) {
    n_splits = (step.pos0 + T + step.split - 1u) / step.split;
    sp = wg % n_splits;
    wg = wg / n_splits;
  }
  if (wg / (NH / G) >= tiles) { return; }
  let h0 = (wg % (NH / G)) * G;
  let kvh = h0 / (NH / NKV);
  let t0 = (tiles - 1u - wg / (NH / G)) * TQ;  // the longest tiles (last tokens) start first
  let seen = step.pos0 + min(t0 + TQ, T);     // positions [0, seen) are seen by some row
  let begin = sp * step.split;                  // 0 without splits
  let end = select(seen, min(seen, begin + step.split), SPLITS);  // this workgroup's [begin, end)
  let clamp_end = max(end, begin + 1u);         // loads past end repeat a valid position (begin < pos0 + T)
  // Lane bit 0 is cg's low bit, lane bits 1..3 are rg: lanes n and n^1 read the same query and weight
  // rows, lanes n and n^2 the same keys and values, so those loads return in half the passes.
  let hf = lid / 128u;  // the half: positions [hf TILE, +TILE) of each step
  let rg = (lid >> 1u) & 7u;
  let cg = (lid & 1u) | (((lid % 128u) >> 4u) << 1u);
  let ps = hf * TILE;  // this half's first position in a step, in kv and pt

  // The first step's keys and values are loaded first: their latency hides behind the queries'.
  var kr = load_keys(begin, clamp_end, kvh, lid);
  var vr = load_values(begin, clamp_end, kvh, lid);
  stage_queries(t0, T, h0, lid);  // QIN
  var last: array<u32, 4>;  // the last position each of the thread's rows sees
  for (var i = 0u; i < 4u; i++) { last[i] = step.pos0 + min(t0 + (rg + 8u * i) / G, T - 1u); }

  var m = vec4f(NEG);      // the running max of rows rg + 8i, in log2 units
  var l = vec4f(0.0);      // this thread's share of their sums, scaled like o
  var o: array<vec4f, 8>;  // [dim cg HD/16 + k]: the 4 rows' outputs
  for (var b = begin; b < end; b += STEP) {
    for (var n = 0u; n < NL; n++) { kv[lid + n * WG] = kr[n]; }
    workgroupBarrier();  // publishes the keys (and the queries)
    let more = b + STEP < end;
    if (more) { kr = load_keys(b + STEP, end, kvh, lid); }  // in flight while this tile computes

    // Scores of rows rg + 8i at positions cg + 16k: 32 PPT FMAs per 8 dims of keys.
    // An explicit zero: a declaration alone zeroed it only on the first tile (Dawn's SPIR-V on lavapipe).
    var s = array<vec4f, 4>();  // [row i][position k]
    // A half wholly past the last position (in a tile's diagonal step) skips its scores and P V: the
    // mask weighs them 0, and the other half has the SM to itself meanwhile.
    let live = b + ps < end;
    if (live) {
      for (var d = 0u; d < HD8; d++) {
        var ka: array<vec4f, 4>;
        var kb: array<vec4f, 4>;
        for (var k = 0u; k < PPT; k++) {
          let kw = kv[d * STEP + ps + cg + 16u * k];
          ka[k] = halves(kw.x, kw.y);
          kb[k] = halves(kw.z, kw.w);
        }
        for (var i = 0u; i < 4u; i++) {
          let qa = qt[(rg + 8u * i) * QST + 2u * d];
          let qb = qt[(rg + 8u * i) * QST + 2u * d + 1u];
          for (var k = 0u; k < PPT; k++) { s[i][k] = dot8(s[i][k], qa, qb, ka[k], kb[k]); }
        }
      }
    }
    var mx = vec4f(NEG);
    for (var i = 0u; i < 4u; i++) {
      for (var k = 0u; k < PPT; k++) {
        s[i][k] = select(MASKED, s[i][k], b + ps + cg + 16u * k <= last[i]);  // causal mask
        mx[i] = max(mx[i], s[i][k]);
      }
    }
    red[hf * 128u + cg * 8u + rg] = mx;
    workgroupBarrier();  // publishes the maxima; everyone is done with the keys
    for (var n = 0u; n < NL; n++) { kv[lid + n * WG] = vr[n]; }
    if (more) { vr = load_values(b + STEP, end, kvh, lid); }

    // Online softmax: the new row max over the 16 column groups (the same order in every thread),
    // the old sums and outputs scaled by 2^(m_old - m_new), this tile's weights 2^(s - m_new).
    var m_new = m;
    for (var c = 0u; c < 16u; c++) { m_new = max(m_new, red[hf * 128u + c * 8u + rg]); }
    let alpha = exp2(m - m_new);
    m = m_new;
    var psum = vec4f(0.0);
    for (var k = 0u; k < PPT; k++) {
      var pk: vec4f;  // position cg + 16k's weights for the 4 rows
      for (var i = 0u; i < 4u; i++) { pk[i] = exp2(s[i][k] - m[i]); }
      pt[(ps + cg + 16u * k) * 8u + rg] = pk;
      psum += pk;
    }
    l = l * alpha + psum;
    for (var k = 0u; k < 2u * W; k++) { o[k] *= alpha; }
    workgroupBarrier();  // publishes the weights and the values

    // O += P V: per position one load of 4 weights and one of W words of values, 8 W FMAs.
    // The whole half, a constant trip count the compiler unrolls: positions past the end weigh 0 (masked
    // above) against values loaded from the last valid position.
    if (live) {
      for (var jj = 0u; jj < TILE; jj++) {
        let j = ps + jj;
        let pj = pt[j * 8u + rg];
        var vw: array<u32, 4>;
        if (W == 4u) {
          let v = kv[j * HD8 + cg];
          vw = array<u32, 4>(v.x, v.y, v.z, v.w);
        } else {
          for (var w = 0u; w < W; w++) {
            let wi = j * (HD / 2u) + cg * W + w;
            vw[w] = kv[wi / 4u][wi % 4u];
          }
        }
        for (var w = 0u; w < W; w++) {
          let v = unpack2x16float(vw[w]);
          o[2u * w] = fma(pj, vec4f(v.x), o[2u * w]);
          o[2u * w + 1u] = fma(pj, vec4f(v.y), o[2u * w + 1u]);
        }
      }
    }
    workgroupBarrier();  // everyone is done with the weights and values before the next tile's
  }

  // The rows' sums over the 16 column groups, then the normalised rows through qt (the queries are
  // no longer needed) so att and the int8 units are stored whole rows and units at a time.
  red[hf * 128u + cg * 8u + rg] = l;
  workgroupBarrier();
  var sum = vec4f(0.0);
  for (var c = 0u; c < 16u; c++) { sum += red[hf * 128u + c * 8u + rg]; }
  // Two halves: the second leaves its unnormalised outputs in qt and its maxima and sums in pt, and
  // the first merges them with its own (the combine's arithmetic, in log2 units).
  if (HALVES == 2u && hf == 1u) {
    for (var k = 0u; k < 2u * W; k++) {
      let d = cg * 2u * W + k;
      for (var i = 0u; i < 4u; i++) { qt[(rg + 8u * i) * QST + d / 4u][d % 4u] = o[k][i]; }
    }
    pt[(lid % 128u) * 2u] = m;
    pt[(lid % 128u) * 2u + 1u] = sum;
  }
  workgroupBarrier();
  if (hf == 0u) {
    var a0 = vec4f(1.0);
    var a1 = vec4f(0.0);
    if (HALVES == 2u) {
      let m1 = pt[lid * 2u];
      let m_new = max(m, m1);
      a0 = exp2(m - m_new);
      a1 = exp2(m1 - m_new);
      sum = sum * a0 + pt[lid * 2u + 1u] * a1;
      m = m_new;
    }
    let inv = select(1.0 / sum, vec4f(1.0), SPLITS);  // splits: the combine normalises
    for (var k = 0u; k < 2u * W; k++) {
      let d = cg * 2u * W + k;
      for (var i = 0u; i < 4u; i++) {
        let at = (rg + 8u * i) * QST + d / 4u;
        var v = o[k][i] * a0[i];
        if (HALVES == 2u) { v += qt[at][d % 4u] * a1[i]; }
        qt[at][d % 4u] = v * inv[i];
      }
    }
  }
  workgroupBarrier();
  if (SPLITS) {  // rows with no position in the split store max NEG: the combine weighs them 0
    for (var i = lid; i < ROWS * HD4; i += WG) {
      let r = i / HD4;
      let t = t0 + r / G;
      if (t >= T) { continue; }
      let base = ((t * NH + h0 + r % G) * n_splits + sp) * (HD + 2u) + (i % HD4) * 4u;
      let v = qt[r * QST + i % HD4];
      for (var c = 0u; c < 4u; c++) { part[base + c] = v[c]; }
    }
    if (cg == 0u && hf == 0u) {
      for (var i = 0u; i < 4u; i++) {
        let r = rg + 8u * i;
        let t = t0 + r / G;
        if (t >= T) { continue; }
        let base = ((t * NH + h0 + r % G) * n_splits + sp) * (HD + 2u);
        part[base + HD] = m[i] / LOG2E;
        part[base + HD + 1u] = sum[i];
      }
    }
    return;
  }
  for (var i = lid; i < ROWS * HD4; i += WG) {
    let r = i / HD4;
    let t = t0 + r / G;
    if (t < T && F32_OUT) { att[(t * NH + h0 + r % G) * HD4 + i % HD4] = qt[r * QST + i % HD4]; }
  }
  if (EMIT_Q8) {  // a row is HD / 32 whole units
    for (var u = lid; u < ROWS * (HD / 32u); u += WG) {
      let r = u / (HD / 32u);
      let t = t0 + r / G;
      if (t >= T) { continue; }
      var v: array<vec4f, 8>;
      for (var i = 0u; i < 8u; i++) { v[i] = qt[r * QST + (u % (HD / 32u)) * 8u + i]; }
      store_q8((t * NH + h0 + r % G) * (HD / 32u) + u % (HD / 32u), &v);
    }
  }
}
