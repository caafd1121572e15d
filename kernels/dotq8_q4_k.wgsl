// Dot of 32-element sub-block u of a Q4_K row (weight_q4_k.wgsl) with an int8 x unit (x_q8.wgsl):
// d*scale*d_x*(q.x) - dmin*min*d_x*s, the nibbles masked a word at a time into dot4I8Packed.
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte + (u / 8u) * 144u;
  let j = u % 8u;
  let sm = q4k_scale_min(b + 4u, j);
  let q = ((b + 16u) >> 2u) + (j / 2u) * 8u;  // Q4_K blocks are 4-byte aligned
  let shift = (j % 2u) * 4u;
  var s = 0;
  for (var i = 0u; i < 8u; i++) {
    s += dot4I8Packed((w[q + i] >> shift) & 0x0F0F0F0Fu, x_word(xu, i));
  }
  let dx = (*xu).d;
  return w_f16(b) * f32(sm.x) * dx * f32(s) - w_f16(b + 2u) * f32(sm.y) * dx * (*xu).s;
}
