// Dot of 32-element unit u of a row with f32 x, through the weight snippet's w_unit: the decode
// matvec for quantized types without an int8 dot (Q2_K).
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let v = w_unit(row_byte, u);
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) {
    s += dot(vec4f(v[4u * i], v[4u * i + 1u], v[4u * i + 2u], v[4u * i + 3u]), (*xu)[i]);
  }
  return s;
}
