// Dot of 32-element unit u of a BF16 row with x: a bf16 is the top half of an f32.
alias WUnit = array<vec2u, 8>;
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let b = row_byte + u * 64u;
  var v: WUnit;
  for (var i = 0u; i < 8u; i++) { v[i] = vec2u(w_u32(b + 8u * i), w_u32(b + 8u * i + 4u)); }
  return v;
}
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let p = (*wu)[i].x;
    let q = (*wu)[i].y;
    let wv = vec4f(bitcast<f32>(p << 16u), bitcast<f32>(p & 0xFFFF0000u),
                   bitcast<f32>(q << 16u), bitcast<f32>(q & 0xFFFF0000u));
    s += dot(wv, (*xu)[i]);
  }
  return s;
}
