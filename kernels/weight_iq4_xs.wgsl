// IQ4_XS: super-blocks of 256 elements, 136 bytes = f16 d, 2 bytes of scales' top bits, 4 bytes of
// scales' low nibbles, then 128 bytes of 4-bit level indices (sub-block j of 32: 16 bytes at 16j,
// byte k: element k low, k + 16 high); x = d * (scale_j - 32) * level (IQ4_NL's levels), scale_j 6 bits:
// nibble j of the low bytes, bits 2j of the top ones. Blocks are 8-byte aligned.
//!include weight_bytes
//!include weight_bits
fn w_iq4_xs_d(row_byte: u32, u: u32) -> f32 {
  let b = row_byte + (u / 8u) * 136u;
  let j = u % 8u;
  let h = w_word(b >> 2u);  // d, then the top bits
  let ls = ((w_word((b >> 2u) + 1u) >> (4u * j)) & 15u) | (((h >> (16u + 2u * j)) & 3u) << 4u);
  return unpack2x16float(h).x * f32(i32(ls) - 32);
}
fn w_iq4_xs_q(row_byte: u32, u: u32) -> vec4u {  // index pairs
  let k = (row_byte + (u / 8u) * 136u + 8u + 16u * (u % 8u)) >> 2u;
  return vec4u(w_word(k), w_word(k + 1u), w_word(k + 2u), w_word(k + 3u));
}
fn w_row_bytes() -> u32 { return COLS / 256u * 136u; }
fn w_prologue(lid: u32, threads: u32) { w_fill_pairs(lid, threads, W_IQ4_LEVELS); }
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let d = w_iq4_xs_d(row_byte, u);
  let q = w_levels(w_iq4_xs_q(row_byte, u), W_IQ4_LEVELS);
  return w_bytes_to_floats(q[0], q[1], d, d, 0.0);
}
