// Workgroup-memory occupancy probe (`ztvm gpu --occupancy`): how many workgroups an SM holds at once
// as each one's workgroup memory grows. Every workgroup declares WORDS 4-byte words of it (filled, and
// read once at the end, so all of it is allocated), and each warp follows a map through a 1 MB table
// in memory for ITERS dependent steps, every lane at the same address: one request at a time per warp,
// each waiting out a cache's latency (the table is larger than L1), so the run is latency-bound and
// its rate proportional to the warps resident. It falls in steps where fewer workgroups fit.
//!include common

override WORDS: u32 = 1024u;
override ITERS: u32 = 256u;
override N: u32 = 262144u;  // table words
const WG = 256u;

@group(0) @binding(0) var<storage, read_write> out: array<u32>;  // one word per thread
@group(0) @binding(1) var<storage, read> table: array<u32>;      // word j holds the next j (gpu/peak.cpp)

var<workgroup> pad: array<u32, WORDS>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  for (var i = lid; i < WORDS; i += WG) { pad[i] = i; }
  workgroupBarrier();
  let t = flat_group(wid, nwg) * WG + lid;
  var j = (t / 32u) % N;  // one chain per 32 threads
  for (var i = 0u; i < ITERS; i++) { j = table[j]; }
  out[t] = j + pad[(lid + 1u) % WORDS];
}
