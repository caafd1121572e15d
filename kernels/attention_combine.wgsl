// Merges attention's split partials: out = sum_s o_s e^(m_s - M) / sum_s l_s e^(m_s - M).
// One workgroup per (token, head).
//!include common
//!include XOUT

override HD: u32;
override NH: u32;
override SPLIT: u32;

@group(0) @binding(0) var<storage, read_write> att: array<f32>;  // [T, NH*HD]
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<uniform> step: Step;
const XQ_BINDING = 3u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let n_splits = (step.pos0 + step.n_tokens + SPLIT - 1u) / SPLIT;
  let g = flat_group(wid, nwg);
  let t = g / NH;
  let h = g % NH;
  if (t >= step.n_tokens) { return; }
  let base = (t * NH + h) * n_splits * (HD + 2u);
  var mx = -1e30;
  for (var s = 0u; s < n_splits; s++) { mx = max(mx, part[base + s * (HD + 2u) + HD]); }
  var l = 0.0;
  for (var s = 0u; s < n_splits; s++) {
    let pb = base + s * (HD + 2u);
    l += part[pb + HD + 1u] * exp(part[pb + HD] - mx);
  }
  for (var d = lid; d < HD; d += 64u) {
    var acc = 0.0;
    for (var s = 0u; s < n_splits; s++) {
      let pb = base + s * (HD + 2u);
      acc += part[pb + d] * exp(part[pb + HD] - mx);
    }
    att[t * NH * HD + h * HD + d] = acc / l;
  }
  if (EMIT_Q8) {  // passes short enough for the matvec (GraphBuilder); this head's HD / 32 units
    storageBarrier();
    for (var u = lid; u < HD / 32u; u += 64u) {
      var v: array<vec4f, 8>;
      for (var i = 0u; i < 8u; i++) {
        let e = t * NH * HD + h * HD + u * 32u + i * 4u;
        v[i] = vec4f(att[e], att[e + 1u], att[e + 2u], att[e + 3u]);
      }
      store_q8((t * NH * HD + h * HD) / 32u + u, &v);
    }
  }
}
