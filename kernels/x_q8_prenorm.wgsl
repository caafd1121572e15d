// x_q8_norm.wgsl after a projection that stored x * weight and its rows' squares summed per
// workgroup (y_resid_norm.wgsl): each workgroup packs the stored products into int8 units and adds up
// the sums of squares for rmsnorm's r, instead of reading x and the weights and multiplying them.
// The units, r and the workgroup's arrays are x_q8_norm.wgsl's (x_emit_q8.wgsl reads them too).
// SS_ROWS: rows per stored sum (a divisor of 32). One token; COLS % 32 == 0.
//!include q8_pack
//!include x_q8_made
//!include XEMIT
@group(0) @binding(3) var<storage, read> xa: array<vec4f>;  // x * weight
@group(0) @binding(5) var<storage, read> ssp: array<f32>;   // sums of x^2, SS_ROWS rows each
override NORM_EPS: f32;
override SS_ROWS: u32;
const X_BINDINGS = 6u + X_EMIT_BINDINGS;

fn x_prepare(lid: u32, first_group: bool) {
  for (var u = lid; u < COLS / 32u; u += WG) {
    var v: array<vec4f, 8>;
    for (var i = 0u; i < 8u; i++) { v[i] = xa[u * 8u + i]; }
    var ss = 0.0;
    for (var p = u * (32u / SS_ROWS); p < (u + 1u) * (32u / SS_ROWS); p++) { ss += ssp[p]; }
    x_keep_unit(u, &v, ss);
  }
  workgroupBarrier();
  if (first_group) { x_emit(lid, x_scale()); }
}
