// block_sum(v, lid): the sum of v over the WG threads of the workgroup, returned to every thread.
// A tree through workgroup memory (WG a power of two). Subgroup adds were slower on the H200
// (bench/EXPERIMENTS.md, 2026-11-30).
var<workgroup> block_red: array<f32, WG>;

fn block_sum(v: f32, lid: u32) -> f32 {
  block_red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { block_red[lid] += block_red[lid + s]; }
    workgroupBarrier();
  }
  let total = block_red[0];
  workgroupBarrier();  // block_red may be reused
  return total;
}
