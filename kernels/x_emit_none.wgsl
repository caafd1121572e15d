// The plain variant of x_emit_q8.wgsl: x's units stay in the workgroup.
const X_EMIT_BINDINGS = 0u;
fn x_emit(lid: u32, r: f32) {}
