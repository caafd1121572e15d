// 32-element sub-block u of a Q6_K row (weight_q6_k.wgsl) against an int8 x unit (x_q8.wgsl). The
// 6-bit codes (0..63) are assembled a word at a time from the upload's layout; the offset -32 and the
// two 16-element scales are applied to the two halves' integer sums.
struct WUnit {
  lo: vec4u,  // codes of elements 0..15 as bytes
  hi: vec4u,  // elements 16..31
  s0: f32,    // d * scale of elements 0..15
  s1: f32,    // d * scale of elements 16..31
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let q = q6_unit(row_byte, u);  // from weight_q6_k.wgsl
  return WUnit(q.lo, q.hi, q.s.x, q.s.y);
}
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  var s0 = 0;
  var s1 = 0;
  var x0 = 0;
  for (var i = 0u; i < 4u; i++) {
    s0 += dot4I8Packed((*wu).lo[i], (*xu).lo[i]);
    s1 += dot4I8Packed((*wu).hi[i], (*xu).hi[i]);
    x0 += dot4I8Packed((*xu).lo[i], 0x01010101u);
  }
  let x1 = i32((*xu).s) - x0;
  return (*xu).d * ((*wu).s0 * f32(s0 - 32 * x0) + (*wu).s1 * f32(s1 - 32 * x1));
}
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  var wu = w_load(row_byte, u);
  return w_dot_x(&wu, xu);
}
// For gemm_q8.wgsl (see dotq8_q4_0.wgsl): signed codes, q - 32 in each byte (96 + q never carries).
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.s0, wu.s1); }
fn w_gemm_codes(c: vec4u) -> vec4u { return (c + vec4u(0x60606060u)) ^ vec4u(0x80808080u); }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return x.x * (f.x * f32(lo) + f.y * f32(hi)); }
