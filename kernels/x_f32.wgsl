// The matvec's input as f32: a 32-element unit is 8 vec4s, loaded once per unit by each lane.
@group(0) @binding(1) var<storage, read> xv: array<vec4f>;
const X_BINDINGS = 3u;

alias XUnit = array<vec4f, 8>;
fn x_unit(t: u32, u: u32) -> XUnit {
  var v: XUnit;
  let b = t * (COLS / 4u) + u * 8u;
  for (var i = 0u; i < 8u; i++) { v[i] = xv[b + i]; }
  return v;
}
fn x_prepare(lid: u32, first_group: bool) {}
fn x_scale() -> f32 { return 1.0; }
