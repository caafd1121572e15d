// Q4_K: super-blocks of 256 elements, 144 bytes = f16 d, f16 dmin, 12 bytes of packed 6-bit
// (scale, min) pairs for 8 sub-blocks of 32, then 128 bytes of nibbles. Sub-block j uses bytes
// qs[32*(j/2) ..] (low nibbles for even j, high for odd): x = d*scale_j * q - dmin*min_j.
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS / 256u * 144u; }

// The 6-bit (scale, min) of sub-block j from the 12 packed bytes at byte s (4-byte aligned: Q4_K blocks
// are 144 bytes). Sub-blocks 0..3 keep them in the low 6 bits of bytes j and j+4; 4..7 in the nibbles of
// byte j+4 with their top 2 bits in the high bits of bytes j-4 and j. Both are computed and one is
// selected: the lanes of a matvec take different sub-blocks, and an `if` here made them diverge.
fn q4k_scale_min(s: u32, j: u32) -> vec2u {
  let sh = (j & 3u) * 8u;
  let a = (w[s >> 2u] >> sh) & 0xFFu;          // byte j & 3
  let b = (w[(s >> 2u) + 1u] >> sh) & 0xFFu;   // byte (j & 3) + 4
  let c = (w[(s >> 2u) + 2u] >> sh) & 0xFFu;   // byte (j & 3) + 8
  let low = vec2u(a & 63u, b & 63u);
  let high = vec2u((c & 0xFu) | ((a >> 6u) << 4u), (c >> 4u) | ((b >> 6u) << 4u));
  return select(low, high, j >= 4u);
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
