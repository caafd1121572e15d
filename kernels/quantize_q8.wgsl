// x (f32, step.n_tokens rows) -> int8 units for the matvec (x_q8.wgsl, q8_pack.wgsl), one thread
// per unit. Used where the producer of x cannot emit the units itself (see x_out_q8.wgsl).
//!include common
//!include q8_pack
override COLS: u32;

@group(0) @binding(0) var<storage, read_write> xq: array<vec4u>;
@group(0) @binding(1) var<storage, read_write> xs: array<vec2f>;
@group(0) @binding(2) var<storage, read> x: array<vec4f>;
@group(0) @binding(3) var<uniform> step: Step;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let u = flat_group(wid, nwg) * 64u + lid;  // unit u of the whole [tokens][COLS / 32]
  if (u >= step.n_tokens * (COLS / 32u)) { return; }
  var v: array<vec4f, 8>;
  for (var i = 0u; i < 8u; i++) { v[i] = x[u * 8u + i]; }
  let q = q8_pack(&v);
  xq[2u * u] = q.lo;
  xq[2u * u + 1u] = q.hi;
  xs[u] = q.ds;
}
