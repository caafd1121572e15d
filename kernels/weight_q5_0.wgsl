// Q5_0: blocks of 32 elements, 22 bytes = f16 scale d, 4 bytes of high bits (bit j: element j's), then
// 16 bytes of low nibbles (byte j: element j low, j + 16 high); x = d * (q - 16). Read as stored: a
// block starts 0 or 2 bytes into a word, so its words are realigned (w_funnel).
//!include weight_bytes
//!include weight_bits
fn w_row_bytes() -> u32 { return COLS / 32u * 22u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
fn w_q5_0_d(row_byte: u32, u: u32) -> f32 { return w_f16(row_byte + u * 22u); }
// Unit u's 5-bit codes (0..31) as bytes: elements 0..15 in [0], 16..31 in [1].
fn w_q5_0_codes(row_byte: u32, u: u32) -> array<vec4u, 2> {
  let b = row_byte + u * 22u + 2u;
  let k = b >> 2u;
  let sh = (b & 3u) * 8u;
  var wd: array<u32, 6>;
  for (var i = 0u; i < 6u; i++) { wd[i] = w_word(k + i); }  // the 6th is past the block when aligned
  let qh = w_funnel(wd[0], wd[1], sh);
  let qs = vec4u(w_funnel(wd[1], wd[2], sh), w_funnel(wd[2], wd[3], sh), w_funnel(wd[3], wd[4], sh),
                 w_funnel(wd[4], wd[5], sh));
  return w_q5_join(qs, qh);
}
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let d = w_q5_0_d(row_byte, u);
  let q = w_q5_0_codes(row_byte, u);
  return w_bytes_to_floats(q[0], q[1], d, d, -16.0 * d);
}
