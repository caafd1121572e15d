// Q2_K: super-blocks of 256 elements, 84 bytes = 16 scale bytes (low nibble: scale, high: min; one per
// 16 elements), 64 bytes of 2-bit codes, f16 d, f16 dmin; x = d * scale * q - dmin * min. Element
// 128n + 32s + l (l < 32) has its code at bits 2s of byte 32n + l of the codes and scale byte
// 8n + 2s + l / 16. Blocks are word-aligned. No int8 dot: its per-16 mins need per-16 sums of x,
// which the GEMM's x units do not carry, so it runs on f32 x (dot_q2_k.wgsl in decode).
//!include weight_bytes
//!include weight_bits
fn w_row_bytes() -> u32 { return COLS / 256u * 84u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let b = row_byte + (u / 8u) * 84u;
  let j = u % 8u;
  let n = j / 4u;
  let s = j % 4u;
  let dd = unpack2x16float(w_word((b + 80u) >> 2u));  // d, dmin
  let sc = w_u16(b + 8u * n + 2u * s);  // the two halves' scale bytes
  var lo: vec4u;
  var hi: vec4u;
  let k = (b + 16u + 32u * n) >> 2u;
  for (var i = 0u; i < 4u; i++) {
    lo[i] = (w_word(k + i) >> (2u * s)) & 0x03030303u;
    hi[i] = (w_word(k + 4u + i) >> (2u * s)) & 0x03030303u;
  }
  var v = w_bytes_to_floats(lo, hi, dd.x * f32(sc & 15u), dd.x * f32((sc >> 8u) & 15u), 0.0);
  let m0 = dd.y * f32((sc >> 4u) & 15u);
  let m1 = dd.y * f32(sc >> 12u);
  for (var i = 0u; i < 16u; i++) {
    v[i] -= m0;
    v[16u + i] -= m1;
  }
  return v;
}
