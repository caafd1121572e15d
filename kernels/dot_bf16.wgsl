// Dot of 32-element unit u of a BF16 row with x: a bf16 is the top half of an f32. The matvec's rows
// are whole units (COLS % 32 == 0), so a unit is 64 bytes on a 64-byte boundary: four 16-byte loads.
fn bf16_pair(p: u32) -> vec2f { return vec2f(bitcast<f32>(p << 16u), bitcast<f32>(p & 0xFFFF0000u)); }
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let q0 = (row_byte + u * 64u) / 16u;
  var s = 0.0;
  for (var j = 0u; j < 4u; j++) {
    let q = w_quad(q0 + j);
    s += dot(vec4f(bf16_pair(q.x), bf16_pair(q.y)), (*xu)[2u * j]);
    s += dot(vec4f(bf16_pair(q.z), bf16_pair(q.w)), (*xu)[2u * j + 1u]);
  }
  return s;
}
