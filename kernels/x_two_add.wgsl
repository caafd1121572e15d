// x_q8_norm.wgsl's residual step made in the workgroup: x = a + b, stored by the first workgroup as
// the new residual stream (bindings 1 and 4; 3 is a).
@group(0) @binding(1) var<storage, read_write> xsum: array<vec4f>;
@group(0) @binding(4) var<storage, read> xb: array<vec4f>;
fn x_two(k: u32, a: vec4f, first_group: bool) -> vec4f {
  let s = a + xb[k];
  if (first_group) { xsum[k] = s; }
  return s;
}
