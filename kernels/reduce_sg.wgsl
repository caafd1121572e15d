enable subgroups;
// block_reduce (see reduce_wg.wgsl) through subgroup operations: each subgroup's max (or sum), then
// one barrier and every thread folds the WG / subgroup-size results. Maxima and sums have their own
// arrays, so no barrier is needed before the writes: a kernel that calls it in a loop alternates the
// two, and each call's barrier keeps the other array's next writers behind its readers. Included
// first, for the `enable`. H200: the split decode kernel at 4,096 positions +0.5..+1.9% (and the
// unsplit one -0.4..-0.8%, so it keeps reduce_wg.wgsl: bench/EXPERIMENTS.md).
struct SgIn {
  @builtin(subgroup_invocation_id) id: u32,
  @builtin(subgroup_size) size: u32,
}
var<private> sg: SgIn;
fn reduce_init(s: SgIn) { sg = s; }

var<workgroup> red_max: array<f32, 64>;  // a slot per subgroup (subgroups of 4+ threads, WG <= 256)
var<workgroup> red_sum: array<f32, 64>;
fn block_reduce(lid: u32, v: f32, is_max: bool) -> f32 {
  if (is_max) {
    let r = subgroupMax(v);
    if (sg.id == 0u) { red_max[lid / sg.size] = r; }
  } else {
    let r = subgroupAdd(v);
    if (sg.id == 0u) { red_sum[lid / sg.size] = r; }
  }
  workgroupBarrier();
  var t = select(red_sum[0], red_max[0], is_max);
  for (var i = 1u; i < WG / sg.size; i++) { t = select(t + red_sum[i], max(t, red_max[i]), is_max); }
  return t;
}
// One subgroup's own operations, for kernels that branch on a host constant (reduce_wg.wgsl has
// one-thread stand-ins, never run).
fn sg_lane() -> u32 { return sg.id; }
fn sg_size() -> u32 { return sg.size; }
fn sg_max(v: f32) -> f32 { return subgroupMax(v); }
fn sg_add(v: f32) -> f32 { return subgroupAdd(v); }
fn sg_shuffle(v: f32, lane: u32) -> f32 { return subgroupShuffle(v, lane); }
