// Q6_K: super-blocks of 256 elements, 210 bytes: 6-bit codes q (0..63), 16 int8 scales (one per 16
// elements), f16 d; x = d * scale * (q - 32). The blocks are rearranged on upload (engine/gpu_layout.h):
// sub-block j (32 elements) is 24 bytes at 24j: 16 bytes of low nibbles (byte k: codes k and k + 16),
// then a word of high bit pairs for codes 0..15 and one for 16..31 (code 4m + b's pair at bits
// 8b + 2m); the scales follow the 192 bytes; d comes last, or first when the block starts 2 bytes past
// a word, so that codes and scales start on a word.
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS / 256u * 210u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
// Byte offsets of block blk of a row: its sub-blocks, and d.
fn q6_codes(row_byte: u32, blk: u32) -> u32 {
  let b = row_byte + blk * 210u;
  return b + (b & 2u);
}
fn q6_d(row_byte: u32, blk: u32) -> u32 {
  let b = row_byte + blk * 210u;
  return select(b + 208u, b, (b & 2u) != 0u);
}
// Sub-block j's codes, four to a word: elements 0..15 in lo, 16..31 in hi; and its two scales times d.
struct Q6Unit {
  lo: vec4u,
  hi: vec4u,
  s: vec2f,
}
fn q6_unit(row_byte: u32, u: u32) -> Q6Unit {
  let c = q6_codes(row_byte, u / 8u);
  let j = u % 8u;
  let k = (c + 24u * j) >> 2u;
  let l = vec4u(w_word(k), w_word(k + 1u), w_word(k + 2u), w_word(k + 3u));
  let h0 = w_word(k + 4u);
  let h1 = w_word(k + 5u);
  let sw = w_word((c + 192u + 2u * j) >> 2u) >> ((j % 2u) * 16u);  // its two int8 scales
  let d = w_f16(q6_d(row_byte, u / 8u));
  let m4 = vec4u(0x0F0F0F0Fu);
  let m2 = vec4u(0x03030303u);
  let shifts = vec4u(0u, 2u, 4u, 6u);
  return Q6Unit((l & m4) | (((vec4u(h0) >> shifts) & m2) << vec4u(4u)),
                ((l >> vec4u(4u)) & m4) | (((vec4u(h1) >> shifts) & m2) << vec4u(4u)),
                d * vec2f(f32(extractBits(i32(sw), 0u, 8u)), f32(extractBits(i32(sw), 8u, 8u))));
}
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  let q = q6_unit(row_byte, u);
  for (var m = 0u; m < 4u; m++) {
    for (var b = 0u; b < 4u; b++) {
      v[4u * m + b] = q.s.x * (f32((q.lo[m] >> (8u * b)) & 0xFFu) - 32.0);
      v[16u + 4u * m + b] = q.s.y * (f32((q.hi[m] >> (8u * b)) & 0xFFu) - 32.0);
    }
  }
  return v;
}
