// Dot of 32-element sub-block u of a Q6_K row (see weight_q6_k.wgsl for the layout).
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte + (u / 8u) * 210u;
  let jj = u % 8u;
  let n = jj / 4u;
  let k = jj % 4u;
  let ql = b + 64u * n + 32u * (k & 1u);
  let qh = b + 128u + 32u * n;
  let sc = b + 192u + 8u * n + 2u * k;
  let lo_shift = select(0u, 4u, k >= 2u);
  var s0 = 0.0;
  var s1 = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let lw = w_u32(ql + 4u * i) >> lo_shift;
    let hw = w_u32(qh + 4u * i) >> (2u * k);
    let qv = vec4f(f32((lw & 0xFu) | ((hw & 3u) << 4u)), f32(((lw >> 8u) & 0xFu) | (((hw >> 8u) & 3u) << 4u)),
                   f32(((lw >> 16u) & 0xFu) | (((hw >> 16u) & 3u) << 4u)), f32(((lw >> 24u) & 0xFu) | (((hw >> 24u) & 3u) << 4u)));
    let d = dot(qv - 32.0, (*xu)[i]);
    if (i < 4u) { s0 += d; } else { s1 += d; }
  }
  let d = w_f16(b + 208u);
  return d * (f32(extractBits(i32(w_u8(sc)), 0u, 8u)) * s0 + f32(extractBits(i32(w_u8(sc + 1u)), 0u, 8u)) * s1);
}
