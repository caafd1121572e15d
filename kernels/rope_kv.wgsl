// After the QKV matmul: per (token, head) — add the projection bias (Qwen2), RMSNorm each q/k head
// (Qwen3 QK-norm), rotate the first ROT dims of q and k (RoPE, adjacent pairs or NeoX halves),
// write q for attention and append k, v at this token's position in the paged KV cache, as f16 pairs
// packed in u32 words (no shader-f16 needed; attention.wgsl unpacks them).
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

var<workgroup> hv: array<f32, 256>;
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
  let base = t * heads * HD + h * HD;
  var ss = 0.0;
  for (var d = lid; d < HD; d += 64u) {
    var v = qkv[base + d];
    if (HAS_BIAS) { v += aux[2u * HD + h * HD + d]; }
    hv[d] = v;
    ss += v * v;
  }
  red[lid] = ss;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  if (QK_NORM && (is_q || is_k)) {
    let inv = inverseSqrt(red[0] / f32(HD) + EPS);
    let wo = select(HD, 0u, is_q);
    for (var d = lid; d < HD; d += 64u) { hv[d] = hv[d] * inv * aux[wo + d]; }
  }
  workgroupBarrier();
  let pos = step.pos0 + t;
  if (is_q || is_k) {
    let half = ROT / 2u;
    for (var i = lid; i < half; i += 64u) {
      let cs = rope[pos * half + i];
      var ia = 2u * i;
      var ib = 2u * i + 1u;
      if (NEOX) { ia = i; ib = i + half; }
      let a = hv[ia];
      let b = hv[ib];
      hv[ia] = a * cs.x - b * cs.y;
      hv[ib] = a * cs.y + b * cs.x;
    }
  }
  workgroupBarrier();
  let slot = (pages[pos / PAGE] * PAGE + pos % PAGE) * NKV * (HD / 2u);  // in words
  if (is_q) {
    for (var d = lid; d < HD; d += 64u) { q_out[t * NH * HD + h * HD + d] = hv[d]; }
    return;
  }
  for (var i = lid; i < HD / 2u; i += 64u) {
    let w = pack2x16float(vec2f(hv[2u * i], hv[2u * i + 1u]));
    if (is_k) {
      // keys dims-major within a page: attention's threads (positions) read them side by side
      let kb = ((pages[pos / PAGE] * NKV + h - NH) * (HD / 8u) + i / 4u) * PAGE + pos % PAGE;
      k_cache[kb * 4u + i % 4u] = w;
    } else {
      v_cache[slot + (h - NH - NKV) * (HD / 2u) + i] = w;
    }
  }
}
