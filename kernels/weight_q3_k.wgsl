// Q3_K: super-blocks of 256 elements, 110 bytes = 32 bytes of high bits (hmask), 64 bytes of 2-bit low
// codes, 12 bytes of 6-bit scales (16, one per 16 elements), f16 d; x = d * (scale - 32) * (q - 4),
// q = low | high << 2. Element 128n + 32s + l (l < 32) has its low bits at bits 2s of byte 32n + l of
// the low codes, its high bit at bit 4n + s of hmask byte l, and scale 8n + 2s + l / 16. Read as
// stored.
//!include weight_bytes
//!include weight_bits
fn w_row_bytes() -> u32 { return COLS / 256u * 110u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
// 6-bit scale i from the 12 scale bytes (sc: the 16 bytes at block byte 96, d in the last 4): its low
// 4 bits in a nibble of bytes 0..7 (i < 8 low nibbles, i >= 8 high), its top 2 bits in byte 8 + i % 4
// at bit 2 (i / 4).
fn w_q3_scale(sc: vec4u, i: u32) -> i32 {
  let lo = (select(sc.x, sc.y, i % 8u >= 4u) >> (8u * (i % 4u) + 4u * (i / 8u))) & 15u;
  let hi = (sc.z >> (8u * (i % 4u) + 2u * (i / 4u))) & 3u;
  return i32(lo | (hi << 4u)) - 32;
}
// Sub-block u % 8's values q - 4 (-4..3) as signed bytes, elements 0..15 in lo and 16..31 in hi, and
// the two halves' d * scale: a clear high bit puts 0xFC (-4) over the low bits, as its inverse (0 or 1
// a byte) times 0xFC, which is no more work than q itself and leaves the int8 dot no offset term.
// Blocks start at any even byte: each 16-byte run is loaded as aligned words and realigned
// (w_quad_at), which keeps neighbouring lanes of different alignments on one path.
struct W_Q3K {
  lo: vec4u,
  hi: vec4u,
  s: vec2f,
}
fn w_q3_k(row_byte: u32, u: u32) -> W_Q3K {
  let b = row_byte + (u / 8u) * 110u;
  let j = u % 8u;
  let n = j / 4u;
  let s = j % 4u;
  let m2 = vec4u(0x03030303u);
  let m1 = vec4u(0x01010101u);
  let m4 = vec4u(0xFCu);
  let lo = ((w_quad_at(b + 32u + 32u * n) >> vec4u(2u * s)) & m2) | ((~(w_quad_at(b) >> vec4u(4u * n + s)) & m1) * m4);
  let hi = ((w_quad_at(b + 48u + 32u * n) >> vec4u(2u * s)) & m2) | ((~(w_quad_at(b + 16u) >> vec4u(4u * n + s)) & m1) * m4);
  let sc = w_quad_at(b + 96u);
  let d = unpack2x16float(sc.w).x;  // bytes 108..109
  let i0 = 8u * n + 2u * s;
  return W_Q3K(lo, hi, d * vec2f(f32(w_q3_scale(sc, i0)), f32(w_q3_scale(sc, i0 + 1u))));
}
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let q = w_q3_k(row_byte, u);
  return w_bytes_to_floats(q.lo, q.hi, q.s.x, q.s.y, 0.0);
}
