// Q3_K sub-block u (weight_q3_k.wgsl) against an int8 x unit (x_q8.wgsl): two 16-element scales, as
// Q6_K's, but the codes come signed (q - 4), so no sum of x corrects an offset.
struct WUnit {
  lo: vec4u,  // q - 4 of elements 0..15 as signed bytes
  hi: vec4u,  // elements 16..31
  s0: f32,    // d * (scale - 32) of elements 0..15
  s1: f32,    // of elements 16..31
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let q = w_q3_k(row_byte, u);
  return WUnit(q.lo, q.hi, q.s.x, q.s.y);
}
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  var s0 = 0;
  var s1 = 0;
  for (var i = 0u; i < 4u; i++) {
    s0 += dot4I8Packed((*wu).lo[i], (*xu).lo[i]);
    s1 += dot4I8Packed((*wu).hi[i], (*xu).hi[i]);
  }
  return (*xu).d * ((*wu).s0 * f32(s0) + (*wu).s1 * f32(s1));
}
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  var wu = w_load(row_byte, u);
  return w_dot_x(&wu, xu);
}
// For gemm_q8.wgsl (see dotq8_q4_0.wgsl): the codes are staged as they are, already signed.
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.s0, wu.s1); }
fn w_gemm_codes(c: vec4u) -> vec4u { return c; }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return x.x * (f.x * f32(lo) + f.y * f32(hi)); }
