// For a fused-norm matvec (x_q8_norm.wgsl) whose matrix has parts of other types after it (a Q4_K_M
// QKV: q|k in Q4_K, v in Q6_K): workgroup 0 also stores x's int8 units (x_q8.wgsl) for those parts'
// matvecs, as add_rmsnorm_q8 would have, so one-token passes skip that dispatch. The workgroup's
// units are of x * weight; rmsnorm's factor r only scales their d.
@group(0) @binding(6) var<storage, read_write> xq_made: array<vec4u>;  // bindings 0-5: matvec and x_q8_norm
@group(0) @binding(7) var<storage, read_write> xs_made: array<vec2f>;
const X_EMIT_BINDINGS = 2u;

fn x_emit(lid: u32, r: f32) {
  for (var u = lid; u < COLS / 32u; u += WG) {
    xq_made[2u * u] = xl_q[2u * u];
    xq_made[2u * u + 1u] = xl_q[2u * u + 1u];
    xs_made[u] = vec2f(xl_ds[u].x * r, xl_ds[u].y);
  }
}
