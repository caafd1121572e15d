// Paged causal attention, split-K over the KV length (flash-decoding): one workgroup per (TQ tokens,
// group of G query heads sharing one KV head, split of step.split positions) computes for each of its
// R = G x TQ query rows an unnormalised partial softmax·V with its running max m and sum l;
// attention_combine merges the splits. Serving the heads of a KV head together (grouped-query
// attention), and in long passes several tokens together, reads each key and value once per
// workgroup instead of once per row. Token t sees positions [0, pos0 + t]. The cache holds f16 pairs
// packed in u32 words (rope_kv.wgsl), unpacked here: half the bytes of f32 for the same reads. Per
// block of 64 positions each thread loads one position's key and (STAGE_V) value at once; the
// values go through workgroup memory, so a block costs one memory round trip. HD <= 128.
//!include common

override HD: u32;
override NH: u32;
override NKV: u32;
override PAGE: u32;
override SCALE: f32;
override G: u32;  // query heads per workgroup: NH / NKV, or a divisor of it when that exceeds 8
override TQ: u32 = 1u;  // tokens per workgroup (G x TQ <= 8)
override R: u32 = G * TQ;  // query rows: row r is head h0 + r % G of token t0 + r / G

const NEG: f32 = -1e30;  // finite "minus infinity": exp(NEG - NEG) stays defined
const MAXR = 8u;

@group(0) @binding(0) var<storage, read_write> part: array<f32>;  // [T][NH][splits][HD + 2]
@group(0) @binding(1) var<storage, read> q: array<f32>;           // [T, NH*HD]
@group(0) @binding(2) var<storage, read> k_cache: array<vec4u>;  // [pages][NKV][HD / 8][PAGE] x 8 halves
@group(0) @binding(3) var<storage, read> v_cache: array<vec4u>;  // [pages][PAGE][NKV] rows of HD / 8 x 8 halves
@group(0) @binding(4) var<storage, read> pages: array<u32>;
@group(0) @binding(5) var<uniform> step: Step;

// Values staged in workgroup memory (decode: +2-3% on the H200) or read from the cache BATCH positions
// at a time (passes of many tokens, where the staging's 17 KB cost 5-19%).
override STAGE_V: bool = true;
override VST: u32 = HD / 8u + 1u;  // vec4s per staged value row (one of padding against bank conflicts)
override VST_LEN: u32 = select(1u, 64u * VST, STAGE_V);
const BATCH = 8u;

var<workgroup> qv: array<vec4f, 256>;     // [R][HD / 4] (HD <= 128)
var<workgroup> pw: array<f32, 512>;       // [R][64 positions]: scores, then weights
var<workgroup> red: array<f32, 512>;      // [R][64]: the threads' shares of the row sums
var<workgroup> vst: array<vec4u, VST_LEN>;  // [64 positions][VST]: the block's values, f16
var<workgroup> kv_rows: array<u32, 64>;      // without staging: the cache row of each position

// The cache row (HD halves) of position p's key or value in KV head kvh.
fn kv_row(p: u32, kvh: u32) -> u32 {
  return (pages[p / PAGE] * PAGE + p % PAGE) * NKV + kvh;
}

// Tree sum of red[r][0..64) for every row at once; red[r * 64] holds row r's total for every thread.
fn sum_rows(lid: u32) {
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var r = 0u; r < R; r++) { red[r * 64u + lid] += red[r * 64u + lid + s]; }
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let n_splits = (step.pos0 + step.n_tokens + step.split - 1u) / step.split;
  let wg = flat_group(wid, nwg);
  let split = wg % n_splits;
  let h0 = ((wg / n_splits) % (NH / G)) * G;  // first query head of the group
  let kvh = h0 / (NH / NKV);
  let t0 = (wg / (n_splits * (NH / G))) * TQ;
  if (t0 >= step.n_tokens) { return; }
  let start = split * step.split;
  // Row r attends to [start, ends[r]): its token's causal limit within the split (empty past the pass).
  var ends: array<u32, MAXR>;
  var end = start;  // the furthest of them
  for (var r = 0u; r < R; r++) {
    let t = t0 + r / G;
    ends[r] = select(start, min(start + step.split, step.pos0 + t + 1u), t < step.n_tokens);
    end = max(end, ends[r]);
  }
  let hd4 = HD / 4u;
  for (var i = lid; i < R * hd4; i += 64u) {
    let r = i / hd4;
    let t = min(t0 + r / G, step.n_tokens - 1u);
    let d = (i % hd4) * 4u;
    let qb = t * NH * HD + (h0 + r % G) * HD + d;
    qv[i] = vec4f(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]);
  }
  workgroupBarrier();

  var m: array<f32, MAXR>;
  var l: array<f32, MAXR>;  // this thread's share of the row sums
  var o: array<vec2f, MAXR>;  // [r]: dims 2 lid, 2 lid + 1
  for (var r = 0u; r < R; r++) { m[r] = NEG; }
  let hp = HD / 2u;  // words per row
  for (var b = start; b < end; b += 64u) {
    let p = b + lid;
    let pc = min(p, end - 1u);  // past the end: a valid position, weighted 0
    let kb = (pages[pc / PAGE] * NKV + kvh) * (HD / 8u) * PAGE + pc % PAGE;
    // This position's value row, loaded together with its key (one memory round trip per block for
    // both) and staged in workgroup memory for the softmax·V below.
    var vrow: array<vec4u, 16>;
    let vb = kv_row(pc, kvh) * (HD / 8u);
    if (STAGE_V) {
      for (var c = 0u; c < HD / 8u; c++) { vrow[c] = v_cache[vb + c]; }
    } else {
      kv_rows[lid] = vb;
    }
    // Scores of position p for every row: the key is read once, 8 halves per load. Keys are stored
    // dims-major within a page, so neighbouring threads (positions) read neighbouring 16 bytes.
    var sc: array<f32, MAXR>;
    if (p < end) {
      for (var r = 0u; r < R; r++) { sc[r] = 0.0; }
      for (var d = 0u; d < HD / 8u; d++) {
        let kk = k_cache[kb + d * PAGE];
        let lo = vec4f(unpack2x16float(kk.x), unpack2x16float(kk.y));
        let hi = vec4f(unpack2x16float(kk.z), unpack2x16float(kk.w));
        for (var r = 0u; r < R; r++) { sc[r] += dot(qv[r * hd4 + 2u * d], lo) + dot(qv[r * hd4 + 2u * d + 1u], hi); }
      }
    }
    for (var r = 0u; r < R; r++) { sc[r] = select(NEG, sc[r] * SCALE, p < ends[r]); }
    if (STAGE_V) {
      for (var c = 0u; c < HD / 8u; c++) { vst[lid * VST + c] = vrow[c]; }
    }
    // The block's maximum of each row: every thread reads the row's 64 scores (one barrier instead of
    // a tree of six). The row sums need no such step: each thread keeps its positions' share, scaled
    // like o, and the shares are added once, after the last block.
    for (var r = 0u; r < R; r++) { pw[r * 64u + lid] = sc[r]; }
    workgroupBarrier();
    var alpha: array<f32, MAXR>;
    for (var r = 0u; r < R; r++) {
      var mx = m[r];
      for (var i = 0u; i < 64u; i++) { mx = max(mx, pw[r * 64u + i]); }
      alpha[r] = exp(m[r] - mx);
      m[r] = mx;
    }
    workgroupBarrier();  // everyone has read the scores before they become weights
    for (var r = 0u; r < R; r++) {
      let e = select(0.0, exp(sc[r] - m[r]), p < ends[r]);
      pw[r * 64u + lid] = e;
      l[r] = l[r] * alpha[r] + e;
    }
    workgroupBarrier();  // publishes pw and vst
    // softmax·V: thread lid owns the word (2 dims) lid of the row; each value serves the R rows.
    let n = min(64u, end - b);
    if (lid < hp) {
      for (var r = 0u; r < R; r++) { o[r] *= alpha[r]; }
      if (STAGE_V) {
        for (var i = 0u; i < n; i++) {
          let v = unpack2x16float(vst[i * VST + lid / 4u][lid % 4u]);
          for (var r = 0u; r < R; r++) { o[r] += pw[r * 64u + i] * v; }
        }
      } else {
        // BATCH positions' values are loaded before any is used (past n: the last, weighted 0)
        for (var i0 = 0u; i0 < n; i0 += BATCH) {
          var v: array<vec2f, BATCH>;
          for (var i = 0u; i < BATCH; i++) {
            v[i] = unpack2x16float(v_cache[kv_rows[min(i0 + i, n - 1u)] + lid / 4u][lid % 4u]);
          }
          for (var i = 0u; i < BATCH; i++) {
            for (var r = 0u; r < R; r++) { o[r] += pw[r * 64u + i0 + i] * v[i]; }
          }
        }
      }
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < R; r++) { red[r * 64u + lid] = l[r]; }
  sum_rows(lid);
  for (var r = 0u; r < R; r++) {
    let t = t0 + r / G;
    if (t >= step.n_tokens) { break; }
    let pb = ((t * NH + h0 + r % G) * n_splits + split) * (HD + 2u);
    if (lid < hp) {
      part[pb + 2u * lid] = o[r].x;
      part[pb + 2u * lid + 1u] = o[r].y;
    }
    if (lid == 0u) {
      part[pb + HD] = m[r];
      part[pb + HD + 1u] = red[r * 64u];
    }
  }
}
