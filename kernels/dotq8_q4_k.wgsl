// 32-element sub-block u of a Q4_K row (weight_q4_k.wgsl) against an int8 x unit (x_q8.wgsl):
// d_x (d*scale q.x - dmin*min s), the nibbles masked a word at a time into dot4I8Packed (the sub-block's
// 16 bytes in the upload's layout, weight_q4_k.wgsl).
struct WUnit {
  lo: vec4u,    // elements 0..15 as bytes
  hi: vec4u,    // elements 16..31
  scale: f32,   // d * scale_j
  minv: f32,    // dmin * min_j
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let b = row_byte + (u / 8u) * 144u;
  let j = u % 8u;
  // Q4_K blocks (144 bytes) and their 16-byte parts are 16-byte aligned: the header (d, dmin and the
  // 12 bytes of scales) is one load, the sub-block's codes another.
  let h = w_quad(b >> 4u);
  let sm = q4k_header_scale_min(h, j);  // from weight_q4_k.wgsl
  let c = w_quad((b >> 4u) + 1u + j);
  let m = vec4u(0x0F0F0F0Fu);
  let dd = unpack2x16float(h.x);  // d, dmin
  return WUnit(c & m, (c >> vec4u(4u)) & m, dd.x * f32(sm.x), dd.y * f32(sm.y));
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
// For gemm_q8.wgsl (see dotq8_q4_0.wgsl).
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.scale, wu.minv); }
fn w_gemm_codes(c: vec4u) -> vec4u { return c; }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return f.x * x.x * f32(lo + hi) - f.y * x.y; }
