// Paged causal attention, split-K over the KV length (flash-decoding): one workgroup per (TQ tokens,
// group of G query heads sharing one KV head, split of SPLIT positions) computes for each of its
// R = G x TQ query rows an unnormalised partial softmax·V with its running max m and sum l;
// attention_combine merges the splits. Serving the heads of a KV head together (grouped-query
// attention), and in long passes several tokens together, reads each key and value once per
// workgroup instead of once per row. Token t sees positions [0, pos0 + t]. The cache holds f16 pairs
// packed in u32 words (rope_kv.wgsl), unpacked here: half the bytes of f32 for the same reads.
//!include common

override HD: u32;
override NH: u32;
override NKV: u32;
override PAGE: u32;
override SPLIT: u32;
override SCALE: f32;
override G: u32;  // query heads per workgroup: NH / NKV, or a divisor of it when that exceeds 8
override TQ: u32 = 1u;  // tokens per workgroup (G x TQ <= 8)
override R: u32 = G * TQ;  // query rows: row r is head h0 + r % G of token t0 + r / G

const NEG: f32 = -1e30;  // finite "minus infinity": exp(NEG - NEG) stays defined
const MAXR = 8u;
const BATCH = 8u;  // values loaded before any is used, so their latencies overlap

@group(0) @binding(0) var<storage, read_write> part: array<f32>;  // [T][NH][splits][HD + 2]
@group(0) @binding(1) var<storage, read> q: array<f32>;           // [T, NH*HD]
@group(0) @binding(2) var<storage, read> k_cache: array<vec4u>;  // [pages][NKV][HD / 8][PAGE] x 8 halves
@group(0) @binding(3) var<storage, read> v_cache: array<u32>;    // [pages][PAGE][NKV] rows of HD / 2 x 2 halves
@group(0) @binding(4) var<storage, read> pages: array<u32>;
@group(0) @binding(5) var<uniform> step: Step;

var<workgroup> qv: array<vec4f, 512>;     // [R][HD / 4]
var<workgroup> pw: array<f32, 512>;       // [R][64 positions]: scores, then weights
var<workgroup> red: array<f32, 512>;      // [R][64]
var<workgroup> kv_rows: array<u32, 64>;   // cache row of each position of the block

// The cache row (HD halves) of position p's key or value in KV head kvh.
fn kv_row(p: u32, kvh: u32) -> u32 {
  return (pages[p / PAGE] * PAGE + p % PAGE) * NKV + kvh;
}

// Tree reduction of red[r][0..64) for every row at once (max or sum); every thread gets the R results.
fn reduce_heads(lid: u32, is_max: bool) {
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var r = 0u; r < R; r++) {
        let a = red[r * 64u + lid];
        let b = red[r * 64u + lid + s];
        red[r * 64u + lid] = select(a + b, max(a, b), is_max);
      }
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let n_splits = (step.pos0 + step.n_tokens + SPLIT - 1u) / SPLIT;
  let wg = flat_group(wid, nwg);
  let split = wg % n_splits;
  let h0 = ((wg / n_splits) % (NH / G)) * G;  // first query head of the group
  let kvh = h0 / (NH / NKV);
  let t0 = (wg / (n_splits * (NH / G))) * TQ;
  if (t0 >= step.n_tokens) { return; }
  let start = split * SPLIT;
  // Row r attends to [start, ends[r]): its token's causal limit within the split (empty past the pass).
  var ends: array<u32, MAXR>;
  var end = start;  // the furthest of them
  for (var r = 0u; r < R; r++) {
    let t = t0 + r / G;
    ends[r] = select(start, min(start + SPLIT, step.pos0 + t + 1u), t < step.n_tokens);
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
  var o: array<vec2f, 16>;  // [r][pairs lid, lid + 64]: dims 2 lid, 2 lid + 1, 2 lid + 128, 2 lid + 129
  for (var r = 0u; r < R; r++) { m[r] = NEG; }
  let hp = HD / 2u;  // words per row
  for (var b = start; b < end; b += 64u) {
    let p = b + lid;
    let pc = min(p, end - 1u);  // past the end: a valid position, weighted 0
    kv_rows[lid] = kv_row(pc, kvh);
    let kb = (pages[pc / PAGE] * NKV + kvh) * (HD / 8u) * PAGE + pc % PAGE;
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
    workgroupBarrier();  // publishes pw and kv_rows
    // softmax·V: thread owns word pairs lid, lid + 64 of the row; each value is read once for the R
    // rows, BATCH positions at a time (positions past the block's n repeat its last, weighted 0).
    let n = min(64u, end - b);
    for (var j = 0u; j < 2u; j++) {
      let w = lid + j * 64u;
      if (w < hp) {
        for (var r = 0u; r < R; r++) { o[r * 2u + j] *= alpha[r]; }
        for (var i0 = 0u; i0 < n; i0 += BATCH) {
          var v: array<vec2f, BATCH>;
          for (var i = 0u; i < BATCH; i++) { v[i] = unpack2x16float(v_cache[kv_rows[min(i0 + i, n - 1u)] * hp + w]); }
          for (var i = 0u; i < BATCH; i++) {
            for (var r = 0u; r < R; r++) { o[r * 2u + j] += pw[r * 64u + i0 + i] * v[i]; }
          }
        }
      }
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < R; r++) { red[r * 64u + lid] = l[r]; }
  reduce_heads(lid, false);  // red[r * 64] = the row sums
  for (var r = 0u; r < R; r++) {
    let t = t0 + r / G;
    if (t >= step.n_tokens) { break; }
    let pb = ((t * NH + h0 + r % G) * n_splits + split) * (HD + 2u);
    for (var j = 0u; j < 2u; j++) {
      let w = lid + j * 64u;
      if (w < hp) {
        part[pb + 2u * w] = o[r * 2u + j].x;
        part[pb + 2u * w + 1u] = o[r * 2u + j].y;
      }
    }
    if (lid == 0u) {
      part[pb + HD] = m[r];
      part[pb + HD + 1u] = red[r * 64u];
    }
  }
}
