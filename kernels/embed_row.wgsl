// One row of the embedding table (WEIGHT at binding `w`), dequantized into x[base, base + COLS) by
// `threads` threads starting at lid. The including kernel declares COLS, x and w. embed.wgsl makes a
// pass's rows with it; argmax.wgsl (next_embed.wgsl) the next step's row, once it has chosen the token.
//!include WEIGHT
fn embed_row(base: u32, row_byte: u32, lid: u32, threads: u32) {
  for (var u = lid; u < (COLS + 31u) / 32u; u += threads) {
    let v = w_unit(row_byte, u);
    for (var i = 0u; i < min(32u, COLS - u * 32u); i++) { x[base + u * 32u + i] = v[i]; }
  }
}
