// The plan of a pass's expert matvecs (matvec_moe.wgsl GROUPED): its n x K (token, expert) pairs
// listed by expert. One workgroup: counts per expert, their offsets, the experts chosen at all (in
// expert order), then each pair into its expert's part of the list (in any order there: each pair's
// output is its own). plan = [E + 1] offsets | [E] chosen experts | their count | [n K] pairs |
// the tile count | [tiles] (expert, first, end): each chosen expert's part of the list in tiles of up
// to 64 pairs, in expert order, for the experts' GEMM (gemm_moe_tiles.wgsl). A pass has at most
// ceil(n K / 64) + min(E, n K) tiles (GraphBuilder::moe_plan_bytes), which sizes its grid on the host.
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
var<workgroup> first_tile: array<u32, MAX_E>;

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
    var tiles = 0u;
    for (var e = 0u; e < E; e++) {
      let c = atomicLoad(&count[e]);
      plan[e] = at;
      offset[e] = at;
      first_tile[e] = tiles;
      tiles += (c + 63u) / 64u;
      if (c > 0u) {
        plan[E + 1u + chosen] = e;
        chosen++;
      }
      at += c;
    }
    plan[E] = at;
    plan[2u * E + 1u] = chosen;
    plan[2u * E + 2u + pairs] = tiles;
  }
  workgroupBarrier();
  let tile_list = 2u * E + 3u + pairs;
  for (var e = lid; e < E; e += WG) {
    let c = atomicLoad(&count[e]);
    for (var i = 0u; i < c; i += 64u) {
      let at = tile_list + 3u * (first_tile[e] + i / 64u);
      plan[at] = e;
      plan[at + 1u] = offset[e] + i;
      plan[at + 2u] = offset[e] + min(i + 64u, c);
    }
    atomicStore(&count[e], 0u);
  }
  workgroupBarrier();
  for (var p = lid; p < pairs; p += WG) {
    let e = ids[p];
    plan[2u * E + 2u + offset[e] + atomicAdd(&count[e], 1u)] = p;
  }
}
