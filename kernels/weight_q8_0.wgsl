// Q8_0: blocks of 32 elements, 34 bytes = f16 scale d, then 32 int8 q; x = d * q.
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS / 32u * 34u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  let b = row_byte + u * 34u;
  let d = w_f16(b);
  for (var j = 0u; j < 8u; j++) {
    let q = bitcast<i32>(w_u32(b + 2u + j * 4u));
    for (var k = 0u; k < 4u; k++) { v[j * 4u + k] = d * f32(extractBits(q, k * 8u, 8u)); }
  }
  return v;
}
