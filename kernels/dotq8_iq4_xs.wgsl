// IQ4_XS sub-block u (weight_iq4_xs.wgsl) against an int8 x unit (x_q8.wgsl): int8 levels and one
// scale d * (scale_j - 32), as IQ4_NL's.
struct WUnit {
  lo: vec4u,  // levels of elements 0..15 as signed bytes
  hi: vec4u,  // elements 16..31
  d: f32,
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let q = w_pair_levels(w_iq4_xs_q(row_byte, u));  // through the table of w_prologue
  return WUnit(q[0], q[1], w_iq4_xs_d(row_byte, u));
}
//!include dotq8_levels
