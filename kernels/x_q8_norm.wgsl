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
//!include XEMIT
//!include XTWO x_two_add
@group(0) @binding(3) var<storage, read> xa: array<vec4f>;
@group(0) @binding(5) var<storage, read> xnorm: array<vec4f>;
override NORM_EPS: f32;
const X_BINDINGS = 6u + X_EMIT_BINDINGS;

struct XUnit {
  lo: vec4u,
  hi: vec4u,
  d: f32,
  s: f32,
}
var<workgroup> xl_q: array<vec4u, COLS / 16u>;  // unit u: words 2u, 2u + 1
var<workgroup> xl_ds: array<vec2f, COLS / 32u>;
var<workgroup> xl_ss: array<f32, COLS / 32u>;  // sum of x^2 over each unit

fn x_prepare(lid: u32, first_group: bool) {
  for (var u = lid; u < COLS / 32u; u += WG) {
    var v: array<vec4f, 8>;
    var ss = 0.0;
    for (var i = 0u; i < 8u; i++) {
      let k = u * 8u + i;
      let s = x_two(k, xa[k], first_group);
      ss += dot(s, s);
      v[i] = s * xnorm[k];
    }
    let q = q8_pack(&v);
    xl_q[2u * u] = q.lo;
    xl_q[2u * u + 1u] = q.hi;
    xl_ds[u] = q.ds;
    xl_ss[u] = ss;
  }
  workgroupBarrier();
  if (first_group) { x_emit(lid, x_scale()); }
}
fn x_unit(t: u32, u: u32) -> XUnit {
  let ds = xl_ds[u];
  return XUnit(xl_q[2u * u], xl_q[2u * u + 1u], ds.x, ds.y);
}
// r, for the lanes that write the row sums (after x_prepare's barrier).
fn x_scale() -> f32 {
  var ss = 0.0;
  for (var u = 0u; u < COLS / 32u; u++) { ss += xl_ss[u]; }
  return inverseSqrt(ss / f32(COLS) + NORM_EPS);
}
