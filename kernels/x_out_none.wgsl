// The plain variant of x_out_q8.wgsl: the output is f32 only.
const EMIT_Q8 = false;
fn store_q8(u: u32, v: ptr<function, array<vec4f, 8>>) {}
