// Dot of Q8_0 block u (34 bytes: f16 d, 32 int8) with x.
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte + u * 34u;
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let q = bitcast<i32>(w_u32(b + 2u + 4u * i));
    let wv = vec4f(f32(extractBits(q, 0u, 8u)), f32(extractBits(q, 8u, 8u)),
                   f32(extractBits(q, 16u, 8u)), f32(extractBits(q, 24u, 8u)));
    s += dot(wv, (*xu)[i]);
  }
  return w_f16(b) * s;
}
