// The residual step: sum = a + b (the new residual stream), y = rmsnorm(sum) * weight. One workgroup
// per token, of WG threads (the host picks about one per 32-element unit, at most 256). Thread i owns
// units i, i + WG, ... loaded as 8 vec4s at once, and keeps its first unit in registers between the
// two passes; the thread that normalised a unit also packs its
// int8 form (XOUT). Residuals ping-pong between buffers: WebGPU forbids reading and writing one
// buffer in two bindings. Needs D % 4 == 0.
//!include common
//!include XOUT
//!include block_sum

override D: u32;
override EPS: f32;
override WG: u32 = 256u;  // a power of two

@group(0) @binding(0) var<storage, read_write> y: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> sum: array<vec4f>;
@group(0) @binding(2) var<storage, read> a: array<vec4f>;
@group(0) @binding(3) var<storage, read> b: array<vec4f>;
@group(0) @binding(4) var<storage, read> weight: array<vec4f>;
@group(0) @binding(5) var<uniform> step: Step;
const XQ_BINDING = 6u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let t = flat_group(wid, nwg);
  if (t >= step.n_tokens) { return; }
  let units = (D + 31u) / 32u;
  let quads = D / 4u;
  let base = t * quads;
  var first: array<vec4f, 8>;  // this thread's first unit
  var wfirst: array<vec4f, 8>;  // and its weights, loaded before the reduction waits
  var ss = 0.0;
  for (var u = lid; u < units; u += WG) {
    for (var i = 0u; i < 8u; i++) {
      let k = u * 8u + i;
      if (k < quads) {
        let v = a[base + k] + b[base + k];
        sum[base + k] = v;
        ss += dot(v, v);
        if (u == lid) { first[i] = v; wfirst[i] = weight[k]; }
      }
    }
  }
  let inv = inverseSqrt(block_sum(ss, lid) / f32(D) + EPS);
  for (var u = lid; u < units; u += WG) {
    var v: array<vec4f, 8>;
    for (var i = 0u; i < 8u; i++) {
      let k = u * 8u + i;
      if (k < quads) {
        var s: vec4f;
        var wt: vec4f;
        if (u == lid) { s = first[i]; wt = wfirst[i]; } else { s = sum[base + k]; wt = weight[k]; }  // later units: written above by this thread
        v[i] = s * inv * wt;
        y[base + k] = v[i];
      }
    }
    if (EMIT_Q8) { store_q8(t * units + u, &v); }  // only with D % 32 == 0 (GraphBuilder)
  }
}
