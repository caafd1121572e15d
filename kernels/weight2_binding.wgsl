// matvec.wgsl's second weight type is real (a two-type QKV's one-token dispatch: WEIGHT2 and DOT2 are
// second copies of a weight snippet, Kernels::compose): its rows, bound after x's bindings (the
// kernel's XOUT is then x_out_none, which binds nothing).
const W2_TWO = true;
const W2_BINDINGS = 1u;
@group(0) @binding(X_BINDINGS) var<storage, read> w2: array<vec4u>;
