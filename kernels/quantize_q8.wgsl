// One token's x (f32) -> int8 units for the matvec (x_q8.wgsl, q8_pack.wgsl), one thread per unit.
// Used where the producer of x cannot emit the units itself (see x_out_q8.wgsl).
//!include q8_pack
override COLS: u32;

@group(0) @binding(0) var<storage, read_write> xq: array<vec4u>;
@group(0) @binding(1) var<storage, read_write> xs: array<vec2f>;
@group(0) @binding(2) var<storage, read> x: array<vec4f>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let u = gid.x;
  if (u >= COLS / 32u) { return; }
  var v: array<vec4f, 8>;
  for (var i = 0u; i < 8u; i++) { v[i] = x[u * 8u + i]; }
  let q = q8_pack(&v);
  xq[2u * u] = q.lo;
  xq[2u * u + 1u] = q.hi;
  xs[u] = q.ds;
}
