// Q5_0 unit u (weight_q5_0.wgsl) against an int8 x unit (x_q8.wgsl): the offset -16 folded in once,
// d_w d_x (q.x - 16 s), as Q4_0's -8.
struct WUnit {
  lo: vec4u,  // codes 0..31 of elements 0..15 as bytes
  hi: vec4u,  // elements 16..31
  d: f32,
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let q = w_q5_0_codes(row_byte, u);
  return WUnit(q[0], q[1], w_q5_0_d(row_byte, u));
}
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  var s = 0;
  for (var i = 0u; i < 4u; i++) {
    s += dot4I8Packed((*wu).lo[i], (*xu).lo[i]) + dot4I8Packed((*wu).hi[i], (*xu).hi[i]);
  }
  return (*wu).d * (*xu).d * (f32(s) - 16.0 * (*xu).s);
}
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  var wu = w_load(row_byte, u);
  return w_dot_x(&wu, xu);
}
// For gemm_q8.wgsl: signed codes q - 16 in each byte (112 + q never carries; the top bit's flip takes
// 128 off), as dotq8_q4_0.wgsl.
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.d, 0.0); }
fn w_gemm_codes(c: vec4u) -> vec4u { return (c + vec4u(0x70707070u)) ^ vec4u(0x80808080u); }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return f.x * x.x * f32(lo + hi); }
