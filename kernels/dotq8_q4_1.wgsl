// Q4_1 unit u (weight_q4_1.wgsl) against an int8 x unit (x_q8.wgsl): d_w d_x (q.x) + m d_x s, the
// min applied once to the unit's sum of x codes.
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
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  var s = 0;
  for (var i = 0u; i < 4u; i++) {
    s += dot4I8Packed((*wu).lo[i], (*xu).lo[i]) + dot4I8Packed((*wu).hi[i], (*xu).hi[i]);
  }
  return (*xu).d * ((*wu).d * f32(s) + (*wu).m * (*xu).s);
}
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  var wu = w_load(row_byte, u);
  return w_dot_x(&wu, xu);
}
// For gemm_q8.wgsl (see dotq8_q4_0.wgsl): the codes are staged as they are (0..15).
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.d, wu.m); }
fn w_gemm_codes(c: vec4u) -> vec4u { return c; }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return f.x * x.x * f32(lo + hi) + f.y * x.y; }
