// Q4_0 block u against an int8 x unit (x_q8.wgsl). Word i of the nibbles holds elements 4i..4i+3 in
// its low nibbles and 4i+16.. in its high ones; the offset -8 is folded in once: d_w d_x (q.x - 8 s).
struct WUnit {
  lo: vec4u,  // elements 0..15 as bytes 0..15
  hi: vec4u,  // elements 16..31
  d: f32,
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let d = w_f16(w_d_byte(row_byte, u));
  var q: vec4u;
  if (W_SPLIT) {  // aligned nibbles
    let k = (row_byte + u * 16u) >> 2u;
    q = w_quad(k >> 2u);  // rows of 256k columns: 16-byte aligned
  } else {
    let b = row_byte + u * 18u;
    let k = (b + 2u) >> 2u;
    let sh = ((b + 2u) & 3u) * 8u;
    let w0 = w_word(k);
    let w1 = w_word(k + 1u);
    let w2 = w_word(k + 2u);
    let w3 = w_word(k + 3u);
    let w4 = w_word(k + 4u);  // past the block when aligned (robust access keeps the last one in bounds)
    q = vec4u(w_funnel(w0, w1, sh), w_funnel(w1, w2, sh), w_funnel(w2, w3, sh), w_funnel(w3, w4, sh));
  }
  return WUnit(q & vec4u(0x0F0F0F0Fu), (q >> vec4u(4u)) & vec4u(0x0F0F0F0Fu), d);
}
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  let lo = (*wu).lo;
  let hi = (*wu).hi;
  let xl = (*xu).lo;
  let xh = (*xu).hi;
  let s = dot4I8Packed(lo.x, xl.x) + dot4I8Packed(lo.y, xl.y) + dot4I8Packed(lo.z, xl.z) + dot4I8Packed(lo.w, xl.w) +
          dot4I8Packed(hi.x, xh.x) + dot4I8Packed(hi.y, xh.y) + dot4I8Packed(hi.z, xh.z) + dot4I8Packed(hi.w, xh.w);
  return (*wu).d * (*xu).d * (f32(s) - 8.0 * (*xu).s);
}
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  var wu = w_load(row_byte, u);
  return w_dot_x(&wu, xu);
}
// For gemm_q8.wgsl, which keeps units in workgroup memory: the unit's floats, its codes as staged
// there, and the dot from the integer half-sums and the token's (d, d x sum of q). The GEMM stages
// signed codes, q - 8 in each byte (120 + q never carries, and flipping the top bit takes 128 off), so
// the offset costs no float work per (row, token) pair.
fn w_floats(wu: WUnit) -> vec2f { return vec2f(wu.d, 0.0); }
fn w_gemm_codes(c: vec4u) -> vec4u { return (c + vec4u(0x78787878u)) ^ vec4u(0x80808080u); }
fn w_combine(f: vec2f, lo: i32, hi: i32, x: vec2f) -> f32 { return f.x * x.x * f32(lo + hi); }
