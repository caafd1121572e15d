// Second half of the split-K GEMM (gemm.wgsl with KSPLIT > 1): y[t, Y_OFFSET + r] = the sum of the
// KSPLIT partials of row r, or for GATED silu(sum of gate partials) * (sum of up partials) — what the
// unsplit GEMM writes. One thread per output element; a workgroup covers 256 rows of one token, so
// its reads of each partial row are contiguous.
//!include common

override ROWS: u32;           // output rows (per half when GATED)
override KSPLIT: u32;         // partials per output
override Y_STRIDE: u32 = 0u;  // floats between tokens in y (0: ROWS)
override Y_OFFSET: u32 = 0u;
override GATED: bool = false;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> part: array<f32>;  // [KSPLIT][n_tokens][ROWS, or gate|up 2 ROWS]
@group(0) @binding(2) var<uniform> step: Step;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let blocks = (ROWS + 255u) / 256u;  // workgroups per token
  let g = flat_group(wid, nwg);
  let t = g / blocks;
  let r = (g % blocks) * 256u + lid;
  if (t >= step.n_tokens || r >= ROWS) { return; }
  let vrows = select(ROWS, 2u * ROWS, GATED);
  var sum = 0.0;
  var up = 0.0;
  for (var ks = 0u; ks < KSPLIT; ks++) {
    let base = (ks * step.n_tokens + t) * vrows;
    sum += part[base + r];
    if (GATED) { up += part[base + ROWS + r]; }
  }
  var v = sum;
  if (GATED) { v = sum / (1.0 + exp(-sum)) * up; }
  y[t * select(ROWS, Y_STRIDE, Y_STRIDE != 0u) + Y_OFFSET + r] = v;
}
