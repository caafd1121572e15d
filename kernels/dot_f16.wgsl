// Dot of 32-element unit u of an F16 row with x: two halves per u32, kept packed until the dot.
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
    s += dot(vec4f(unpack2x16float((*wu)[i].x), unpack2x16float((*wu)[i].y)), (*xu)[i]);
  }
  return s;
}
