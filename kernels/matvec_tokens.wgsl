// y[t] = W x[t] for the tokens of a short pass (2..64), x as int8 units (x_q8.wgsl): matvec.wgsl
// with a group of TT tokens per workgroup. Each lane decodes a weight unit of a row once (w_load,
// from the dotq8_<type>.wgsl snippet) and dots it with that unit of each of its TT tokens, so the
// weights are read from memory once per TT tokens instead of once per token.
//!include common
//!include WEIGHT
//!include x_q8
//!include DOT
//!include matvec_sums
//!include y_plain

override ROWS: u32;
override COLS: u32;
override Y_OFFSET: u32 = 0u;
override Y_STRIDE: u32;     // floats between tokens in y
override GATED: bool = false;

override RPL: u32 = 1u;     // rows per lane group (up to 4)
override LANES: u32 = 16u;  // lanes per group: few, so each lane has several units to work through
override WG: u32 = 64u;     // WG / LANES lane groups per workgroup
override TT: u32 = 8u;      // tokens per workgroup: 2 * RPL * TT <= 32 and RPL * TT <= LANES
fn out_row(t: u32) -> u32 { return t; }  // y's rows are the tokens
const KEEP_SUMS = false;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<vec4u>;  // 16-byte words: aligned loads of 4 words are one load
@group(0) @binding(STEP_BINDING) var<uniform> step: Step;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  w_prologue(lid, WG);  // the table of levels, for the types that have one (matvec.wgsl)
  // Neighbouring workgroups take the same rows for other tokens, so the weights stay in L2 between them.
  let token_groups = (step.n_tokens + TT - 1u) / TT;
  let g = flat_group(wid, nwg);
  let t0 = (g % token_groups) * TT;
  let nt = min(TT, step.n_tokens - t0);
  let lane = lid % LANES;
  let row0 = ((g / token_groups) * (WG / LANES) + lid / LANES) * RPL;
  var acc: array<f32, 32>;  // [half][token][row]
  let units = COLS / 32u;
  let rb = w_row_bytes();
  for (var u = lane; u < units; u += LANES) {
    // The unit of each of the RPL rows first (rows past the end repeat the last one; write_sums
    // drops them), then each token's x unit once for all of them: x is the bulk of what a lane loads.
    var wr: array<WUnit, 4>;
    var wg: array<WUnit, 4>;
    for (var j = 0u; j < RPL; j++) {
      let r = min(row0 + j, ROWS - 1u);
      wr[j] = w_load(r * rb, u);
      if (GATED) { wg[j] = w_load((r + ROWS) * rb, u); }
    }
    // A constant trip count keeps acc in registers; tokens past the pass repeat its last one
    // (write_sums drops them), so no branch stands between the loads.
    for (var t = 0u; t < TT; t++) {
      var xu = x_unit(min(t0 + t, step.n_tokens - 1u), u);
      for (var j = 0u; j < RPL; j++) {
        var a = wr[j];
        acc[t * RPL + j] += w_dot_x(&a, &xu);
        if (GATED) {
          var b = wg[j];
          acc[(TT + t) * RPL + j] += w_dot_x(&b, &xu);
        }
      }
    }
  }
  write_sums(&acc, lid, row0, t0, nt, 1.0, ROWS);
}
