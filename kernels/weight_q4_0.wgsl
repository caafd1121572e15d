// Q4_0: blocks of 32 elements, 18 bytes = f16 scale d, then 16 bytes of nibbles.
// Byte j holds element j (low nibble) and element j+16 (high nibble); x = d * (nibble - 8).
// Rows of 256k columns are split on upload (engine/weights.h): the row's 16-byte nibble blocks, then
// its scales.
//!include weight_bytes
override W_SPLIT: bool = COLS % 256u == 0u;
fn w_row_bytes() -> u32 { return COLS / 32u * 18u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
// Byte offsets of unit u's scale and nibbles in a row.
fn w_d_byte(row_byte: u32, u: u32) -> u32 { return select(row_byte + u * 18u, row_byte + COLS / 2u + u * 2u, W_SPLIT); }
fn w_q_byte(row_byte: u32, u: u32) -> u32 { return select(row_byte + u * 18u + 2u, row_byte + u * 16u, W_SPLIT); }
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  let d = w_f16(w_d_byte(row_byte, u));
  let b = w_q_byte(row_byte, u);
  for (var j = 0u; j < 4u; j++) {
    let q = w_u32(b + j * 4u);
    for (var k = 0u; k < 4u; k++) {
      let byte = (q >> (k * 8u)) & 0xFFu;
      v[j * 4u + k] = d * (f32(byte & 0xFu) - 8.0);
      v[j * 4u + k + 16u] = d * (f32(byte >> 4u) - 8.0);
    }
  }
  return v;
}
