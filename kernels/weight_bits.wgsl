// Bit and table helpers shared by the weight snippets of the 5-bit, 3-bit and table-coded types.
// Named w_* so that a kernel holding two weight types (Kernels::compose's second copy) renames them.

// Four bits of b (bits 0..3) to bit 0 of the four bytes of a word: a 5-bit code's top bit, one per
// element, from a word of packed high bits (Q5_0, Q5_1).
fn w_spread4(b: u32) -> u32 {
  return (b & 1u) | ((b & 2u) << 7u) | ((b & 4u) << 14u) | ((b & 8u) << 21u);
}
// Q5_0 / Q5_1: low nibbles qs (16 bytes: element j low, j + 16 high) and high bits qh (bit j:
// element j) to the 32 5-bit codes as bytes, elements 0..15 in [0] and 16..31 in [1].
fn w_q5_join(qs: vec4u, qh: u32) -> array<vec4u, 2> {
  let m4 = vec4u(0x0F0F0F0Fu);
  let i4 = vec4u(0u, 4u, 8u, 12u);
  let h0 = vec4u(w_spread4((qh >> i4.x) & 15u), w_spread4((qh >> i4.y) & 15u), w_spread4((qh >> i4.z) & 15u),
                 w_spread4((qh >> i4.w) & 15u));
  let h1 = vec4u(w_spread4((qh >> (16u + i4.x)) & 15u), w_spread4((qh >> (16u + i4.y)) & 15u),
                 w_spread4((qh >> (16u + i4.z)) & 15u), w_spread4((qh >> (16u + i4.w)) & 15u));
  return array<vec4u, 2>((qs & m4) | (h0 << vec4u(4u)), ((qs >> vec4u(4u)) & m4) | (h1 << vec4u(4u)));
}
// Words of four codes 0..15 (one a byte) to the words of their int8 values in table t (16 bytes,
// entry i in byte i % 4 of t[i / 4]): IQ4_NL's and IQ4_XS's non-linear levels, MXFP4's e2m1 values.
// The word is picked by selects, not by indexing t: a vector indexed by a value the shader computes
// goes to local memory on NVIDIA (H100: IQ4_XS decode at 426 GB/s with t[i >> 2], Q4_K_M's 1,162).
fn w_lookup4(n: vec4u, t: vec4u) -> vec4u {
  var r = vec4u(0u);
  for (var k = 0u; k < 4u; k++) {
    let i = (n >> vec4u(8u * k)) & vec4u(15u);
    let b2 = (i & vec4u(4u)) != vec4u(0u);
    let w = select(select(vec4u(t.x), vec4u(t.y), b2), select(vec4u(t.z), vec4u(t.w), b2), (i & vec4u(8u)) != vec4u(0u));
    r |= ((w >> ((i & vec4u(3u)) * 8u)) & vec4u(0xFFu)) << vec4u(8u * k);
  }
  return r;
}
// The 32 elements of a unit from its codes as signed bytes (elements 0..15 in lo, 16..31 in hi), each
// times scale s0 (elements 0..15) or s1 (16..31), plus m.
fn w_bytes_to_floats(lo: vec4u, hi: vec4u, s0: f32, s1: f32, m: f32) -> array<f32, 32> {
  var v: array<f32, 32>;
  for (var i = 0u; i < 4u; i++) {
    for (var k = 0u; k < 4u; k++) {
      v[4u * i + k] = s0 * f32(extractBits(i32(lo[i]), 8u * k, 8u)) + m;
      v[16u + 4u * i + k] = s1 * f32(extractBits(i32(hi[i]), 8u * k, 8u)) + m;
    }
  }
  return v;
}
// The 16 bytes at any byte offset b, as four words.
fn w_quad_at(b: u32) -> vec4u {
  let k = b >> 2u;
  let sh = (b & 3u) * 8u;
  let w0 = w_word(k);
  let w1 = w_word(k + 1u);
  let w2 = w_word(k + 2u);
  let w3 = w_word(k + 3u);
  let w4 = w_word(k + 4u);  // past the data when aligned (robust access keeps the last one in bounds)
  return vec4u(w_funnel(w0, w1, sh), w_funnel(w1, w2, sh), w_funnel(w2, w3, sh), w_funnel(w3, w4, sh));
}
// The int8 paths' lookup (matvec, matvec_tokens, gemm_q8 through the dotq8 snippets' w_load): a code
// byte b to both its levels, t[b & 15] in bits 0..7 and t[b >> 4] in bits 16..23, from a table the
// workgroup fills once (w_prologue). Indexed by a computed value it stays in shared memory, unlike a
// vector; a unit takes 16 loads of it and ~64 shifts, masks and ors, where w_lookup4 takes ~400 ops.
// The f32 paths (w_unit: embed, gemm.wgsl) keep w_lookup4 and need no prologue.
var<workgroup> w_pairs: array<u32, 256>;
// Code i's byte in table t, by w_lookup4's selects.
fn w_level(i: u32, t: vec4u) -> u32 {
  let b2 = (i & 4u) != 0u;
  return (select(select(t.x, t.y, b2), select(t.z, t.w, b2), (i & 8u) != 0u) >> ((i & 3u) * 8u)) & 0xFFu;
}
// Every thread of the workgroup calls it (a barrier), before anything reads w_pairs or returns early.
fn w_fill_pairs(lid: u32, threads: u32, t: vec4u) {
  for (var b = lid; b < 256u; b += threads) { w_pairs[b] = w_level(b & 15u, t) | (w_level(b >> 4u, t) << 16u); }
  workgroupBarrier();
}
// w_levels through w_pairs: 16 code bytes to the levels of elements 0..15 ([0]) and 16..31 ([1]).
// Two neighbouring bytes' pairs, the second shifted up a byte, are four levels (elements j, j + 1,
// j + 16, j + 17); two such words swap halves into a word of lo and one of hi.
fn w_pair_levels(q: vec4u) -> array<vec4u, 2> {
  var lo: vec4u;
  var hi: vec4u;
  for (var i = 0u; i < 4u; i++) {
    let a = w_pairs[q[i] & 0xFFu] | (w_pairs[(q[i] >> 8u) & 0xFFu] << 8u);
    let b = w_pairs[(q[i] >> 16u) & 0xFFu] | (w_pairs[q[i] >> 24u] << 8u);
    lo[i] = (a & 0xFFFFu) | (b << 16u);
    hi[i] = (a >> 16u) | (b & 0xFFFF0000u);
  }
  return array<vec4u, 2>(lo, hi);
}
// The levels -127 -104 -83 -65 -49 -35 -22 -10 1 13 25 38 53 69 89 113 as bytes (IQ4_NL and IQ4_XS).
const W_IQ4_LEVELS = vec4u(0xBFAD9881u, 0xF6EADDCFu, 0x26190D01u, 0x71594535u);
// 16 bytes of index pairs to their levels in table t: elements 0..15 ([0]) and 16..31 ([1]).
fn w_levels(q: vec4u, t: vec4u) -> array<vec4u, 2> {
  let m4 = vec4u(0x0F0F0F0Fu);
  return array<vec4u, 2>(w_lookup4(q & m4, t), w_lookup4((q >> vec4u(4u)) & m4, t));
}
