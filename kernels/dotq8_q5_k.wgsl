// Q5_K sub-block u (weight_q5_k.wgsl) against an int8 x unit (x_q8.wgsl): d_x (d*scale q.x -
// dmin*min s), as Q4_K's on 5-bit codes.
struct WUnit {
  lo: vec4u,    // codes 0..31 of elements 0..15 as bytes
  hi: vec4u,    // elements 16..31
  scale: f32,   // d * scale_j
  minv: f32,    // dmin * min_j
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let q = w_q5_k(row_byte, u);
  return WUnit(q.lo, q.hi, q.f.x, q.f.y);
}
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  var s = 0;
  for (var i = 0u; i < 4u; i++) {
    s += dot4I8Packed((*wu).lo[i], (*xu).lo[i]) + dot4I8Packed((*wu).hi[i], (*xu).hi[i]);
  }
  return (*xu).d * ((*wu).scale * f32(s) - (*wu).minv * (*xu).s);
}
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  var wu = w_load(row_byte, u);
  return w_dot_x(&wu, xu);
}
// For gemm_q8.wgsl (see dotq8_q4_k.wgsl).
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.scale, wu.minv); }
fn w_gemm_codes(c: vec4u) -> vec4u { return c; }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return f.x * x.x * f32(lo + hi) - f.y * x.y; }
