// The experts' matvecs of a mixture-of-experts layer: for each (token, chosen expert) pair of a pass,
// y[pair] = W_e x over expert e's rows (moe_route.wgsl chose e). The experts are stacked in one buffer
// (Experts in weights.h: e's rows start at row e * EXPERT_ROWS). LANES lanes a group walk 32-element
// units, RPL rows a group, GROUPS groups a workgroup, ROW_GROUPS workgroups a job; a job is one
// expert's rows for a list of its pairs:
// - by pair (one-token passes): job i is pair i, its expert ids[i]; a step reads only the k experts;
// - GROUPED (longer passes): job i is the i-th expert that some pair chose, with all of its pairs
//   (moe_sort.wgsl's plan), TT pairs at a time: each expert's rows come from memory once a pass, not
//   once a token, and the pairs after the first read them from the cache.
// - by token (WTS = moe_wts_binding, one-token passes of the down projection): job i is token i, its
//   K pairs at once (TT = K), each from its own expert's rows, summed weighted into y's row i.
// XOUT = x_out_q8h (one-token gate|up, 32 rows a workgroup): h is stored as int8 units too, which the
// down projection reads (no quantize_q8 between them).
// X_PER_PAIR: pairs that share one x row (gate|up: the K experts of a token read its x; down: each
// pair its own h row, 1). GATED as in gemm.wgsl (rows r and r + ROWS of the expert).
//!include common
//!include PACK8 q8_pack8_none
//!include WEIGHT
//!include XIN
//!include DOT
//!include XOUT x_out_none
//!include matvec_sums
//!include YOUT y_plain
//!include WTS moe_wts_none

override ROWS: u32;         // rows of one expert's output (per half when GATED)
override COLS: u32;
override E: u32;            // experts
override EXPERT_ROWS: u32;  // rows of one expert in the stacked weights (2 ROWS when GATED)
override K: u32;            // pairs per token
override X_PER_PAIR: u32 = 1u;
override ROW_GROUPS: u32;   // workgroups per job
override GROUPED: bool = false;
override TT: u32 = 1u;      // pairs at a time: 2 * RPL * TT <= 32
override GATED: bool = false;
override RPL: u32 = 1u;
override LANES: u32 = 32u;
override GROUPS: u32 = 2u;
override WG: u32 = 64u;     // GROUPS * LANES
override Y_STRIDE: u32;     // ROWS
const Y_OFFSET = 0u;
const KEEP_SUMS = EMIT_Q8;
const XQ_BINDING = X_BINDINGS + 2u;  // XOUT's int8 units, after ids and step

@group(0) @binding(0) var<storage, read_write> y: array<f32>;  // [pair][ROWS]
@group(0) @binding(2) var<storage, read> w: array<vec4u>;
// By pair: [pair] its expert. GROUPED: moe_sort.wgsl's plan, [E + 1] offsets of each expert's pairs
// in the list, [E] the experts chosen, their count, then the list of pairs by expert.
@group(0) @binding(X_BINDINGS) var<storage, read> ids: array<u32>;
@group(0) @binding(X_BINDINGS + 1u) var<uniform> step: Step;

var<workgroup> job: vec3u;  // (expert, first, end) of the workgroup's pairs in the list
var<private> chunk: array<u32, 16>;  // the pairs of the TT being summed
var<private> bases: array<u32, 16>;  // ... and the first row of each one's expert
fn out_row(t: u32) -> u32 { return chunk[t]; }

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let flat = flat_group(wid, nwg);
  let slot = flat / ROW_GROUPS;
  if (lid == 0u) {
    if (COMBINE) {
      job = select(vec3u(0u), vec3u(0u, slot * K, slot * K + K), slot < step.n_tokens);
    } else if (!GROUPED) {
      job = select(vec3u(0u), vec3u(ids[slot], slot, slot + 1u), slot < step.n_tokens * K);
    } else if (slot < ids[2u * E + 1u]) {
      let e = ids[E + 1u + slot];
      job = vec3u(e, ids[e], ids[e + 1u]);
    } else {
      job = vec3u(0u);
    }
  }
  let jb = workgroupUniformLoad(&job);  // uniform: the loops below hold barriers
  if (jb.y >= jb.z) { return; }  // past the pass's jobs (a folded grid's spare workgroups too)
  w_prologue(lid, WG);
  let lane = lid % LANES;
  let row0 = (flat % ROW_GROUPS) * GROUPS * RPL + (lid / LANES) * RPL;
  let rb = w_row_bytes();
  let list = 2u * E + 2u;  // where the plan's list starts
  for (var p0 = jb.y; p0 < jb.z; p0 += TT) {
    let nt = min(TT, jb.z - p0);
    for (var t = 0u; t < TT; t++) {  // pairs past the end repeat the last (write_sums drops them)
      let p = min(p0 + t, jb.z - 1u);
      chunk[t] = select(p, ids[list + p], GROUPED);
      bases[t] = select(jb.x, ids[p], COMBINE) * EXPERT_ROWS;
    }
    // [half][pair][row], zeroed explicitly for each chunk: lavapipe kept the sums of the chunk before
    // from a plain `var acc: array<f32, 32>;` here (every chunk after the first was wrong).
    var acc = array<f32, 32>();
    for (var s = lane; s < COLS / 32u; s += LANES) {
      for (var t = 0u; t < TT; t++) {
        var xu = x_unit(chunk[t] / X_PER_PAIR, s);
        for (var j = 0u; j < RPL; j++) {
          let r = bases[t] + min(row0 + j, ROWS - 1u);  // rows past the end repeat the last (dropped too)
          acc[t * RPL + j] += w_dot(r * rb, s, &xu);
          if (GATED) { acc[(TT + t) * RPL + j] += w_dot((r + ROWS) * rb, s, &xu); }
        }
      }
    }
    if (COMBINE) {
      write_weighted(&acc, lid, row0, jb.y / K);
    } else {
      write_sums(&acc, lid, row0, 0u, nt, x_scale(), ROWS);
    }
    workgroupBarrier();
    if (EMIT_Q8) {  // the workgroup's 32 rows of the pair's y are one unit (by pair: nt is 1)
      let u = (chunk[0] * Y_STRIDE + (flat % ROW_GROUPS) * GROUPS * RPL) / 32u;
      if (PACK8) {
        let i = lid % 8u;
        store_q8_vec4(u, i, lid < 8u, vec4f(kept[4u * i], kept[4u * i + 1u], kept[4u * i + 2u], kept[4u * i + 3u]));
      } else if (lid == 0u) {
        var v: array<vec4f, 8>;
        for (var i = 0u; i < 8u; i++) { v[i] = vec4f(kept[4u * i], kept[4u * i + 1u], kept[4u * i + 2u], kept[4u * i + 3u]); }
        store_q8(u, &v);
      }
    }  // write_sums reads red after its barrier: the next chunk's sums wait for it
  }
}

// By token: y[token, row] = sum over its K pairs of the pair's weight times its sum for the row.
fn write_weighted(acc: ptr<function, array<f32, 32>>, lid: u32, row0: u32, token: u32) {
  for (var j = 0u; j < RPL * TT; j++) { red[j * (WG + 1u) + lid] = (*acc)[j]; }
  workgroupBarrier();
  let lane = lid % LANES;
  if (lane < RPL && row0 + lane < ROWS) {
    var r = 0.0;
    for (var t = 0u; t < TT; t++) { r += pair_weight(chunk[t]) * lane_sum(t * RPL + lane, lid - lane); }
    y[token * ROWS + row0 + lane] = r * x_scale();
  }
}
