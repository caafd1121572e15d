// Dot of 32-element sub-block u of a Q6_K row (weight_q6_k.wgsl) with an int8 x unit (x_q8.wgsl).
// The 6-bit codes (0..63) are assembled a word at a time; the offset -32 and the two 16-element
// scales are applied to the two halves' integer sums.
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
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
  var s0 = 0;
  var s1 = 0;
  for (var i = 0u; i < 8u; i++) {
    let lw = w_funnel(w[l0 + i], w[l0 + i + 1u], sh) >> lo_shift;
    let hw = w_funnel(w[h0 + i], w[h0 + i + 1u], sh) >> (2u * k);
    let code = (lw & 0x0F0F0F0Fu) | ((hw & 0x03030303u) << 4u);
    let p = dot4I8Packed(code, x_word(xu, i));
    if (i < 4u) { s0 += p; } else { s1 += p; }
  }
  let x0 = x_half_sum(xu, 0u);
  let x1 = i32((*xu).s) - x0;
  let d = w_f16(b + 208u) * (*xu).d;
  let c0 = f32(extractBits(i32(w_u8(sc)), 0u, 8u));
  let c1 = f32(extractBits(i32(w_u8(sc + 1u)), 0u, 8u));
  return d * (c0 * f32(s0 - 32 * x0) + c1 * f32(s1 - 32 * x1));
}
