// The end of matvec.wgsl and matvec_tokens.wgsl: adds up each lane group's partial sums
// (acc[(half * TT + t) * RPL + j] for token t, row j; half 1: the up rows when GATED) and lane i of
// the group writes output i = (token t0 + i / RPL, row row0 + i % RPL), or silu(gate) * up, the sums
// times `scale` (x's rmsnorm factor with x_q8_norm.wgsl, else 1); rows past `rows` are dropped.
var<workgroup> red: array<f32, 2u * RPL * TT * WG>;  // [half][token][row][WG lanes]
var<workgroup> kept: array<f32, 32>;  // KEEP_SUMS: the outputs of one token, by row in the workgroup

fn write_sums(acc: ptr<function, array<f32, 32>>, lid: u32, row0: u32, t0: u32, nt: u32, scale: f32, rows: u32) {
  let lane = lid % LANES;
  let n_acc = select(1u, 2u, GATED) * RPL * TT;
  for (var j = 0u; j < n_acc; j++) { red[j * WG + lid] = (*acc)[j]; }
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      for (var j = 0u; j < n_acc; j++) { red[j * WG + lid] += red[j * WG + lid + s]; }
    }
    workgroupBarrier();
  }
  let t = lane / RPL;
  let j = lane % RPL;
  if (lane < RPL * TT && t < nt && row0 + j < rows) {
    let base = lid - lane;  // lane 0 of this group holds the sums
    var r = red[(t * RPL + j) * WG + base] * scale;
    if (GATED) { r = r / (1.0 + exp(-r)) * red[((TT + t) * RPL + j) * WG + base] * scale; }
    y[(t0 + t) * Y_STRIDE + Y_OFFSET + row0 + j] = r;
    if (KEEP_SUMS) { kept[(lid / LANES) * RPL + j] = r; }
  }
}
