// block_reduce for attention_decode.wgsl and attention_combine.wgsl without subgroups (reduce_sg.wgsl
// is the variant with them): the max (or sum) of every thread's v over a workgroup of WG threads. 32
// threads each fold a column of WG / 32, then every thread reads the 32. Three barriers, the first
// so that earlier readers of the arrays are done.
struct SgIn {
  @builtin(local_invocation_id) unused: vec3u,  // the kernels read local_invocation_index instead
}
fn reduce_init(s: SgIn) {}

var<workgroup> red: array<f32, WG>;   // first level
var<workgroup> red2: array<f32, 32>;  // second level
fn block_reduce(lid: u32, v: f32, is_max: bool) -> f32 {
  workgroupBarrier();
  red[lid] = v;
  workgroupBarrier();
  if (lid < 32u) {
    var r = red[lid];
    for (var i = 1u; i < WG / 32u; i++) {
      let x = red[i * 32u + lid];
      r = select(r + x, max(r, x), is_max);
    }
    red2[lid] = r;
  }
  workgroupBarrier();
  var r = red2[0];
  for (var i = 1u; i < 32u; i++) { r = select(r + red2[i], max(r, red2[i]), is_max); }
  return r;
}
// reduce_sg.wgsl's subgroup operations as one-thread stand-ins: the host sets the constants of the
// branches that call them only where a kernel includes reduce_sg.
fn sg_lane() -> u32 { return 0u; }
fn sg_size() -> u32 { return 1u; }
fn sg_max(v: f32) -> f32 { return v; }
fn sg_add(v: f32) -> f32 { return v; }
fn sg_shuffle(v: f32, lane: u32) -> f32 { return v; }
