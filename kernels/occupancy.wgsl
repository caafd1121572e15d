// Workgroup-memory occupancy probe (`ztvm gpu --occupancy`): how many workgroups an SM holds at once
// as each one's workgroup memory grows. Every workgroup declares WORDS 4-byte words, fills them with a
// map, and each thread follows the map for ITERS dependent steps: a chain of workgroup-memory loads
// whose latency nothing else hides, so a run's rate is proportional to how many workgroups (warps)
// are resident. The rate falls in steps where fewer workgroups of the larger size fit beside each other.
//!include common

override WORDS: u32 = 1024u;
override ITERS: u32 = 256u;
const WG = 256u;

@group(0) @binding(0) var<storage, read_write> out: array<u32>;  // one word per thread: where its chain ended

var<workgroup> ring: array<u32, WORDS>;

// The map, also computed by the CPU twin (gpu/peak.cpp).
fn next_word(j: u32) -> u32 { return (j * 97u + 1u) % WORDS; }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  for (var i = lid; i < WORDS; i += WG) { ring[i] = next_word(i); }
  workgroupBarrier();
  var j = lid % WORDS;
  for (var i = 0u; i < ITERS; i++) { j = ring[j]; }
  out[flat_group(wid, nwg) * WG + lid] = j;
}
