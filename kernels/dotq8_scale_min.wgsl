// The int8 dot of a WUnit of unsigned codes (lo, hi) with a scale d and an offset m, x = d * q + m:
// Q4_1, Q5_1 and Q5_K (whose m is -dmin * min). The offset is applied once, to the unit's sum of x
// codes: d_x (d q.x + m s).
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
// For gemm_q8.wgsl (see dotq8_q4_0.wgsl): the codes (0..31) are staged as they are.
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.d, wu.m); }
fn w_gemm_codes(c: vec4u) -> vec4u { return c; }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return f.x * x.x * f32(lo + hi) + f.y * x.y; }
