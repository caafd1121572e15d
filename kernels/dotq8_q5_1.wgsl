// Q5_1 unit u (weight_q5_1.wgsl) against an int8 x unit (x_q8.wgsl).
struct WUnit {
  lo: vec4u,  // codes 0..31 of elements 0..15 as bytes
  hi: vec4u,  // elements 16..31
  d: f32,
  m: f32,
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let dm = w_q5_1_dm(row_byte, u);
  let q = w_q5_1_codes(row_byte, u);
  return WUnit(q[0], q[1], dm.x, dm.y);
}
//!include dotq8_scale_min
