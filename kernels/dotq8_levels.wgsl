// The int8 dot of a WUnit of signed levels (lo, hi) and one scale d: IQ4_NL, IQ4_XS, MXFP4, whose
// codes index int8 tables (weight_bits.wgsl's w_pair_levels).
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  var s = 0;
  for (var i = 0u; i < 4u; i++) {
    s += dot4I8Packed((*wu).lo[i], (*xu).lo[i]) + dot4I8Packed((*wu).hi[i], (*xu).hi[i]);
  }
  return (*wu).d * (*xu).d * f32(s);
}
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  var wu = w_load(row_byte, u);
  return w_dot_x(&wu, xu);
}
// For gemm_q8.wgsl (see dotq8_q4_0.wgsl): the levels are staged as they are.
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.d, 0.0); }
fn w_gemm_codes(c: vec4u) -> vec4u { return c; }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return f.x * x.x * f32(lo + hi); }
