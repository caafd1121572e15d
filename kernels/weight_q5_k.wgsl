// Q5_K: super-blocks of 256 elements, 176 bytes = f16 d, f16 dmin, 12 bytes of 6-bit (scale, min)
// pairs for 8 sub-blocks of 32 (packed as Q4_K's), 32 bytes of high bits (byte l, bit j: element l of
// sub-block j), then 128 bytes of low nibbles (sub-blocks 2p and 2p + 1 share 32 bytes, low and high
// nibbles); x = d*scale_j * q - dmin*min_j. Read as stored: blocks and their 16-byte parts are
// 16-byte aligned (176 = 11 x 16).
//!include weight_bytes
//!include weight_bits
fn w_row_bytes() -> u32 { return COLS / 256u * 176u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
// Byte i (0..11) of the scales, from the block's first 16 bytes h (d and dmin first).
fn w_k_scale_byte(h: vec4u, i: u32) -> u32 { return (h[1u + i / 4u] >> ((i % 4u) * 8u)) & 0xFFu; }
// Sub-block j's 6-bit scale and min, as llama.cpp packs them in Q4_K and Q5_K: j < 4 in the low 6 bits
// of bytes j and j + 4; j >= 4 in nibbles of byte j + 4 with their top 2 bits in bytes j - 4 and j.
fn w_k_scale_min(h: vec4u, j: u32) -> vec2u {
  let a = w_k_scale_byte(h, j % 4u);
  let b = w_k_scale_byte(h, j % 4u + 4u);
  let c = w_k_scale_byte(h, j % 4u + 8u);
  let low = vec2u(a & 63u, b & 63u);
  let high = vec2u((c & 15u) | ((a >> 6u) << 4u), (c >> 4u) | ((b >> 6u) << 4u));
  return select(low, high, j >= 4u);
}
// Sub-block u % 8's codes (0..31) as bytes, elements 0..15 in [0] and 16..31 in [1], and
// (d * scale, dmin * min).
struct W_Q5K {
  lo: vec4u,
  hi: vec4u,
  f: vec2f,
}
fn w_q5_k(row_byte: u32, u: u32) -> W_Q5K {
  let q = (row_byte + (u / 8u) * 176u) >> 4u;  // the block's first 16-byte word
  let j = u % 8u;
  let h = w_quad(q);
  let sm = w_k_scale_min(h, j);
  let dd = unpack2x16float(h.x);
  let sh = vec4u(4u * (j % 2u));
  let m4 = vec4u(0x0F0F0F0Fu);
  let m1 = vec4u(0x01010101u);
  let lo = ((w_quad(q + 3u + 2u * (j / 2u)) >> sh) & m4) | (((w_quad(q + 1u) >> vec4u(j)) & m1) << vec4u(4u));
  let hi = ((w_quad(q + 4u + 2u * (j / 2u)) >> sh) & m4) | (((w_quad(q + 2u) >> vec4u(j)) & m1) << vec4u(4u));
  return W_Q5K(lo, hi, vec2f(dd.x * f32(sm.x), dd.y * f32(sm.y)));
}
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let q = w_q5_k(row_byte, u);
  return w_bytes_to_floats(q.lo, q.hi, q.f.x, q.f.x, -q.f.y);
}
