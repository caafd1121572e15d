// The router of a mixture-of-experts layer, per token: softmax over its E logits, the K largest
// probabilities (ties to the lower expert, as torch.topk and the CPU reference), and their weights,
// renormalised to sum 1 over the K when NORM_TOPK (Qwen3-MoE's norm_topk_prob). One workgroup a token;
// E is a few hundred at most, so plain workgroup-memory reductions serve (K rounds of an argmax).
//!include common

override E: u32;  // experts
override K: u32;  // chosen per token
override NORM_TOPK: bool = true;
const WG = 64u;
const MAX_E = 1024u;

@group(0) @binding(0) var<storage, read_write> ids: array<u32>;  // [token][K] expert ids
@group(0) @binding(1) var<storage, read_write> wts: array<f32>;  // [token][K] their weights
@group(0) @binding(2) var<storage, read> logits: array<f32>;     // [token][E]
@group(0) @binding(3) var<uniform> step: Step;

var<workgroup> prob: array<f32, MAX_E>;  // the token's probabilities; -1 once chosen
var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

// (v, i) beats (bv, bi): larger, or as large and a lower expert.
fn beats(v: f32, i: u32, bv: f32, bi: u32) -> bool { return v > bv || (v == bv && i < bi); }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let t = flat_group(wid, nwg);
  if (t >= step.n_tokens) { return; }
  // Softmax: the max, then the sum of exp(l - max).
  var m = -3.4e38;
  for (var e = lid; e < E; e += WG) { m = max(m, logits[t * E + e]); }
  best_v[lid] = m;
  workgroupBarrier();
  m = best_v[0];
  for (var i = 1u; i < WG; i++) { m = max(m, best_v[i]); }
  workgroupBarrier();
  var s = 0.0;
  for (var e = lid; e < E; e += WG) {
    let p = exp(logits[t * E + e] - m);
    prob[e] = p;
    s += p;
  }
  best_v[lid] = s;
  workgroupBarrier();
  s = 0.0;
  for (var i = 0u; i < WG; i++) { s += best_v[i]; }
  // K rounds: every thread's best unchosen expert, then the workgroup's; thread 0 records it.
  var total = 0.0;
  for (var k = 0u; k < K; k++) {
    workgroupBarrier();
    var bv = -1.0;
    var bi = E;
    for (var e = lid; e < E; e += WG) {
      if (beats(prob[e], e, bv, bi)) { bv = prob[e]; bi = e; }
    }
    best_v[lid] = bv;
    best_i[lid] = bi;
    workgroupBarrier();
    if (lid == 0u) {
      for (var i = 1u; i < WG; i++) {
        if (beats(best_v[i], best_i[i], bv, bi)) { bv = best_v[i]; bi = best_i[i]; }
      }
      ids[t * K + k] = bi;
      wts[t * K + k] = bv / s;
      total += bv / s;
      prob[bi] = -1.0;
    }
  }
  if (lid == 0u && NORM_TOPK) {
    for (var k = 0u; k < K; k++) { wts[t * K + k] = wts[t * K + k] / total; }
  }
}
