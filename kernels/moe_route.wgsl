// The router of a mixture-of-experts layer, per token: softmax over its E logits, the K largest
// probabilities (ties to the lower expert, as torch.topk and the CPU reference), and their weights,
// renormalised to sum 1 over the K when NORM_TOPK (Qwen3-MoE's norm_topk_prob). One workgroup a token.
// Each thread ranks its experts against all E at once (how many beat it): an expert of rank < K is
// chosen and is written at its rank, so the choice takes a few barriers, not K rounds of an argmax
// (those were 18% of Qwen3-30B-A3B's decode time on the H100: 48 layers, each a serial chain).
//!include common

override E: u32;  // experts
override K: u32;  // chosen per token
override NORM_TOPK: bool = true;
const WG = 128u;
const MAX_E = 1024u;
const PER = MAX_E / WG;  // experts a thread ranks, at most

@group(0) @binding(0) var<storage, read_write> ids: array<u32>;  // [token][K] expert ids
@group(0) @binding(1) var<storage, read_write> wts: array<f32>;  // [token][K] their weights
@group(0) @binding(2) var<storage, read> logits: array<f32>;     // [token][E]
@group(0) @binding(3) var<uniform> step: Step;

var<workgroup> prob: array<f32, MAX_E>;  // exp(logit - max), the softmax's numerators
var<workgroup> part: array<f32, WG>;     // per thread: its max, then its sum of prob
var<workgroup> chosen: array<f32, MAX_E>;  // [rank] the numerator of the expert of that rank (< K)

// (v, i) beats (bv, bi): larger, or as large and a lower expert.
fn beats(v: f32, i: u32, bv: f32, bi: u32) -> bool { return v > bv || (v == bv && i < bi); }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let t = flat_group(wid, nwg);
  if (t >= step.n_tokens) { return; }
  var m = -3.4e38;
  for (var e = lid; e < E; e += WG) { m = max(m, logits[t * E + e]); }
  part[lid] = m;
  workgroupBarrier();
  for (var i = 0u; i < WG; i++) { m = max(m, part[i]); }
  var s = 0.0;
  for (var e = lid; e < E; e += WG) {
    let p = exp(logits[t * E + e] - m);
    prob[e] = p;
    s += p;
  }
  workgroupBarrier();  // every thread has read part's maxima and written its prob
  part[lid] = s;
  // Rank by the probabilities, as the reference does (equal probabilities from unequal logits tie).
  let per = (E + WG - 1u) / WG;
  var rank: array<u32, PER>;
  var own: array<f32, PER>;
  for (var j = 0u; j < per; j++) {
    rank[j] = 0u;
    own[j] = prob[min(lid + j * WG, E - 1u)];
  }
  for (var i = 0u; i < E; i++) {
    let v = prob[i];
    for (var j = 0u; j < per; j++) {
      if (beats(v, i, own[j], lid + j * WG)) { rank[j]++; }
    }
  }
  for (var j = 0u; j < per; j++) {
    let e = lid + j * WG;
    if (e < E && rank[j] < K) { chosen[rank[j]] = prob[e]; }
  }
  workgroupBarrier();  // chosen and part are complete
  var total = 0.0;
  if (NORM_TOPK) {
    for (var r = 0u; r < K; r++) { total += chosen[r]; }
  } else {
    for (var i = 0u; i < WG; i++) { total += part[i]; }
  }
  for (var j = 0u; j < per; j++) {
    let e = lid + j * WG;
    if (e < E && rank[j] < K) {
      ids[t * K + rank[j]] = e;
      wts[t * K + rank[j]] = prob[e] / total;
    }
  }
}
