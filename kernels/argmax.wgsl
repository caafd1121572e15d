// Greedy sampling on the GPU, in two passes over the logits. Pass 1 (FINAL = false): workgroup g
// finds the largest logit of its slice (lowest index on ties; NaN never wins) into part[g].
// Pass 2 (FINAL = true, one workgroup): the best of the parts goes to ids[0], where the next step's
// embedding reads it, and to tokens[step.out_index] for the host; with NEXT = next_embed it also stores
// that token's embedding row for the next step.
//!include common
//!include NEXT

override N: u32;       // vocabulary size
override PARTS: u32;   // workgroups of pass 1
override FINAL: bool = false;

@group(0) @binding(0) var<storage, read_write> ids: array<u32>;
@group(0) @binding(1) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> part: array<vec2u>;  // (value bits, index)
@group(0) @binding(3) var<storage, read> logits: array<f32>;
@group(0) @binding(4) var<uniform> step: Step;

var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool {
  return v > bv || (v == bv && i < bi);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  var bv = -3.0e38;
  var bi = 0xFFFFFFFFu;
  if (FINAL) {
    for (var i = lid; i < PARTS; i += 256u) {
      let p = part[i];
      if (better(bitcast<f32>(p.x), p.y, bv, bi)) { bv = bitcast<f32>(p.x); bi = p.y; }
    }
  } else {
    let per = (N + PARTS - 1u) / PARTS;
    let end = min(N, (wid.x + 1u) * per);
    for (var i = wid.x * per + lid; i < end; i += 256u) {
      let v = logits[i];
      if (v > bv) { bv = v; bi = i; }  // strided scan: a thread's first hit is its lowest index
    }
  }
  best_v[lid] = bv;
  best_i[lid] = bi;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s && better(best_v[lid + s], best_i[lid + s], best_v[lid], best_i[lid])) {
      best_v[lid] = best_v[lid + s];
      best_i[lid] = best_i[lid + s];
    }
    workgroupBarrier();
  }
  if (FINAL) {
    let tok = select(best_i[0], 0u, best_i[0] == 0xFFFFFFFFu);  // every thread: the loop's last barrier published it
    if (lid == 0u) {
      ids[0] = tok;
      tokens[step.out_index] = tok;
    }
    embed_next(tok, lid);
  } else if (lid == 0u) {
    part[wid.x] = vec2u(bitcast<u32>(best_v[0]), best_i[0]);
  }
}
