// Q4_K: super-blocks of 256 elements, 144 bytes = f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) pairs
// for 8 sub-blocks of 32, then 128 bytes of 4-bit codes: x = d*scale_j * q - dmin*min_j. The blocks are
// rearranged on upload (engine/weights.h): scale and min of sub-block j keep their low 4 bits in byte j
// of the 12 and their top 2 bits each in nibble j of bytes 8..11; sub-block j's codes are the 16 bytes
// at 16 + 16j, byte k holding codes k (low nibble) and k + 16 (high), as Q4_0's.
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS / 256u * 144u; }
fn w_prologue(lid: u32, threads: u32) {}  // no table to fill (see weight_bits.wgsl's w_pairs)

// The 6-bit (scale, min) of sub-block j from the 12 bytes at byte s (4-byte aligned: Q4_K blocks are
// 144 bytes).
fn q4k_scale_min(s: u32, j: u32) -> vec2u {
  return q4k_header_scale_min(vec4u(0u, w_word(s >> 2u), w_word((s >> 2u) + 1u), w_word((s >> 2u) + 2u)), j);
}
// The same from the block's first 16 bytes as one 16-byte word h (d and dmin, then the 12 bytes).
fn q4k_header_scale_min(h: vec4u, j: u32) -> vec2u {
  let lo = (select(h.y, h.z, j >= 4u) >> ((j % 4u) * 8u)) & 0xFFu;
  let hi = (h.w >> (j * 4u)) & 0xFu;
  return vec2u((lo & 15u) | ((hi & 3u) << 4u), (lo >> 4u) | ((hi >> 2u) << 4u));
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
  let q = b + 16u + j * 16u;
  for (var i = 0u; i < 4u; i++) {
    let word = w_u32(q + i * 4u);
    for (var k = 0u; k < 4u; k++) {
      let byte = (word >> (k * 8u)) & 0xFFu;
      v[i * 4u + k] = scale * f32(byte & 0xFu) - minv;
      v[i * 4u + k + 16u] = scale * f32(byte >> 4u) - minv;
    }
  }
  return v;
}
