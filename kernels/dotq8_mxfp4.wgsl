// MXFP4 unit u (weight_mxfp4.wgsl) against an int8 x unit (x_q8.wgsl): the doubled E2M1 values are
// int8 levels with one scale, as IQ4_NL's.
struct WUnit {
  lo: vec4u,  // doubled E2M1 values of elements 0..15 as signed bytes
  hi: vec4u,  // elements 16..31
  d: f32,
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let q = w_pair_levels(w_mxfp4_q(row_byte, u));  // through the table of w_prologue
  return WUnit(q[0], q[1], w_mxfp4_d(row_byte, u));
}
//!include dotq8_levels
