// The decode matvec's input made in the workgroup instead of by an add_rmsnorm dispatch (which costs
// ~6 us per call on the H200, most of it the dispatch itself): x = a + b is the residual step, and
// the matvec needs int8 units of rmsnorm(x) * weight. rmsnorm's scale r = 1 / sqrt(mean(x^2) + eps)
// is one number per token, and scaling a unit does not change its int8 codes, only its d, so the
// workgroup packs x * weight (q8_pack) into workgroup memory and multiplies each row's sum by r at
// the end. Workgroup 0 also stores x, the new residual stream. Every workgroup reads all of a, b and
// weight (from L2), so the host gives it many rows (GROUPS lane groups); where the matvec before stored
// the sum itself (XTWO = x_two_none, y_resid.wgsl), only x and weight. One token; COLS % 32 == 0.
// XEMIT: x_emit_q8 where later parts of the matrix read x as int8 units, else x_emit_none.
//!include q8_pack
//!include PACK8 q8_pack8_none
//!include x_q8_made
//!include XEMIT
//!include XTWO x_two_add
@group(0) @binding(3) var<storage, read> xa: array<vec4f>;
@group(0) @binding(5) var<storage, read> xnorm: array<vec4f>;
override NORM_EPS: f32;
const X_BINDINGS = 6u + X_EMIT_BINDINGS;

fn x_prepare(lid: u32, first_group: bool) {
  if (PACK8) {  // a vec4 a thread, 8 threads a unit (q8_pack8.wgsl). One vec4 a turn: holding a
    // thread's vec4s in registers to load them all first lost 14% on the H200 (bench/EXPERIMENTS.md).
    for (var k0 = 0u; k0 < COLS / 4u; k0 += WG) {  // the same trip count in every thread
      let k = min(k0 + lid, COLS / 4u - 1u);
      let s = x_two(k, xa[k], first_group);
      let p = q8_pack8(s * xnorm[k]);
      let ss = unit_sum8(dot(s, s));
      if (k0 + lid < COLS / 4u) { x_keep_word(k, p, ss); }
    }
    workgroupBarrier();
    if (first_group) { x_emit(lid, x_scale()); }
    return;
  }
  for (var u = lid; u < COLS / 32u; u += WG) {
    var v: array<vec4f, 8>;
    var ss = 0.0;
    for (var i = 0u; i < 8u; i++) {
      let k = u * 8u + i;
      let s = x_two(k, xa[k], first_group);
      ss += dot(s, s);
      v[i] = s * xnorm[k];
    }
    x_keep_unit(u, &v, ss);
  }
  workgroupBarrier();
  if (first_group) { x_emit(lid, x_scale()); }
}
