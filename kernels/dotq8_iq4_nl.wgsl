// IQ4_NL unit u (weight_iq4_nl.wgsl) against an int8 x unit (x_q8.wgsl): the levels are int8, so the
// dot is Q8_0's: d_w d_x (level.x).
struct WUnit {
  lo: vec4u,  // levels of elements 0..15 as signed bytes
  hi: vec4u,  // elements 16..31
  d: f32,
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let q = w_pair_levels(w_iq4_nl_q(row_byte, u));  // through the table of w_prologue
  return WUnit(q[0], q[1], w_iq4_nl_d(row_byte, u));
}
//!include dotq8_levels
