// Dot of 32-element unit u of an F32 row with x (the unit's 8 vec4s). The matvec's rows are whole
// units (COLS % 32 == 0), so a unit is 128 bytes on a 128-byte boundary: eight 16-byte loads.
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let q0 = (row_byte + u * 128u) / 16u;
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) { s += dot(bitcast<vec4f>(w_quad(q0 + i)), (*xu)[i]); }
  return s;
}
