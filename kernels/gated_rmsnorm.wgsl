// The output norm of a gated DeltaNet layer (Qwen3.5's RMSNormGated), per token and head of D values:
// y = x / sqrt(mean(x^2) + EPS) * w * silu(z). One workgroup a (token, head).
//!include common

override D: u32;      // the head's width (linear_value_head_dim)
override HEADS: u32;  // heads a token
override EPS: f32;
const WG = 64u;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;  // [token][HEADS][D]
@group(0) @binding(1) var<storage, read> x: array<f32>;        // [token][HEADS][D], deltanet_scan's o
@group(0) @binding(2) var<storage, read> z: array<f32>;        // [token][HEADS][D], the gate projection
@group(0) @binding(3) var<storage, read> w: array<f32>;        // [D], shared by the heads
@group(0) @binding(4) var<uniform> step: Step;

var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let g = flat_group(wid, nwg);
  if (g / HEADS >= step.n_tokens) { return; }
  let base = g * D;  // (token, head) rows are contiguous
  var ss = 0.0;
  for (var i = lid; i < D; i += WG) { ss += x[base + i] * x[base + i]; }
  red[lid] = ss;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let inv = inverseSqrt(red[0] / f32(D) + EPS);
  for (var i = lid; i < D; i += WG) {
    let zi = z[base + i];
    y[base + i] = x[base + i] * inv * w[i] * (zi / (1.0 + exp(-zi)));
  }
}
