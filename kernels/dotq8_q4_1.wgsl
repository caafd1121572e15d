// Q4_1 unit u (weight_q4_1.wgsl) against an int8 x unit (x_q8.wgsl).
struct WUnit {
  lo: vec4u,  // elements 0..15 as bytes 0..15 (nibbles, 0..15)
  hi: vec4u,  // elements 16..31
  d: f32,
  m: f32,
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let dm = w_q4_1_dm(row_byte, u);
  let q = w_q4_1_codes(row_byte, u);
  let m4 = vec4u(0x0F0F0F0Fu);
  return WUnit(q & m4, (q >> vec4u(4u)) & m4, dm.x, dm.y);
}
//!include dotq8_scale_min
