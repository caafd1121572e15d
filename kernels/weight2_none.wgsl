// matvec.wgsl's second weight type (W2DECL, WEIGHT2, DOT2) for the matrices that have one type, which
// is all but a two-type QKV's one-token dispatch (weight2_binding.wgsl): stubs the kernel's calls
// compile against, never called but w2_prologue, which does nothing.
const W2_TWO = false;
const W2_BINDINGS = 0u;
fn w2_row_bytes() -> u32 { return 0u; }
fn w2_prologue(lid: u32, threads: u32) {}
fn w2_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 { return 0.0; }
