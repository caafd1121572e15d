// IQ4_NL: blocks of 32 elements, 18 bytes = f16 scale d, then 16 bytes of 4-bit indices (byte j:
// element j low, j + 16 high) into 16 non-linear int8 levels; x = d * level. Read as stored: a block
// starts 0 or 2 bytes into a word (w_quad_at realigns).
//!include weight_bytes
//!include weight_bits
fn w_row_bytes() -> u32 { return COLS / 32u * 18u; }
fn w_iq4_nl_d(row_byte: u32, u: u32) -> f32 { return w_f16(row_byte + u * 18u); }
fn w_iq4_nl_q(row_byte: u32, u: u32) -> vec4u { return w_quad_at(row_byte + u * 18u + 2u); }  // index pairs
fn w_prologue(lid: u32, threads: u32) { w_fill_pairs(lid, threads, W_IQ4_LEVELS); }
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let d = w_iq4_nl_d(row_byte, u);
  let q = w_levels(w_iq4_nl_q(row_byte, u), W_IQ4_LEVELS);
  return w_bytes_to_floats(q[0], q[1], d, d, 0.0);
}
