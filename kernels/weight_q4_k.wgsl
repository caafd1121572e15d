// Q4_K: super-blocks of 256 elements, 144 bytes = f16 d, f16 dmin, 12 bytes of packed 6-bit
// (scale, min) pairs for 8 sub-blocks of 32, then 128 bytes of nibbles. Sub-block j uses bytes
// qs[32*(j/2) ..] (low nibbles for even j, high for odd): x = d*scale_j * q - dmin*min_j.
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS / 256u * 144u; }

// The 6-bit (scale, min) of sub-block j from the 12 packed bytes at byte s.
fn q4k_scale_min(s: u32, j: u32) -> vec2u {
  if (j < 4u) { return vec2u(w_u8(s + j) & 63u, w_u8(s + j + 4u) & 63u); }
  return vec2u((w_u8(s + j + 4u) & 0xFu) | ((w_u8(s + j - 4u) >> 6u) << 4u),
               (w_u8(s + j + 4u) >> 4u) | ((w_u8(s + j) >> 6u) << 4u));
}
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  let b = row_byte + (u / 8u) * 144u;
  let j = u % 8u;
  let d = w_f16(b);
  let dmin = w_f16(b + 2u);
  let sm = q4k_scale_min(b + 4u, j);
  let scale = d * f32(sm.x);
  let minv = dmin * f32(sm.y);
  let q = b + 16u + (j / 2u) * 32u;
  let shift = (j % 2u) * 4u;
  for (var i = 0u; i < 8u; i++) {
    let word = w_u32(q + i * 4u);
    for (var k = 0u; k < 4u; k++) {
      v[i * 4u + k] = scale * f32((word >> (k * 8u + shift)) & 0xFu) - minv;
    }
  }
  return v;
}
