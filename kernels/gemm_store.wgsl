// What gemm.wgsl and gemm_q8.wgsl share: which 4 x 4 micro-tile a thread owns, and storing token t's
// column of it into y.
// Thread lid owns row group tr and token lane tt (tokens tt, tt + 16, tt + 32, tt + 48) of the 64 x 64
// tile. Lane bit 0 picks tr's low bit and lane bits 1..4 tt, so lanes n and n^1 read the same x vec4
// and lanes n and n^2 the same weight vec4: NVIDIA then returns a warp's 16-byte workgroup-memory
// loads in two passes instead of four (H200: +1.3..+8.6% prefill, bench/EXPERIMENTS.md).
fn micro_tile(lid: u32) -> vec2u { return vec2u((lid & 1u) | ((lid >> 5u) << 1u), (lid >> 1u) & 15u); }
// Row j of the micro-tile is row 4 tr + j of row tile rt; GATED: j < 2 are gate rows 2 tr + j of a
// 32-row tile and j >= 2 the same rows of up, stored as silu(gate) * up.
fn store_token(acc: ptr<function, array<vec4f, 4>>, m: u32, t: u32, rt: u32, tr: u32) {
  let stride = select(ROWS, Y_STRIDE, Y_STRIDE != 0u);
  if (GATED) {
    for (var j = 0u; j < 2u; j++) {
      let r = rt * 32u + 2u * tr + j;
      let gv = (*acc)[j][m];
      if (r < ROWS) { y[t * stride + Y_OFFSET + r] = gv / (1.0 + exp(-gv)) * (*acc)[j + 2u][m]; }
    }
  } else {
    for (var j = 0u; j < 4u; j++) {
      let r = rt * 64u + 4u * tr + j;
      if (r < ROWS) { y[t * stride + Y_OFFSET + r] = (*acc)[j][m]; }
    }
  }
}
// With KSPLIT > 1 the column goes to the partials scratch bound as y instead: part[ks][t][vrow], vrow
// over the ROWS rows, or GATED the ROWS gate rows then the ROWS up rows (no SiLU: it does not distribute
// over the sum); gemm_reduce.wgsl adds the KSPLIT partials and writes y.
fn store_partial(acc: ptr<function, array<vec4f, 4>>, m: u32, t: u32, rt: u32, tr: u32, ks: u32, n_tokens: u32) {
  let base = (ks * n_tokens + t) * select(ROWS, 2u * ROWS, GATED);
  for (var j = 0u; j < 4u; j++) {
    // acc[j] is row 4 tr + j, or gated: gate (j < 2) / up (j >= 2) of real row 2 tr + j % 2
    var r = rt * 64u + 4u * tr + j;
    if (GATED) { r = rt * 32u + 2u * tr + j % 2u; }
    if (r < ROWS) { y[base + select(0u, ROWS, GATED && j >= 2u) + r] = (*acc)[j][m]; }
  }
}
