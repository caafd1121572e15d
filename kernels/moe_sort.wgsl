// The plan of a pass's expert matvecs (matvec_moe.wgsl GROUPED): its n x K (token, expert) pairs
// listed by expert. One workgroup: counts per expert, their offsets, the experts chosen at all (in
// expert order), then each pair into its expert's part of the list (in any order there: each pair's
// output is its own). plan = [E + 1] offsets | [E] chosen experts | their count | [n K] pairs.
//!include common

override E: u32;
override K: u32;
const WG = 256u;
const MAX_E = 1024u;

@group(0) @binding(0) var<storage, read_write> plan: array<u32>;
@group(0) @binding(1) var<storage, read> ids: array<u32>;  // [pair] its expert
@group(0) @binding(2) var<uniform> step: Step;

var<workgroup> count: array<atomic<u32>, MAX_E>;
var<workgroup> offset: array<u32, MAX_E>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  let pairs = step.n_tokens * K;
  for (var e = lid; e < E; e += WG) { atomicStore(&count[e], 0u); }
  workgroupBarrier();
  for (var p = lid; p < pairs; p += WG) { atomicAdd(&count[ids[p]], 1u); }
  workgroupBarrier();
  if (lid == 0u) {
    var at = 0u;
    var chosen = 0u;
    for (var e = 0u; e < E; e++) {
      let c = atomicLoad(&count[e]);
      plan[e] = at;
      offset[e] = at;
      if (c > 0u) {
        plan[E + 1u + chosen] = e;
        chosen++;
      }
      at += c;
    }
    plan[E] = at;
    plan[2u * E + 1u] = chosen;
  }
  workgroupBarrier();
  for (var e = lid; e < E; e += WG) { atomicStore(&count[e], 0u); }
  workgroupBarrier();
  for (var p = lid; p < pairs; p += WG) {
    let e = ids[p];
    plan[2u * E + 2u + offset[e] + atomicAdd(&count[e], 1u)] = p;
  }
}
