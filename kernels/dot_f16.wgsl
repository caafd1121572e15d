// Dot of 32-element unit u of an F16 row with x: two halves per u32.
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte + u * 64u;
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let lo = unpack2x16float(w_u32(b + 8u * i));
    let hi = unpack2x16float(w_u32(b + 8u * i + 4u));
    s += dot(vec4f(lo, hi), (*xu)[i]);
  }
  return s;
}
