// Dot of Q4_0 block u (18 bytes: f16 d, 16 bytes of nibbles; byte j = element j | element j+16 << 4).
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, array<vec4f, 8>>) -> f32 {
  let b = row_byte + u * 18u;
  var s = 0.0;
  for (var i = 0u; i < 4u; i++) {
    let q = w_u32(b + 2u + 4u * i);
    let lo = vec4f(f32(q & 0xFu), f32((q >> 8u) & 0xFu), f32((q >> 16u) & 0xFu), f32((q >> 24u) & 0xFu));
    let hi = vec4f(f32((q >> 4u) & 0xFu), f32((q >> 12u) & 0xFu), f32((q >> 20u) & 0xFu), f32(q >> 28u));
    s += dot(lo - 8.0, (*xu)[i]) + dot(hi - 8.0, (*xu)[4u + i]);
  }
  return w_f16(b) * s;
}
