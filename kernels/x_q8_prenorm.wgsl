// x_q8_norm.wgsl after a projection that stored x * weight and its rows' squares summed per
// workgroup (y_resid_norm.wgsl): each workgroup packs the stored products into int8 units and adds up
// the sums of squares for rmsnorm's r, instead of reading x and the weights and multiplying them.
// The units, r and the workgroup's arrays are x_q8_norm.wgsl's (x_emit_q8.wgsl reads them too).
// SS_ROWS: rows per stored sum (a divisor of 32). One token; COLS % 32 == 0.
//!include q8_pack
//!include PACK8 q8_pack8_none
//!include x_q8_made
//!include XEMIT
@group(0) @binding(3) var<storage, read> xa: array<vec4f>;  // x * weight
@group(0) @binding(5) var<storage, read> ssp: array<f32>;   // sums of x^2, SS_ROWS rows each
override NORM_EPS: f32;
override SS_ROWS: u32;
override PPU: u32 = 32u / SS_ROWS;  // stored sums a unit
override PPT: u32 = (PPU + 7u) / 8u;  // of them a thread with PACK8 (up to 4)
const X_BINDINGS = 6u + X_EMIT_BINDINGS;

fn x_prepare(lid: u32, first_group: bool) {
  if (PACK8) {  // a vec4 a thread, 8 threads a unit (q8_pack8.wgsl), as x_q8_norm.wgsl
    for (var k0 = 0u; k0 < COLS / 4u; k0 += WG) {  // the same trip count in every thread
      let k = min(k0 + lid, COLS / 4u - 1u);
      let p = q8_pack8(xa[k]);
      var pp = vec4f(0.0);  // the thread's share of its unit's stored sums
      for (var m = 0u; m < PPT; m++) {
        let q = (k % 8u) * PPT + m;
        if (q < PPU) { pp[m] = ssp[(k / 8u) * PPU + q]; }
      }
      var ss = 0.0;  // the unit's sums in order, on its thread 0
      for (var l = 0u; l < 8u; l++) {
        for (var m = 0u; m < PPT; m++) { ss += lane_xor(pp[m], l); }
      }
      if (k0 + lid < COLS / 4u) { x_keep_word(k, p, ss); }
    }
    workgroupBarrier();
    if (first_group) { x_emit(lid, x_scale()); }
    return;
  }
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
