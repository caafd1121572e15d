// Q8_0 block u (34 bytes: f16 d, 32 int8) against an int8 x unit (x_q8.wgsl): 8 dot4I8Packed. The
// 32 bytes start 0 or 2 bytes into a word; 9 words are loaded and realigned with w_funnel.
struct WUnit {
  lo: vec4u,  // elements 0..15
  hi: vec4u,  // elements 16..31
  d: f32,
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let b = row_byte + u * 34u;
  let k = (b + 2u) >> 2u;
  let sh = ((b + 2u) & 3u) * 8u;
  var q: array<u32, 9>;  // the 9th word is past the block when aligned (robust access keeps it in bounds)
  for (var i = 0u; i < 9u; i++) { q[i] = w_word(k + i); }
  return WUnit(vec4u(w_funnel(q[0], q[1], sh), w_funnel(q[1], q[2], sh), w_funnel(q[2], q[3], sh), w_funnel(q[3], q[4], sh)),
               vec4u(w_funnel(q[4], q[5], sh), w_funnel(q[5], q[6], sh), w_funnel(q[6], q[7], sh), w_funnel(q[7], q[8], sh)),
               w_f16(b));
}
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
// For gemm_q8.wgsl (see dotq8_q4_0.wgsl).
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.d, 0.0); }
fn w_gemm_codes(c: vec4u) -> vec4u { return c; }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return f.x * x.x * f32(lo + hi); }
