// Dot of 32-element unit u of an F32 row with x (the unit's 8 vec4s).
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte / 4u + u * 32u;
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let wv = vec4f(bitcast<f32>(w_word(b + 4u * i)), bitcast<f32>(w_word(b + 4u * i + 1u)),
                   bitcast<f32>(w_word(b + 4u * i + 2u)), bitcast<f32>(w_word(b + 4u * i + 3u)));
    s += dot(wv, (*xu)[i]);
  }
  return s;
}
