// One head of a token's qkv row as attention reads it: plus the projection bias (Qwen2), RMSNorm'd
// if it is a q or k head (Qwen3 QK-norm), its first ROT dims rotated at position `pos` if it is a q or
// k head (RoPE: adjacent pairs, or NeoX halves). The result is left in rh_out[0, HD).
// The including kernel declares HD, NH, NKV, RH_SLOTS and the bindings qkv (f32), aux ([q_norm HD |
// k_norm HD | bias]) and rope ([pos][ROT / 2] (cos, sin)). Threads 64s..64s+63 make a head in slot s
// (s < RH_SLOTS; each thread passes its slot's base and h), two elements and at most one rotation pair
// each (HD <= 128), so up to RH_SLOTS heads take the time of one; every thread of the workgroup must
// call it (it has barriers). Slot s's result: rh_out[128 s, 128 s + HD).
// What counts is latency: every load is issued up front, and two barriers separate the phases (one
// publishes the raw head and the sums of squares, one the finished head).
override ROT: u32;             // rotated dims per head (<= HD)
override NEOX: bool = true;    // rotate (i, i + ROT/2) instead of (2i, 2i+1)
override QK_NORM: bool = false;
override HAS_BIAS: bool = false;
override EPS: f32 = 1e-6;

var<workgroup> rh_raw: array<f32, 128 * RH_SLOTS>;  // the head after the bias
var<workgroup> rh_out: array<f32, 128 * RH_SLOTS>;  // normalised and rotated
var<workgroup> rh_red: array<f32, 64 * RH_SLOTS>;

// base: the index of the head's first element in qkv; h: which head (q heads, then k, then v).
fn rope_head(base: u32, h: u32, pos: u32, lid: u32) {
  let is_q = h < NH;
  let is_k = !is_q && h < NH + NKV;
  let normed = QK_NORM && (is_q || is_k);
  let rotated = is_q || is_k;
  let half = ROT / 2u;
  let wo = select(HD, 0u, is_q);  // aux offset of this head's norm weights (q_norm, then k_norm)
  let act = lid < 64u * RH_SLOTS;  // threads past the slots load what the last one does and store nothing
  let t = select(63u, lid % 64u, act);
  let o = min(lid / 64u, RH_SLOTS - 1u) * 128u;  // the slot's rh_raw and rh_out
  let ro = o / 2u;                               // its rh_red

  // Loads, side by side. Indices past the head or the rotated dims clamp to valid ones, unused.
  var v: array<f32, 2>;
  var nw = vec2f(1.0);
  for (var i = 0u; i < 2u; i++) {
    let d = min(t + 64u * i, HD - 1u);
    v[i] = qkv[base + d];
    if (HAS_BIAS) { v[i] += aux[2u * HD + h * HD + d]; }
    if (QK_NORM) { nw[i] = aux[wo + d]; }
  }
  let pi = min(t, half - 1u);  // this thread's rotation pair, if lid < half
  var ia = 2u * pi;
  var ib = 2u * pi + 1u;
  if (NEOX) { ia = pi; ib = pi + half; }
  let cs = rope[pos * half + pi];
  var nab = vec2f(1.0);
  if (QK_NORM) { nab = vec2f(aux[wo + ia], aux[wo + ib]); }

  var ss = 0.0;
  for (var i = 0u; i < 2u; i++) {
    let d = t + 64u * i;
    if (act && d < HD) {
      rh_raw[o + d] = v[i];
      ss += v[i] * v[i];
    }
  }
  if (act) { rh_red[ro + t] = ss; }
  workgroupBarrier();
  var inv = 1.0;
  if (normed) {
    var tot = 0.0;
    for (var j = 0u; j < 64u; j++) { tot += rh_red[ro + j]; }
    inv = inverseSqrt(tot / f32(HD) + EPS);
  }
  // Dims that do not rotate (all of a v head; ROT..HD of q and k) from this thread's own elements...
  for (var i = 0u; i < 2u; i++) {
    let d = t + 64u * i;
    if (act && d < HD && (!rotated || d >= ROT)) { rh_out[o + d] = select(v[i], v[i] * inv * nw[i], normed); }
  }
  // ...and the rotation pairs by their threads, from the raw head.
  if (rotated && act && t < half) {
    var ab = vec2f(rh_raw[o + ia], rh_raw[o + ib]);
    if (normed) { ab *= inv * nab; }
    rh_out[o + ia] = ab.x * cs.x - ab.y * cs.y;
    rh_out[o + ib] = ab.x * cs.y + ab.y * cs.x;
  }
  workgroupBarrier();
}
