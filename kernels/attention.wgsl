// Paged causal attention, split-K over the KV length (flash-decoding): one workgroup per (token, group
// of G query heads sharing one KV head, split of SPLIT positions) computes for each head an
// unnormalised partial softmax·V with its running max m and sum l; attention_combine merges the
// splits. Serving the heads of a KV head together (grouped-query attention) reads each key and value
// once instead of once per head. Token t sees positions [0, pos0 + t].
//!include common

override HD: u32;
override NH: u32;
override NKV: u32;
override PAGE: u32;
override SPLIT: u32;
override SCALE: f32;
override G: u32;  // query heads per workgroup: NH / NKV, or a divisor of it when that exceeds 8

const NEG: f32 = -1e30;  // finite "minus infinity": exp(NEG - NEG) stays defined
const MAXG = 8u;

@group(0) @binding(0) var<storage, read_write> part: array<f32>;  // [T][NH][splits][HD + 2]
@group(0) @binding(1) var<storage, read> q: array<f32>;           // [T, NH*HD]
@group(0) @binding(2) var<storage, read> k_cache: array<vec4f>;
@group(0) @binding(3) var<storage, read> v_cache: array<f32>;
@group(0) @binding(4) var<storage, read> pages: array<u32>;
@group(0) @binding(5) var<uniform> step: Step;

var<workgroup> qv: array<vec4f, 512>;     // [G][HD / 4]
var<workgroup> pw: array<f32, 512>;       // [G][64 positions]: scores, then weights
var<workgroup> red: array<f32, 512>;      // [G][64]

fn kv_index(p: u32, kvh: u32) -> u32 {
  return (pages[p / PAGE] * PAGE + p % PAGE) * NKV * HD + kvh * HD;
}

// Tree reduction of red[g][0..64) for every head at once (max or sum); every thread gets the G results.
fn reduce_heads(lid: u32, is_max: bool) {
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var g = 0u; g < G; g++) {
        let a = red[g * 64u + lid];
        let b = red[g * 64u + lid + s];
        red[g * 64u + lid] = select(a + b, max(a, b), is_max);
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
  let t = wg / (n_splits * (NH / G));
  if (t >= step.n_tokens) { return; }
  let kv_len = step.pos0 + t + 1u;
  let start = split * SPLIT;
  let end = min(start + SPLIT, kv_len);
  let hd4 = HD / 4u;
  for (var i = lid; i < G * hd4; i += 64u) {
    let g = i / hd4;
    let d = (i % hd4) * 4u;
    let qb = t * NH * HD + (h0 + g) * HD + d;
    qv[i] = vec4f(q[qb], q[qb + 1u], q[qb + 2u], q[qb + 3u]);
  }
  workgroupBarrier();

  var m: array<f32, MAXG>;
  var l: array<f32, MAXG>;
  var o: array<f32, 32>;  // [g][dims lid, lid+64, lid+128, lid+192]
  for (var g = 0u; g < G; g++) { m[g] = NEG; }
  for (var b = start; b < end; b += 64u) {
    let p = b + lid;
    // Scores of position p for every head of the group: the key is read once, as vec4s.
    var sc: array<f32, MAXG>;
    for (var g = 0u; g < G; g++) { sc[g] = NEG; }
    if (p < end) {
      let ki = kv_index(p, kvh) / 4u;
      for (var g = 0u; g < G; g++) { sc[g] = 0.0; }
      for (var d = 0u; d < hd4; d++) {
        let kk = k_cache[ki + d];
        for (var g = 0u; g < G; g++) { sc[g] += dot(qv[g * hd4 + d], kk); }
      }
      for (var g = 0u; g < G; g++) { sc[g] *= SCALE; }
    }
    for (var g = 0u; g < G; g++) { red[g * 64u + lid] = sc[g]; }
    reduce_heads(lid, true);
    var alpha: array<f32, MAXG>;
    for (var g = 0u; g < G; g++) {
      let m_new = max(m[g], red[g * 64u]);
      let e = select(0.0, exp(sc[g] - m_new), p < end);
      pw[g * 64u + lid] = e;
      alpha[g] = exp(m[g] - m_new);
      m[g] = m_new;
    }
    workgroupBarrier();  // everyone has read the maxima before red is reused
    for (var g = 0u; g < G; g++) { red[g * 64u + lid] = pw[g * 64u + lid]; }
    reduce_heads(lid, false);  // its barriers also publish pw
    for (var g = 0u; g < G; g++) { l[g] = l[g] * alpha[g] + red[g * 64u]; }
    // softmax·V: thread owns dims lid, lid + 64, ...; each value is read once for the G heads.
    let n = min(64u, end - b);
    for (var j = 0u; j < 4u; j++) {
      let d = lid + j * 64u;
      if (d < HD) {
        for (var g = 0u; g < G; g++) { o[g * 4u + j] *= alpha[g]; }
        for (var i = 0u; i < n; i++) {
          let v = v_cache[kv_index(b + i, kvh) + d];
          for (var g = 0u; g < G; g++) { o[g * 4u + j] += pw[g * 64u + i] * v; }
        }
      }
    }
    workgroupBarrier();
  }
  for (var g = 0u; g < G; g++) {
    let pb = ((t * NH + h0 + g) * n_splits + split) * (HD + 2u);
    for (var j = 0u; j < 4u; j++) {
      let d = lid + j * 64u;
      if (d < HD) { part[pb + d] = o[g * 4u + j]; }
    }
    if (lid == 0u) {
      part[pb + HD] = m[g];
      part[pb + HD + 1u] = l[g];
    }
  }
}
