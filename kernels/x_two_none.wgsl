// x_q8_norm.wgsl where the matvec before stored the residual step's sum itself (y_resid.wgsl): a is
// that sum, and bindings 1 and 4 are left undeclared, which leaves room under the device's limit of
// storage buffers for a YOUT with bindings of its own (y_rope.wgsl, on a two-type QKV).
fn x_two(k: u32, a: vec4f, first_group: bool) -> vec4f { return a; }
