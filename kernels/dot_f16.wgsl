// Dot of 32-element unit u of an F16 row with x: two halves per u32. The matvec's rows are whole
// units (COLS % 32 == 0), so a unit is 64 bytes on a 64-byte boundary: four 16-byte loads.
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let q0 = (row_byte + u * 64u) / 16u;
  var s = 0.0;
  for (var j = 0u; j < 4u; j++) {
    let q = w_quad(q0 + j);
    s += dot(vec4f(unpack2x16float(q.x), unpack2x16float(q.y)), (*xu)[2u * j]);
    s += dot(vec4f(unpack2x16float(q.z), unpack2x16float(q.w)), (*xu)[2u * j + 1u]);
  }
  return s;
}
