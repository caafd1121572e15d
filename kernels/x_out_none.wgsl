// The plain variant of x_out_q8.wgsl: the output is f32 only.
const EMIT_Q8 = false;
fn store_q8(u: u32, v: ptr<function, array<vec4f, 8>>) {}
fn store_q8_word(u: u32, k: u32, w: u32) {}
fn store_q8_ds(u: u32, ds: vec2f) {}
