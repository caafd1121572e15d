// The int8 units of x that x_q8_norm.wgsl and x_q8_prenorm.wgsl make in the workgroup (x_prepare),
// as matvec.wgsl reads them (x_unit), with rmsnorm's factor r from their sums of squares (x_scale).
// x_emit_q8.wgsl stores them from these arrays.
struct XUnit {
  lo: vec4u,
  hi: vec4u,
  d: f32,
  s: f32,
}
var<workgroup> xl_q: array<vec4u, COLS / 16u>;  // unit u: words 2u, 2u + 1
var<workgroup> xl_ds: array<vec2f, COLS / 32u>;
var<workgroup> xl_ss: array<f32, COLS / 32u>;  // sum of x^2 over each unit

// Unit u of x (times the norm's weight) packed and kept, with its sum of x^2.
fn x_keep_unit(u: u32, v: ptr<function, array<vec4f, 8>>, ss: f32) {
  let q = q8_pack(v);
  xl_q[2u * u] = q.lo;
  xl_q[2u * u + 1u] = q.hi;
  xl_ds[u] = q.ds;
  xl_ss[u] = ss;
}
// Word k (elements 4k..4k+3) of x's units as 8 threads a unit packed it (q8_pack8.wgsl); its unit's
// d, sum of q and sum of x^2 from the unit's thread 0.
fn x_keep_word(k: u32, p: Q8Word, ss: f32) {
  xl_q[k / 4u][k % 4u] = p.w;
  if (k % 8u == 0u) {
    xl_ds[k / 8u] = p.ds;
    xl_ss[k / 8u] = ss;
  }
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
