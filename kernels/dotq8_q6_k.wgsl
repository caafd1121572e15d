// 32-element sub-block u of a Q6_K row (weight_q6_k.wgsl) against an int8 x unit (x_q8.wgsl). The
// 6-bit codes (0..63) are assembled a word at a time; the offset -32 and the two 16-element scales
// are applied to the two halves' integer sums.
struct WUnit {
  lo: vec4u,  // codes of elements 0..15 as bytes
  hi: vec4u,  // elements 16..31
  s0: f32,    // d * scale of elements 0..15
  s1: f32,    // d * scale of elements 16..31
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let b = row_byte + (u / 8u) * 210u;
  let jj = u % 8u;
  let n = jj / 4u;
  let k = jj % 4u;
  let ql = b + 64u * n + 32u * (k & 1u);
  let qh = b + 128u + 32u * n;
  let sc = b + 192u + 8u * n + 2u * k;
  let lo_shift = select(0u, 4u, k >= 2u);
  // ql and qh share an alignment (offsets differ by multiples of 32): one realignment shift for both.
  let sh = (ql & 3u) * 8u;
  let l0 = ql >> 2u;
  let h0 = qh >> 2u;
  var code: array<u32, 8>;
  for (var i = 0u; i < 8u; i++) {
    let lw = w_funnel(w[l0 + i], w[l0 + i + 1u], sh) >> lo_shift;
    let hw = w_funnel(w[h0 + i], w[h0 + i + 1u], sh) >> (2u * k);
    code[i] = (lw & 0x0F0F0F0Fu) | ((hw & 0x03030303u) << 4u);
  }
  let d = w_f16(b + 208u);
  return WUnit(vec4u(code[0], code[1], code[2], code[3]), vec4u(code[4], code[5], code[6], code[7]),
               d * f32(extractBits(i32(w_u8(sc)), 0u, 8u)), d * f32(extractBits(i32(w_u8(sc + 1u)), 0u, 8u)));
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
// For gemm_q8.wgsl (see dotq8_q4_0.wgsl).
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.s0, wu.s1); }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec3f) -> f32 {
  let x0 = i32(x.z);
  let x1 = i32(x.y) - x0;
  return x.x * (f.x * f32(lo - 32 * x0) + f.y * f32(hi - 32 * x1));
}
// The matvec's loop takes two units a turn: sub-blocks k and k + 2 of a 128-element half read the same
// ql bytes (low and high nibbles) and qh bytes (bits 2k and 2k + 4), so a turn loads them once.
// Turn s covers units step_unit(s, 0) and step_unit(s, 1) = that + 2.
const DOT_UNITS = 2u;
fn step_unit(s: u32, i: u32) -> u32 { return (s / 2u) * 4u + s % 2u + 2u * i; }
fn w_dot_step(row_byte: u32, s: u32, xs: ptr<function, array<XUnit, DOT_UNITS>>) -> f32 {
  let u = step_unit(s, 0u);
  let b = row_byte + (u / 8u) * 210u;
  let n = (u % 8u) / 4u;
  let k = u % 4u;  // 0 or 1
  let ql = b + 64u * n + 32u * k;
  let qh = b + 128u + 32u * n;
  let sc = b + 192u + 8u * n + 2u * k;  // sub-block k's two scales; k + 2's are 4 bytes on
  let sh = (ql & 3u) * 8u;
  let l0 = ql >> 2u;
  let h0 = qh >> 2u;
  var c0: array<u32, 8>;
  var c1: array<u32, 8>;
  for (var i = 0u; i < 8u; i++) {
    let lw = w_funnel(w[l0 + i], w[l0 + i + 1u], sh);
    let hw = w_funnel(w[h0 + i], w[h0 + i + 1u], sh) >> (2u * k);
    c0[i] = (lw & 0x0F0F0F0Fu) | ((hw & 0x03030303u) << 4u);
    c1[i] = ((lw >> 4u) & 0x0F0F0F0Fu) | (((hw >> 4u) & 0x03030303u) << 4u);
  }
  let d = w_f16(b + 208u);
  var w0 = WUnit(vec4u(c0[0], c0[1], c0[2], c0[3]), vec4u(c0[4], c0[5], c0[6], c0[7]),
                 d * f32(extractBits(i32(w_u8(sc)), 0u, 8u)), d * f32(extractBits(i32(w_u8(sc + 1u)), 0u, 8u)));
  var w1 = WUnit(vec4u(c1[0], c1[1], c1[2], c1[3]), vec4u(c1[4], c1[5], c1[6], c1[7]),
                 d * f32(extractBits(i32(w_u8(sc + 4u)), 0u, 8u)), d * f32(extractBits(i32(w_u8(sc + 5u)), 0u, 8u)));
  return w_dot_x(&w0, &((*xs)[0])) + w_dot_x(&w1, &((*xs)[1]));
}
