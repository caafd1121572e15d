// Q4_1: blocks of 32 elements, 20 bytes = f16 scale d, f16 min m, then 16 bytes of nibbles (byte j:
// element j in the low nibble, j + 16 in the high one); x = d * q + m. Read as stored in the GGUF.
//!include weight_bytes
//!include weight_bits
fn w_row_bytes() -> u32 { return COLS / 32u * 20u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)
// Unit u's (d, m) and its nibbles, a word per 4 bytes (blocks are 20 bytes: always word-aligned).
fn w_q4_1_dm(row_byte: u32, u: u32) -> vec2f { return unpack2x16float(w_word((row_byte + u * 20u) >> 2u)); }
fn w_q4_1_codes(row_byte: u32, u: u32) -> vec4u {
  let k = (row_byte + u * 20u) >> 2u;
  return vec4u(w_word(k + 1u), w_word(k + 2u), w_word(k + 3u), w_word(k + 4u));
}
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let dm = w_q4_1_dm(row_byte, u);
  let q = w_q4_1_codes(row_byte, u);
  let m4 = vec4u(0x0F0F0F0Fu);
  return w_bytes_to_floats(q & m4, (q >> vec4u(4u)) & m4, dm.x, dm.x, dm.y);
}
