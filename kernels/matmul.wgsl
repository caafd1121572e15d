// y[t, Y_OFFSET + r] = sum_c W[r, c] * x[t, c] for the T tokens of this pass; W is read in place in its
// GGUF encoding (WEIGHT snippet). One workgroup per (row, tile of TT tokens): each weight unit is
// dequantized once and used for every token of the tile, which is what makes chunked prefill cheap.
// GATED: the workgroup also computes row r + ROWS (the "up" half of a fused gate|up weight) and
// writes silu(gate) * up — the FFN's first half in one dispatch.
//!include common
//!include WEIGHT

override ROWS: u32;           // output rows (per half when GATED)
override COLS: u32;           // input width
override Y_STRIDE: u32 = 0u;  // floats between tokens in y (0: ROWS)
override Y_OFFSET: u32 = 0u;  // first column of y written
override GATED: bool = false;

const WG: u32 = 64u;
const TT: u32 = 8u;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<uniform> step: Step;

var<workgroup> red: array<f32, 1024>;  // [2 halves][TT][WG]

fn dot_unit(v: ptr<function, array<f32, 32>>, xo: u32, n: u32) -> f32 {
  var s = 0.0;
  for (var i = 0u; i < n; i++) { s += (*v)[i] * x[xo + i]; }
  return s;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let n_tiles = (step.n_tokens + TT - 1u) / TT;
  let g = flat_group(wid, nwg);
  let row = g / n_tiles;
  let t0 = (g % n_tiles) * TT;
  if (row >= ROWS) { return; }
  let nt = min(TT, step.n_tokens - t0);
  var acc: array<f32, 16>;  // [half][TT]
  let units = (COLS + 31u) / 32u;
  let rb = row * w_row_bytes();
  let rb_up = (row + ROWS) * w_row_bytes();
  for (var u = lid; u < units; u += WG) {
    let n = min(32u, COLS - u * 32u);
    var v = w_unit(rb, u);
    for (var t = 0u; t < nt; t++) { acc[t] += dot_unit(&v, (t0 + t) * COLS + u * 32u, n); }
    if (GATED) {
      var vu = w_unit(rb_up, u);
      for (var t = 0u; t < nt; t++) { acc[TT + t] += dot_unit(&vu, (t0 + t) * COLS + u * 32u, n); }
    }
  }
  for (var t = 0u; t < TT; t++) {
    red[t * WG + lid] = acc[t];
    red[(TT + t) * WG + lid] = acc[TT + t];
  }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var t = 0u; t < 2u * TT; t++) { red[t * WG + lid] += red[t * WG + lid + s]; }
    }
    workgroupBarrier();
  }
  if (lid < nt) {
    let stride = select(ROWS, Y_STRIDE, Y_STRIDE != 0u);
    var r = red[lid * WG];
    if (GATED) { r = r / (1.0 + exp(-r)) * red[(TT + lid) * WG]; }
    y[(t0 + lid) * stride + Y_OFFSET + row] = r;
  }
}
