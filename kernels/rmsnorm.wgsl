// y[t] = x[t] / sqrt(mean(x[t]^2) + EPS) * weight. One workgroup per token.
//!include common

override D: u32;
override EPS: f32;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<uniform> step: Step;

var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let t = flat_group(wid, nwg);
  if (t >= step.n_tokens) { return; }
  var ss = 0.0;
  for (var i = lid; i < D; i += 256u) { let v = x[t * D + i]; ss += v * v; }
  red[lid] = ss;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let inv = inverseSqrt(red[0] / f32(D) + EPS);
  for (var i = lid; i < D; i += 256u) { y[t * D + i] = x[t * D + i] * inv * weight[i]; }
}
