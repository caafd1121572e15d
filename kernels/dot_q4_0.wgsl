// Dot of Q4_0 block u (18 bytes: f16 d, 16 bytes of nibbles; byte j = element j | element j+16 << 4).
// The 16 nibble bytes span 5 words at most: loaded once, realigned with w_funnel (no branches).
fn q4_0_dot4(q: u32, i: u32, xu: ptr<function, XUnit>) -> f32 {
  let lo = vec4f(f32(q & 0xFu), f32((q >> 8u) & 0xFu), f32((q >> 16u) & 0xFu), f32((q >> 24u) & 0xFu));
  let hi = vec4f(f32((q >> 4u) & 0xFu), f32((q >> 12u) & 0xFu), f32((q >> 20u) & 0xFu), f32(q >> 28u));
  return dot(lo - 8.0, (*xu)[i]) + dot(hi - 8.0, (*xu)[4u + i]);
}
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte + u * 18u;
  let k = (b + 2u) >> 2u;
  let sh = ((b + 2u) & 3u) * 8u;
  let w0 = w[k];
  let w1 = w[k + 1u];
  let w2 = w[k + 2u];
  let w3 = w[k + 3u];
  let w4 = w[k + 4u];  // past the block when aligned (robust access keeps the last one in bounds)
  let s = q4_0_dot4(w_funnel(w0, w1, sh), 0u, xu) + q4_0_dot4(w_funnel(w1, w2, sh), 1u, xu) +
          q4_0_dot4(w_funnel(w2, w3, sh), 2u, xu) + q4_0_dot4(w_funnel(w3, w4, sh), 3u, xu);
  return w_f16(b) * s;
}
