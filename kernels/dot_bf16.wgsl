// Dot of 32-element unit u of a BF16 row with x: a bf16 is the top half of an f32.
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte + u * 64u;
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let p = w_u32(b + 8u * i);
    let q = w_u32(b + 8u * i + 4u);
    let wv = vec4f(bitcast<f32>(p << 16u), bitcast<f32>(p & 0xFFFF0000u),
                   bitcast<f32>(q << 16u), bitcast<f32>(q & 0xFFFF0000u));
    s += dot(wv, (*xu)[i]);
  }
  return s;
}
