// Decode-time y = W x for a matrix of two parts of different weight types, in one dispatch: a
// Q4_K_M file's QKV is Q4_K for q|k and Q6_K for v in half its layers. As matvec.wgsl with x made in
// the workgroup (x_q8_norm.wgsl), so those layers also skip the add_rmsnorm dispatch; the first
// GROUPS_A workgroups take part A's rows, the rest part B's (at Y_OFFSET_B). Part B's snippets are
// included under the prefix b_ (Kernels::compose), so both types' functions live side by side.
//!include common
//!include WEIGHT
//!include x_q8_norm
//!include DOT
//!include x_out_none
//!include matvec_sums
//!prefix b_
//!include WEIGHT_B
//!include DOT_B
//!endprefix

override ROWS: u32;       // part A
override ROWS_B: u32;
override COLS: u32;
override Y_OFFSET: u32 = 0u;
override Y_OFFSET_B: u32;
override Y_STRIDE: u32 = 0u;  // unused with one token
const GATED = false;

override RPL: u32 = 2u;     // rows per lane group, both parts
override LANES: u32 = 32u;
override GROUPS: u32 = 16u;  // lane groups per workgroup
override WG: u32 = 512u;     // GROUPS * LANES
override GROUPS_A: u32 = (ROWS + GROUPS * RPL - 1u) / (GROUPS * RPL);  // workgroups of part A
const TT = 1u;
const KEEP_SUMS = false;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(X_BINDINGS) var<storage, read> b_w: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let lane = lid % LANES;
  let group = flat_group(wid, nwg);
  x_prepare(lid, group == 0u);
  let in_b = group >= GROUPS_A;  // the same for the whole workgroup
  let row0 = (select(group, group - GROUPS_A, in_b) * GROUPS + lid / LANES) * RPL;
  var acc: array<f32, 32>;
  if (!in_b) {
    let rb = w_row_bytes();
    for (var s = lane; s < COLS / 32u / DOT_UNITS; s += LANES) {
      var xs: array<XUnit, DOT_UNITS>;
      for (var i = 0u; i < DOT_UNITS; i++) { xs[i] = x_unit(0u, step_unit(s, i)); }
      for (var j = 0u; j < RPL; j++) { acc[j] += w_dot_step(min(row0 + j, ROWS - 1u) * rb, s, &xs); }
    }
  } else {
    let rb = b_w_row_bytes();
    for (var s = lane; s < COLS / 32u / b_DOT_UNITS; s += LANES) {
      var xs: array<XUnit, b_DOT_UNITS>;
      for (var i = 0u; i < b_DOT_UNITS; i++) { xs[i] = x_unit(0u, b_step_unit(s, i)); }
      for (var j = 0u; j < RPL; j++) { acc[j] += b_w_dot_step(min(row0 + j, ROWS_B - 1u) * rb, s, &xs); }
    }
  }
  write_sums(&acc, lid, row0, 0u, 1u, x_scale(), select(ROWS, ROWS_B, in_b), select(Y_OFFSET, Y_OFFSET_B, in_b));
}
