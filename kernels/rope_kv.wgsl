// After the QKV matmul: per (token, head) — add the projection bias (Qwen2), RMSNorm each q/k head
// (Qwen3 QK-norm), rotate the first ROT dims of q and k (RoPE, adjacent pairs or NeoX halves),
// write q for attention and append k, v at this token's position in the paged KV cache, as f16 pairs
// packed in u32 words (no shader-f16 needed; attention.wgsl unpacks them).
//
// A decode step runs this once per layer in its chain of dependent dispatches, so what counts is
// latency: every thread loads all it will read (its two elements, their norm weights, its rotation
// pair's cos/sin and norm weights, the page) in one go, and two barriers separate the phases (one
// publishes the raw head and the sum of squares, one the finished head). HD <= 128: 64 threads, two
// elements and at most one rotation pair each.
//!include common

override HD: u32;              // head dim
override NH: u32;              // query heads
override NKV: u32;             // key/value heads
override ROT: u32;             // rotated dims per head (<= HD)
override PAGE: u32;            // tokens per KV page
override NEOX: bool = true;    // rotate (i, i + ROT/2) instead of (2i, 2i+1)
override QK_NORM: bool = false;
override HAS_BIAS: bool = false;
override EPS: f32 = 1e-6;

@group(0) @binding(0) var<storage, read_write> q_out: array<f32>;   // [T, NH*HD]
@group(0) @binding(1) var<storage, read_write> k_cache: array<u32>; // [pages][NKV][HD / 8][PAGE][4] f16 pairs
@group(0) @binding(2) var<storage, read_write> v_cache: array<u32>; // [pages][PAGE][NKV][HD / 2] f16 pairs
@group(0) @binding(3) var<storage, read> qkv: array<f32>;           // [T, (NH + 2 NKV) * HD]
@group(0) @binding(4) var<storage, read> aux: array<f32>;           // [q_norm HD | k_norm HD | bias (NH+2NKV)*HD]
@group(0) @binding(5) var<storage, read> rope: array<vec2f>;        // [pos][ROT/2] (cos, sin)
@group(0) @binding(6) var<storage, read> pages: array<u32>;         // logical page -> physical page
@group(0) @binding(7) var<uniform> step: Step;

var<workgroup> hv: array<f32, 128>;  // the head after the bias
var<workgroup> ho: array<f32, 128>;  // normalised and rotated
var<workgroup> red: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let heads = NH + 2u * NKV;
  let g = flat_group(wid, nwg);
  let t = g / heads;
  let h = g % heads;
  if (t >= step.n_tokens) { return; }
  let is_q = h < NH;
  let is_k = !is_q && h < NH + NKV;
  let normed = QK_NORM && (is_q || is_k);
  let base = t * heads * HD + h * HD;
  let pos = step.pos0 + t;
  let half = ROT / 2u;
  let wo = select(HD, 0u, is_q);  // aux offset of this head's norm weights (q_norm, then k_norm)

  // Loads, side by side. Indices past the head or the rotated dims clamp to valid ones, unused.
  var v: array<f32, 2>;
  var nw = vec2f(1.0);
  for (var i = 0u; i < 2u; i++) {
    let d = min(lid + 64u * i, HD - 1u);
    v[i] = qkv[base + d];
    if (HAS_BIAS) { v[i] += aux[2u * HD + h * HD + d]; }
    if (QK_NORM) { nw[i] = aux[wo + d]; }
  }
  let pi = min(lid, half - 1u);  // this thread's rotation pair, if lid < half
  var ia = 2u * pi;
  var ib = 2u * pi + 1u;
  if (NEOX) { ia = pi; ib = pi + half; }
  let cs = rope[pos * half + pi];
  var nab = vec2f(1.0);
  if (QK_NORM) { nab = vec2f(aux[wo + ia], aux[wo + ib]); }
  let page = pages[pos / PAGE];

  var ss = 0.0;
  for (var i = 0u; i < 2u; i++) {
    let d = lid + 64u * i;
    if (d < HD) {
      hv[d] = v[i];
      ss += v[i] * v[i];
    }
  }
  red[lid] = ss;
  workgroupBarrier();
  var inv = 1.0;
  if (normed) {
    var tot = 0.0;
    for (var j = 0u; j < 64u; j++) { tot += red[j]; }
    inv = inverseSqrt(tot / f32(HD) + EPS);
  }
  let rotated = is_q || is_k;
  // Dims that do not rotate (all of a v head; ROT..HD of q and k) from this thread's own elements...
  for (var i = 0u; i < 2u; i++) {
    let d = lid + 64u * i;
    if (d < HD && (!rotated || d >= ROT)) { ho[d] = select(v[i], v[i] * inv * nw[i], normed); }
  }
  // ...and the rotation pairs by their threads, from the raw head.
  if (rotated && lid < half) {
    var ab = vec2f(hv[ia], hv[ib]);
    if (normed) { ab *= inv * nab; }
    ho[ia] = ab.x * cs.x - ab.y * cs.y;
    ho[ib] = ab.x * cs.y + ab.y * cs.x;
  }
  workgroupBarrier();
  if (is_q) {
    for (var d = lid; d < HD; d += 64u) { q_out[t * NH * HD + h * HD + d] = ho[d]; }
    return;
  }
  for (var i = lid; i < HD / 2u; i += 64u) {
    let w = pack2x16float(vec2f(ho[2u * i], ho[2u * i + 1u]));
    if (is_k) {
      // keys dims-major within a page: attention's threads (positions) read them side by side
      let kb = ((page * NKV + h - NH) * (HD / 8u) + i / 4u) * PAGE + pos % PAGE;
      k_cache[kb * 4u + i % 4u] = w;
    } else {
      v_cache[(page * PAGE + pos % PAGE) * NKV * (HD / 2u) + (h - NH - NKV) * (HD / 2u) + i] = w;
    }
  }
}
