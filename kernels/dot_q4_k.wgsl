// Dot of 32-element sub-block u of a Q4_K row (see weight_q4_k.wgsl for the layout).
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte + (u / 8u) * 144u;
  let j = u % 8u;
  let sm = q4k_scale_min(b + 4u, j);  // from weight_q4_k.wgsl
  let q = b + 16u + (j / 2u) * 32u;
  let shift = (j % 2u) * 4u;
  var s = 0.0;
  var xs = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let word = w[(q >> 2u) + i] >> shift;  // Q4_K blocks are 4-byte aligned
    let qv = vec4f(f32(word & 0xFu), f32((word >> 8u) & 0xFu), f32((word >> 16u) & 0xFu), f32((word >> 24u) & 0xFu));
    let xx = (*xu)[i];
    s += dot(qv, xx);
    xs += xx.x + xx.y + xx.z + xx.w;
  }
  return w_f16(b) * f32(sm.x) * s - w_f16(b + 2u) * f32(sm.y) * xs;
}
