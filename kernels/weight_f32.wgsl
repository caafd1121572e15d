// F32 weights: COLS floats per row. w_unit returns elements [32u, 32u+32) of a row, zero past COLS.
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS * 4u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  let base = row_byte / 4u + u * 32u;
  if (COLS % 4u == 0u && u * 32u + 32u <= COLS) {
    // A whole unit on a 16-byte boundary (rows of 4k columns): its 128 bytes in eight loads, not 32.
    for (var j = 0u; j < 8u; j++) {
      let q = w_quad(base / 4u + j);
      for (var c = 0u; c < 4u; c++) { v[4u * j + c] = bitcast<f32>(q[c]); }
    }
    return v;
  }
  for (var i = 0u; i < 32u; i++) {
    if (u * 32u + i < COLS) { v[i] = bitcast<f32>(w_word(base + i)); }
  }
  return v;
}
