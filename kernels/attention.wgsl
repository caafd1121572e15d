// Paged causal attention, split-K over the KV length (flash-decoding): one workgroup per
// (token, query head, split of SPLIT positions) computes an unnormalised partial softmax·V with its
// running max m and sum l; attention_combine merges the splits. Token t sees positions [0, pos0 + t].
// Grouped-query attention: query head h reads KV head h / (NH / NKV).
//!include common

override HD: u32;
override NH: u32;
override NKV: u32;
override PAGE: u32;
override SPLIT: u32;
override SCALE: f32;

const NEG: f32 = -1e30;  // finite "minus infinity": exp(NEG - NEG) stays defined

@group(0) @binding(0) var<storage, read_write> part: array<f32>;  // [T][NH][splits][HD + 2]
@group(0) @binding(1) var<storage, read> q: array<f32>;           // [T, NH*HD]
@group(0) @binding(2) var<storage, read> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read> v_cache: array<f32>;
@group(0) @binding(4) var<storage, read> pages: array<u32>;
@group(0) @binding(5) var<uniform> step: Step;

var<workgroup> qv: array<f32, 256>;
var<workgroup> pw: array<f32, 64>;
var<workgroup> red: array<f32, 64>;

fn kv_index(p: u32, kvh: u32) -> u32 {
  return (pages[p / PAGE] * PAGE + p % PAGE) * NKV * HD + kvh * HD;
}

fn reduce_max(lid: u32, v: f32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn reduce_sum(lid: u32, v: f32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let n_splits = (step.pos0 + step.n_tokens + SPLIT - 1u) / SPLIT;
  let g = flat_group(wid, nwg);
  let split = g % n_splits;
  let h = (g / n_splits) % NH;
  let t = g / (n_splits * NH);
  if (t >= step.n_tokens) { return; }
  let kvh = h / (NH / NKV);
  let kv_len = step.pos0 + t + 1u;
  let start = split * SPLIT;
  let end = min(start + SPLIT, kv_len);
  for (var d = lid; d < HD; d += 64u) { qv[d] = q[t * NH * HD + h * HD + d]; }
  workgroupBarrier();

  var m = NEG;
  var l = 0.0;
  var o: array<f32, 4>;  // dims lid, lid+64, lid+128, lid+192
  for (var b = start; b < end; b += 64u) {
    let p = b + lid;
    var score = NEG;
    if (p < end) {
      let ki = kv_index(p, kvh);
      var s = 0.0;
      for (var d = 0u; d < HD; d++) { s += qv[d] * k_cache[ki + d]; }
      score = s * SCALE;
    }
    let m_new = max(m, reduce_max(lid, score));
    let e = select(0.0, exp(score - m_new), p < end);
    pw[lid] = e;
    let alpha = exp(m - m_new);
    l = l * alpha + reduce_sum(lid, e);  // reduce_sum's barriers also publish pw
    let n = min(64u, end - b);
    for (var j = 0u; j < 4u; j++) {
      let d = lid + j * 64u;
      if (d < HD) {
        var acc = o[j] * alpha;
        for (var i = 0u; i < n; i++) { acc += pw[i] * v_cache[kv_index(b + i, kvh) + d]; }
        o[j] = acc;
      }
    }
    m = m_new;
    workgroupBarrier();
  }
  let pb = ((t * NH + h) * n_splits + split) * (HD + 2u);
  for (var j = 0u; j < 4u; j++) {
    let d = lid + j * 64u;
    if (d < HD) { part[pb + d] = o[j]; }
  }
  if (lid == 0u) {
    part[pb + HD] = m;
    part[pb + HD + 1u] = l;
  }
}
