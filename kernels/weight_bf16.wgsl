// BF16 weights: the top 16 bits of an f32.
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS * 2u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  if (COLS % 8u == 0u && u * 32u + 32u <= COLS) {
    // A whole unit on a 16-byte boundary (rows of 8k columns): its 64 bytes in four loads, not 32.
    let q0 = (row_byte + u * 64u) / 16u;
    for (var j = 0u; j < 4u; j++) {
      let q = w_quad(q0 + j);
      for (var c = 0u; c < 4u; c++) {
        v[8u * j + 2u * c] = bitcast<f32>(q[c] << 16u);
        v[8u * j + 2u * c + 1u] = bitcast<f32>(q[c] & 0xFFFF0000u);
      }
    }
    return v;
  }
  for (var i = 0u; i < 32u; i++) {
    let e = u * 32u + i;
    if (e < COLS) { v[i] = bitcast<f32>(w_u16(row_byte + e * 2u) << 16u); }
  }
  return v;
}
