// Greedy sampling on the GPU: the index of the largest logit (lowest index on ties, NaN never wins)
// goes to ids[0], where the next step's embedding reads it, and to tokens[step.out_index] for the host.
//!include common

override N: u32;  // vocabulary size

@group(0) @binding(0) var<storage, read_write> ids: array<u32>;
@group(0) @binding(1) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> logits: array<f32>;
@group(0) @binding(3) var<uniform> step: Step;

var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
  var bv = -3.0e38;
  var bi = 0xFFFFFFFFu;
  for (var i = lid; i < N; i += 256u) {
    let v = logits[i];
    if (v > bv) { bv = v; bi = i; }  // strided scan: first hit per thread is its lowest index
  }
  best_v[lid] = bv;
  best_i[lid] = bi;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let ov = best_v[lid + s];
      let oi = best_i[lid + s];
      if (ov > best_v[lid] || (ov == best_v[lid] && oi < best_i[lid])) {
        best_v[lid] = ov;
        best_i[lid] = oi;
      }
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let tok = select(best_i[0], 0u, best_i[0] == 0xFFFFFFFFu);
    ids[0] = tok;
    tokens[step.out_index] = tok;
  }
}
