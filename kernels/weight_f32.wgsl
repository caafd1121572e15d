// F32 weights: COLS floats per row. w_unit returns elements [32u, 32u+32) of a row, zero past COLS.
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS * 4u; }
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  let base = row_byte / 4u + u * 32u;
  for (var i = 0u; i < 32u; i++) {
    if (u * 32u + i < COLS) { v[i] = bitcast<f32>(w_word(base + i)); }
  }
  return v;
}
