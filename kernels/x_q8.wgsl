// The matvec's input quantized to int8 (quantize_q8.wgsl), as llama.cpp's q8_1: per 32-element unit,
// 8 words of 4 signed bytes and (d, s) with x ~ d * q and s = sum of the unit's q. A lane loads 32 + 8
// bytes per unit instead of 128, and the dots run as dot4I8Packed on whole words.
@group(0) @binding(1) var<storage, read> xq: array<vec4u>;
@group(0) @binding(3) var<storage, read> xs: array<vec2f>;
const STEP_BINDING = 4u;
const X_BINDINGS = 4u;  // bindings 0-3 are the kernel's and x's

struct XUnit {
  lo: vec4u,  // elements 0..15, four per word, element 4i in the low byte of word i
  hi: vec4u,  // elements 16..31
  d: f32,
  s: f32,
}
// Unit u of token t: tokens are COLS / 32 units apart.
fn x_unit(t: u32, u: u32) -> XUnit {
  let i = t * (COLS / 32u) + u;
  let ds = xs[i];
  return XUnit(xq[2u * i], xq[2u * i + 1u], ds.x, ds.y);
}
// Nothing to prepare or scale (x_q8_norm.wgsl does both).
fn x_prepare(lid: u32, first_group: bool) {}
fn x_scale() -> f32 { return 1.0; }
