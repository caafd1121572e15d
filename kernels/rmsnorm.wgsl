// y[t] = x[t] / sqrt(mean(x[t]^2) + EPS) * weight. One workgroup per token.
//!include common
//!include XOUT

override D: u32;
override EPS: f32;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<uniform> step: Step;
const XQ_BINDING = 4u;

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
  if (EMIT_Q8) {  // passes short enough for the matvec (GraphBuilder)
    storageBarrier();
    for (var u = lid; u < D / 32u; u += 256u) {
      var v: array<vec4f, 8>;
      for (var i = 0u; i < 8u; i++) {
        let e = t * D + u * 32u + i * 4u;
        v[i] = vec4f(y[e], y[e + 1u], y[e + 2u], y[e + 3u]);
      }
      store_q8(t * (D / 32u) + u, &v);
    }
  }
}
