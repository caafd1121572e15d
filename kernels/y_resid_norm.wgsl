// y_resid.wgsl for an o or down projection whose next matvec makes its x from a norm of this output
// (x_q8_prenorm.wgsl): each row is stored added to the residual, and also times that norm's weight
// (xw), and each workgroup stores the sum of its rows' squares (ssp, one float per workgroup). The
// next matvec's workgroups, each of which makes all of x, then read x * weight and those sums: about
// half the bytes from L2 of reading x and the weights (x_q8_norm.wgsl), and none of the multiplies.
@group(0) @binding(X_BINDINGS) var<storage, read> resid: array<f32>;
@group(0) @binding(X_BINDINGS + 1u) var<storage, read> nw: array<f32>;
@group(0) @binding(X_BINDINGS + 2u) var<storage, read_write> xw: array<f32>;
@group(0) @binding(X_BINDINGS + 3u) var<storage, read_write> ssp: array<f32>;
const Y_ROPE = false;
var<workgroup> y_sq: array<f32, 32>;  // by row in the workgroup (GROUPS * RPL <= 32: the host checks)
fn y_extra(i: u32) -> f32 { return resid[i]; }
fn y_after(i: u32, r: f32, slot: u32) {
  xw[i] = r * nw[i];
  y_sq[slot] = r * r;
}
// After write_sums (every lane): lane 0 adds up the workgroup's rows, in order.
fn y_rope(lid: u32, row0: u32, scale: f32) {
  workgroupBarrier();
  if (lid == 0u) {
    var s = 0.0;
    for (var j = 0u; j < GROUPS * RPL; j++) {
      if (row0 + j < ROWS) { s += y_sq[j]; }
    }
    ssp[row0 / (GROUPS * RPL)] = s;
  }
}
