// What gemm.wgsl and gemm_q8.wgsl share: which micro-tile a thread owns, and storing token t's column
// of it into y. The including kernel says how tall the micro-tile is: RQ quads of rows (4 RQ rows,
// a tile of 64 RQ virtual rows), with acc an array<vec4f, ACC_LEN> of rows (ACC_LEN >= 4 RQ).
// Thread lid owns row group tr and token lane tt (tokens tt, tt + 16, tt + 32, tt + 48) of the tile.
// RQ 1: lane bit 0 picks tr's low bit and lane bits 1..4 tt, so lanes n and n^1 read the same x vec4
// and lanes n and n^2 the same weight vec4: NVIDIA then returns a warp's 16-byte workgroup-memory
// loads in two passes instead of four (H200: +1.3..+8.6% prefill, bench/EXPERIMENTS.md).
// RQ 2: a warp is 4 row groups x 8 token lanes, so its two weight loads (4 distinct 32-byte rows
// apart) and its x load (8 neighbouring vec4s) each take one pass.
fn micro_tile(lid: u32) -> vec2u {
  if (RQ == 1u) { return vec2u((lid & 1u) | ((lid >> 5u) << 1u), (lid >> 1u) & 15u); }
  return vec2u((lid & 3u) | (((lid >> 5u) & 3u) << 2u), ((lid >> 2u) & 7u) | ((lid >> 7u) << 3u));
}
// The real row behind row j of thread row group tr's micro-tile in row tile rt, and whether it is an
// up row. Row j is component j % 4 of the thread's quad RQ tr + j / 4; GATED quads are (gate r, gate
// r + 1, up r, up r + 1) with r = 2 (RQ tr + j / 4), the up rows stored as silu(gate) * up.
fn tile_row(rt: u32, tr: u32, j: u32) -> u32 {
  let quad = RQ * tr + j / 4u;
  if (GATED) { return rt * 32u * RQ + 2u * quad + j % 2u; }
  return rt * 64u * RQ + 4u * quad + j % 4u;
}
// y is bound as vec4s so that a plain tile's quad of rows (4 consecutive rows of one token) is one
// 16-byte store where the rows, offset and stride keep it aligned: a warp's store then fills 16 whole
// 32-byte sectors instead of touching each with 8 bytes (scalar elements are set by component).
fn y_set(i: u32, v: f32) { y[i / 4u][i % 4u] = v; }
fn store_token(acc: ptr<function, array<vec4f, ACC_LEN>>, m: u32, t: u32, rt: u32, tr: u32) {
  let stride = select(ROWS, Y_STRIDE, Y_STRIDE != 0u);
  let quads = !GATED && ROWS % 4u == 0u && stride % 4u == 0u && Y_OFFSET % 4u == 0u;
  for (var j = 0u; j < 4u * RQ; j++) {
    let r = tile_row(rt, tr, j);
    if (GATED) {
      if (j % 4u < 2u && r < ROWS) {
        let gv = (*acc)[j][m];
        y_set(t * stride + Y_OFFSET + r, gv / (1.0 + exp(-gv)) * (*acc)[j + 2u][m]);
      }
    } else if (quads) {
      if (j % 4u == 0u && r < ROWS) {
        y[(t * stride + Y_OFFSET + r) / 4u] = vec4f((*acc)[j][m], (*acc)[j + 1u][m], (*acc)[j + 2u][m], (*acc)[j + 3u][m]);
      }
    } else if (r < ROWS) {
      y_set(t * stride + Y_OFFSET + r, (*acc)[j][m]);
    }
  }
}
// With KSPLIT > 1 the column goes to the partials scratch bound as y instead: part[ks][t][vrow], vrow
// over the ROWS rows, or GATED the ROWS gate rows then the ROWS up rows (no SiLU: it does not distribute
// over the sum); gemm_reduce.wgsl adds the KSPLIT partials and writes y.
fn store_partial(acc: ptr<function, array<vec4f, ACC_LEN>>, m: u32, t: u32, rt: u32, tr: u32, ks: u32, n_tokens: u32) {
  let base = (ks * n_tokens + t) * select(ROWS, 2u * ROWS, GATED);
  for (var j = 0u; j < 4u * RQ; j++) {
    let r = tile_row(rt, tr, j);
    if (r < ROWS) { y_set(base + select(0u, ROWS, GATED && j % 4u >= 2u) + r, (*acc)[j][m]); }
  }
}
