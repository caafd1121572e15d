// Dot of 32-element unit u of an F32 row with x (the unit's 8 vec4s).
alias WUnit = array<vec4f, 8>;
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let b = row_byte / 4u + u * 32u;
  var v: WUnit;
  for (var i = 0u; i < 8u; i++) {
    v[i] = vec4f(bitcast<f32>(w[b + 4u * i]), bitcast<f32>(w[b + 4u * i + 1u]),
                 bitcast<f32>(w[b + 4u * i + 2u]), bitcast<f32>(w[b + 4u * i + 3u]));
  }
  return v;
}
fn w_dot_x(wu: ptr<function, WUnit>, xu: ptr<function, XUnit>) -> f32 {
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) { s += dot((*wu)[i], (*xu)[i]); }
  return s;
}
