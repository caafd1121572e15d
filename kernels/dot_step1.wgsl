// One unit per turn of matvec.wgsl's loop, for weight types whose units share no bytes (dotq8_q6_k.wgsl
// takes two at a time).
const DOT_UNITS = 1u;
fn step_unit(s: u32, i: u32) -> u32 { return s; }
fn w_dot_step(row_byte: u32, s: u32, xs: ptr<function, array<XUnit, DOT_UNITS>>) -> f32 {
  return w_dot(row_byte, s, &((*xs)[0]));
}
