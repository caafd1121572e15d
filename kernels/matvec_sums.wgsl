// The end of matvec.wgsl and matvec_tokens.wgsl: adds up each lane group's partial sums
// (acc[(half * TT + t) * RPL + j] for token t, row j; half 1: the up rows when GATED) and lane i of
// the group writes output i = (token t0 + i / RPL, row row0 + i % RPL) to y's row out_row(token) (the
// kernel's: the token itself, or matvec_moe.wgsl's pair), or silu(gate) * up, the sums
// times `scale` (x's rmsnorm factor with x_q8_norm.wgsl, else 1); rows past `rows` are dropped.
// [half][token][row][WG lanes], each sum's lanes WG + 1 apart so that the lanes adding up different sums
// read different banks.
var<workgroup> red: array<f32, 2u * RPL * TT * (WG + 1u)>;
var<workgroup> kept: array<f32, 32>;  // KEEP_SUMS: the outputs of one token, by row in the workgroup

// Sum j of the lane group whose lane 0 is `base`: its LANES partials, read in four independent chains
// after one barrier (a tree over workgroup memory took log2(LANES) barriers).
fn lane_sum(j: u32, base: u32) -> f32 {
  var s = vec4f(0.0);
  let o = j * (WG + 1u) + base;
  for (var i = 0u; i < LANES; i += 4u) { s += vec4f(red[o + i], red[o + i + 1u], red[o + i + 2u], red[o + i + 3u]); }
  return (s.x + s.y) + (s.z + s.w);
}

fn write_sums(acc: ptr<function, array<f32, 32>>, lid: u32, row0: u32, t0: u32, nt: u32, scale: f32, rows: u32) {
  let lane = lid % LANES;
  let n_acc = select(1u, 2u, GATED) * RPL * TT;
  for (var j = 0u; j < n_acc; j++) { red[j * (WG + 1u) + lid] = (*acc)[j]; }
  workgroupBarrier();
  let t = lane / RPL;
  let j = lane % RPL;
  if (lane < RPL * TT && t < nt && row0 + j < rows) {
    let base = lid - lane;  // the group's partials start at its lane 0
    var r = lane_sum(t * RPL + j, base) * scale;
    if (GATED) { r = r / (1.0 + exp(-r)) * lane_sum((TT + t) * RPL + j, base) * scale; }
    let i = out_row(t0 + t) * Y_STRIDE + Y_OFFSET + row0 + j;
    r += y_extra(i);  // YOUT y_resid: the residual stream's sum
    y[i] = r;
    y_after(i, r, (lid / LANES) * RPL + j);  // YOUT y_resid_norm: x * the next norm's weight, x^2
    if (KEEP_SUMS) { kept[(lid / LANES) * RPL + j] = r; }
  }
}
