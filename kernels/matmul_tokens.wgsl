// Prefill y[t, Y_OFFSET + r] = W[r] . x[t] for short passes (2..64 tokens): the decode matvec's weight
// streaming, widened to a group of TT tokens so each weight unit is read and dequantized once per TT
// tokens instead of once per token (gemm.wgsl: once per 64 tokens, but on too few workgroups).
// A workgroup owns ROW_GROUPS x RPL rows and one token group. In a row group 16 lanes split K by whole
// 32-element units (consecutive lanes, consecutive units: weight reads coalesce as in the matvec); a
// lane dequantizes its unit of its RPL rows into registers (WEIGHT snippet) and dots it with that unit
// of x for all TT tokens. x is staged per sweep of 16 units in workgroup memory with coalesced loads,
// shared by every row group; the lane partials are summed through the same memory at the end.
// GATED: each lane also holds the up rows (weight rows r + ROWS) and the kernel writes silu(gate) * up.
// Needs COLS % 32 == 0. Host checks (graph.cpp): halves*RPL*TT <= 64, halves*RPL*ROW_GROUPS <= 32.
//!include common
//!include WEIGHT

override ROWS: u32;           // output rows (per half when GATED)
override COLS: u32;           // input width
override Y_STRIDE: u32 = 0u;  // floats between tokens in y (0: ROWS)
override Y_OFFSET: u32 = 0u;
override GATED: bool = false;

override RPL: u32 = 2u;         // rows per lane (per half when GATED)
override TT: u32 = 8u;          // tokens per workgroup, a multiple of 4
override ROW_GROUPS: u32 = 8u;  // row groups of LANES lanes per workgroup
override WG: u32 = ROW_GROUPS * 16u;

const LANES: u32 = 16u;  // lanes per row group, splitting K

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> xv: array<vec4f>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<uniform> step: Step;

// One sweep of x: [token][unit of the sweep][8 vec4s], the vec4 index XORed with the unit's low 3
// bits so the 8 lanes of a quarter warp, reading vec4 i of 8 different units, hit 8 different banks.
// After the last sweep it holds the lane partials: [value quad][thread].
var<workgroup> xs: array<vec4f, TT * LANES * 8u>;

fn xs_index(t: u32, unit: u32, i: u32) -> u32 {
  return (t * LANES + unit) * 8u + (i ^ (unit % 8u));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let halves = select(1u, 2u, GATED);
  let rows_per_wg = ROW_GROUPS * RPL;
  let row_blocks = (ROWS + rows_per_wg - 1u) / rows_per_wg;
  // The token groups of one row block are neighbours in the grid, so they run together and share
  // the block's weights through L2.
  let n_tg = (step.n_tokens + TT - 1u) / TT;
  let g = flat_group(wid, nwg);
  if (g / n_tg >= row_blocks) { return; }
  let t0 = (g % n_tg) * TT;
  let rg = lid / LANES;
  let lane = lid % LANES;
  let row0 = (g / n_tg) * rows_per_wg + rg * RPL;
  let units = COLS / 32u;
  let cols4 = COLS / 4u;
  let rb = w_row_bytes();

  var acc: array<f32, 64>;  // [half][RPL][TT]
  for (var s0 = 0u; s0 < units; s0 += LANES) {
    // This sweep's weights first, so their loads are in flight while x is staged.
    let u = s0 + lane;
    var wu: array<array<f32, 32>, 8>;  // [half][RPL]: unit u of the lane's rows, dequantized
    if (u < units) {
      for (var h = 0u; h < halves; h++) {
        for (var j = 0u; j < RPL; j++) {
          if (row0 + j < ROWS) { wu[h * RPL + j] = w_unit((row0 + j + h * ROWS) * rb, u); }
        }
      }
    }
    for (var e = lid; e < TT * LANES * 8u; e += WG) {  // stage x: TT rows of 16 units, coalesced
      let t = e / (LANES * 8u);
      let c = e % (LANES * 8u);
      var v = vec4f(0.0);
      if (t0 + t < step.n_tokens && s0 * 8u + c < cols4) { v = xv[(t0 + t) * cols4 + s0 * 8u + c]; }
      xs[xs_index(t, c / 8u, c % 8u)] = v;
    }
    workgroupBarrier();
    if (u < units) {
      for (var t = 0u; t < TT; t++) {
        for (var i = 0u; i < 8u; i++) {
          let xq = xs[xs_index(t, lane, i)];
          for (var k = 0u; k < halves * RPL; k++) {
            let wq = vec4f(wu[k][4u * i], wu[k][4u * i + 1u], wu[k][4u * i + 2u], wu[k][4u * i + 3u]);
            acc[k * TT + t] += dot(wq, xq);
          }
        }
      }
    }
    workgroupBarrier();
  }

  // Sum each value over the 16 lanes of its row group: every thread parks its partials, then lane l
  // of the group sums outputs l, l + 16, ... (consecutive lanes: consecutive rows, then tokens).
  for (var q = 0u; q < halves * RPL * TT / 4u; q++) {
    xs[q * WG + lid] = vec4f(acc[4u * q], acc[4u * q + 1u], acc[4u * q + 2u], acc[4u * q + 3u]);
  }
  workgroupBarrier();
  let stride = select(ROWS, Y_STRIDE, Y_STRIDE != 0u);
  for (var o = lane; o < RPL * TT; o += LANES) {
    let j = o % RPL;
    let t = o / RPL;
    if (row0 + j >= ROWS || t0 + t >= step.n_tokens) { continue; }
    var sum = vec2f(0.0);  // (gate or plain, up)
    for (var h = 0u; h < halves; h++) {
      let k = (h * RPL + j) * TT + t;
      for (var l = 0u; l < LANES; l++) { sum[h] += xs[(k / 4u) * WG + rg * LANES + l][k % 4u]; }
    }
    var v = sum.x;
    if (GATED) { v = v / (1.0 + exp(-v)) * sum.y; }
    y[(t0 + t) * stride + Y_OFFSET + row0 + j] = v;
  }
}
