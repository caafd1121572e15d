// The experts' matvecs of a mixture-of-experts layer: for each (token, chosen expert) pair of a pass,
// y[pair] = W_e x over expert e's rows, e = ids[pair] (moe_route.wgsl). The experts are stacked in one
// buffer (Experts in weights.h: e's rows start at row e * EXPERT_ROWS), so a pair reads only its own
// expert's rows, as matvec.wgsl reads a matrix's: LANES lanes a group walk 32-element units, RPL rows
// a group, GROUPS groups a workgroup, ROW_GROUPS workgroups a pair. X_PER_PAIR: pairs that share one x
// row (gate|up: the K experts of a token read its x; down: each pair its own h row, 1). GATED as in
// gemm.wgsl (rows r and r + ROWS of the expert). Passes of several tokens run it too, pair by pair:
// each pair reads its expert's rows again (grouping tokens by expert is a GEMM's work).
//!include common
//!include PACK8 q8_pack8_none
//!include WEIGHT
//!include XIN
//!include DOT
//!include XOUT x_out_none
//!include matvec_sums
//!include YOUT y_plain

override ROWS: u32;         // rows of one expert's output (per half when GATED)
override COLS: u32;
override EXPERT_ROWS: u32;  // rows of one expert in the stacked weights (2 ROWS when GATED)
override K: u32;            // pairs per token
override X_PER_PAIR: u32 = 1u;
override ROW_GROUPS: u32;   // workgroups per pair
override GATED: bool = false;
override RPL: u32 = 1u;
override LANES: u32 = 32u;
override GROUPS: u32 = 2u;
override WG: u32 = 64u;     // GROUPS * LANES
const TT = 1u;
const Y_OFFSET = 0u;
override Y_STRIDE: u32;   // ROWS
const KEEP_SUMS = false;
const XQ_BINDING = X_BINDINGS;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;  // [pair][ROWS]
@group(0) @binding(2) var<storage, read> w: array<vec4u>;
@group(0) @binding(X_BINDINGS) var<storage, read> ids: array<u32>;  // [pair] the pair's expert
@group(0) @binding(X_BINDINGS + 1u) var<uniform> step: Step;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let flat = flat_group(wid, nwg);
  let pair = flat / ROW_GROUPS;
  if (pair >= step.n_tokens * K) { return; }  // a folded grid's spare workgroups (Recorder::dispatch)
  w_prologue(lid, WG);
  let lane = lid % LANES;
  let row0 = (flat % ROW_GROUPS) * GROUPS * RPL + (lid / LANES) * RPL;
  let base = ids[pair] * EXPERT_ROWS;
  let xt = pair / X_PER_PAIR;
  var acc: array<f32, 32>;
  let rb = w_row_bytes();
  for (var s = lane; s < COLS / 32u; s += LANES) {
    var xu = x_unit(xt, s);
    for (var j = 0u; j < RPL; j++) {
      let r = base + min(row0 + j, ROWS - 1u);  // rows past the end repeat the last (write_sums drops them)
      acc[j] += w_dot(r * rb, s, &xu);
      if (GATED) { acc[RPL + j] += w_dot((r + ROWS) * rb, s, &xu); }
    }
  }
  write_sums(&acc, lid, row0, pair, 1u, x_scale(), ROWS);
}
