// Q5_1: blocks of 32 elements, 24 bytes = f16 scale d, f16 min m, 4 bytes of high bits, then 16 bytes
// of low nibbles, laid out as Q5_0's (weight_q5_0.wgsl); x = d * q + m. Blocks are word-aligned.
//!include weight_bytes
//!include weight_bits
fn w_row_bytes() -> u32 { return COLS / 32u * 24u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
fn w_q5_1_dm(row_byte: u32, u: u32) -> vec2f { return unpack2x16float(w_word((row_byte + u * 24u) >> 2u)); }
fn w_q5_1_codes(row_byte: u32, u: u32) -> array<vec4u, 2> {
  let k = (row_byte + u * 24u) >> 2u;
  return w_q5_join(vec4u(w_word(k + 2u), w_word(k + 3u), w_word(k + 4u), w_word(k + 5u)), w_word(k + 1u));
}
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let dm = w_q5_1_dm(row_byte, u);
  let q = w_q5_1_codes(row_byte, u);
  return w_bytes_to_floats(q[0], q[1], dm.x, dm.x, dm.y);
}
