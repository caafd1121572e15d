// The output of a mixture-of-experts layer: per token, the sum of its K experts' outputs weighted by
// the router (moe_route.wgsl), y[t] = sum_j wts[t, j] ys[t, j]. A thread per element.
//!include common

override D: u32;
override K: u32;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;  // [token][D]
@group(0) @binding(1) var<storage, read> ys: array<f32>;       // [token][K][D]
@group(0) @binding(2) var<storage, read> wts: array<f32>;      // [token][K]
@group(0) @binding(3) var<uniform> step: Step;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = flat_group(wid, nwg) * 64u + lid;
  let t = i / D;
  if (t >= step.n_tokens) { return; }
  var s = 0.0;
  for (var j = 0u; j < K; j++) { s += wts[t * K + j] * ys[(t * K + j) * D + i % D]; }
  y[i] = s;
}
