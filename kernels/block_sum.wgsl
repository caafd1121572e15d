// block_sum(v, lid): the sum of v over the WG threads of the workgroup, returned to every thread.
// One barrier publishes the values, then every thread adds them all up in the same order (same
// total everywhere), reading 4 at a time: a tree took log2(WG) barriers, and these kernels' time is
// their chain of waits. Subgroup adds were slower on the H200 (bench/EXPERIMENTS.md, 2026-11-30).
var<workgroup> block_red: array<vec4f, WG / 4u>;

fn block_sum(v: f32, lid: u32) -> f32 {
  workgroupBarrier();  // earlier readers of block_red are done
  block_red[lid / 4u][lid % 4u] = v;
  workgroupBarrier();
  var total = 0.0;
  for (var i = 0u; i < WG / 4u; i++) { total += dot(block_red[i], vec4f(1.0)); }
  return total;
}
