// Q4_0: blocks of 32 elements, 18 bytes = f16 scale d, then 16 bytes of nibbles.
// Byte j holds element j (low nibble) and element j+16 (high nibble); x = d * (nibble - 8).
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS / 32u * 18u; }
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  let b = row_byte + u * 18u;
  let d = w_f16(b);
  for (var j = 0u; j < 4u; j++) {
    let q = w_u32(b + 2u + j * 4u);
    for (var k = 0u; k < 4u; k++) {
      let byte = (q >> (k * 8u)) & 0xFFu;
      v[j * 4u + k] = d * (f32(byte & 0xFu) - 8.0);
      v[j * 4u + k + 16u] = d * (f32(byte >> 4u) - 8.0);
    }
  }
  return v;
}
