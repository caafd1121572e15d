// The residual step: sum = a + b (the new residual stream), y = rmsnorm(sum) * weight. One workgroup
// of WG threads per token; thread i owns quads (vec4s) i, i + WG, i + 2 WG, ... so that a warp's loads
// and stores are contiguous. The first KEEP of them (and their weights, loaded before the reduction
// waits) stay in registers between the two passes; quads past KEEP x WG are read back from sum.
// With XOUT x_out_q8 the output is also stored as int8 units (x_q8.wgsl): a unit's 8 quads belong
// to 8 neighbouring threads, which share their max |v| and their sums of q through workgroup memory.
// Residuals ping-pong between buffers: WebGPU forbids reading and writing one buffer in two bindings.
// Needs D % 4 == 0 (and D % 32 == 0 for the int8 units: GraphBuilder).
//!include common
//!include XOUT
//!include block_sum

override D: u32;
override EPS: f32;
override WG: u32 = 256u;  // a power of two, at least 8
override KEEP: u32 = 4u;        // quads per thread held in registers, 1..4 (GraphBuilder: as many as D needs)
override F32_OUT: bool = true;  // false: y is not stored (every reader of this pass takes the units)

@group(0) @binding(0) var<storage, read_write> y: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> sum: array<vec4f>;
@group(0) @binding(2) var<storage, read> a: array<vec4f>;
@group(0) @binding(3) var<storage, read> b: array<vec4f>;
@group(0) @binding(4) var<storage, read> weight: array<vec4f>;
@group(0) @binding(5) var<uniform> step: Step;
const XQ_BINDING = 6u;

var<workgroup> unit_max: array<f32, 4u * WG>;  // [k][thread]: the max |v| of the thread's quad k
var<workgroup> unit_sum: array<f32, 4u * WG>;  // and the sum of its q (exact in f32)

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let t = flat_group(wid, nwg);
  if (t >= step.n_tokens) { return; }
  let quads = D / 4u;
  let base = t * quads;
  let per_round = KEEP * WG;  // quads per round of the second pass
  var kept: array<vec4f, 4>;
  var wkept: array<vec4f, 4>;
  var ss = 0.0;
  // The kept quads by a loop of constant trip count, so that kept and wkept have constant indices
  // (registers: a dynamically indexed array goes to local memory), their loads issued together; then
  // the quads past KEEP x WG, which the second pass reads back from sum. The squares are added in the
  // same order as one loop over i = lid, lid + WG, ...
  for (var k = 0u; k < KEEP; k++) {
    let i = lid + k * WG;
    if (i < quads) {
      kept[k] = a[base + i] + b[base + i];
      wkept[k] = weight[i];
    }
  }
  for (var k = 0u; k < KEEP; k++) {
    let i = lid + k * WG;
    if (i < quads) {
      sum[base + i] = kept[k];
      ss += dot(kept[k], kept[k]);
    }
  }
  for (var i = lid + KEEP * WG; i < quads; i += WG) {
    let v = a[base + i] + b[base + i];
    sum[base + i] = v;
    ss += dot(v, v);
  }
  let inv = inverseSqrt(block_sum(ss, lid) / f32(D) + EPS);
  for (var r0 = 0u; r0 < quads; r0 += per_round) {  // the same trip count in every thread (barriers inside)
    var out: array<vec4f, 4>;
    for (var k = 0u; k < KEEP; k++) {
      let i = r0 + k * WG + lid;
      out[k] = vec4f(0.0);
      if (i < quads) {
        var s = kept[k];
        var wt = wkept[k];
        if (r0 > 0u) { s = sum[base + i]; wt = weight[i]; }  // written above by this thread
        out[k] = s * inv * wt;
        if (F32_OUT) { y[base + i] = out[k]; }
      }
    }
    if (!EMIT_Q8) { continue; }
    // int8 units as q8_pack.wgsl makes them: d = max|v| / 127 over the unit's 32 values, q = round(v / d).
    workgroupBarrier();  // the last round's readers are done
    for (var k = 0u; k < KEEP; k++) {
      let m = abs(out[k]);
      unit_max[k * WG + lid] = max(max(m.x, m.y), max(m.z, m.w));
    }
    workgroupBarrier();
    var amax: array<f32, 4>;
    for (var k = 0u; k < KEEP; k++) {
      let g0 = k * WG + (lid & ~7u);
      amax[k] = 0.0;
      for (var j = 0u; j < 8u; j++) { amax[k] = max(amax[k], unit_max[g0 + j]); }
      let scale = select(0.0, 127.0 / amax[k], amax[k] > 0.0);
      let q = vec4i(round(out[k] * scale));
      unit_sum[k * WG + lid] = f32(q.x + q.y + q.z + q.w);
      let i = r0 + k * WG + lid;
      if (i < quads) { store_q8_word(base / 8u + i / 8u, i % 8u, pack4xI8(q)); }
    }
    workgroupBarrier();
    if (lid % 8u == 0u) {
      for (var k = 0u; k < KEEP; k++) {
        let i = r0 + k * WG + lid;
        if (i >= quads) { continue; }
        var s = 0.0;
        for (var j = 0u; j < 8u; j++) { s += unit_sum[k * WG + lid + j]; }
        store_q8_ds(base / 8u + i / 8u, vec2f(amax[k] / 127.0, s));
      }
    }
  }
}
