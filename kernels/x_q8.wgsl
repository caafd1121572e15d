// The matvec's input quantized to int8 (quantize_q8.wgsl), as llama.cpp's q8_1: per 32-element unit,
// 8 words of 4 signed bytes and (d, s) with x ~ d * q and s = sum of the unit's q. A lane loads 32 + 8
// bytes per unit instead of 128, and the dots run as dot4I8Packed on whole words.
@group(0) @binding(1) var<storage, read> xq: array<vec4u>;
@group(0) @binding(3) var<storage, read> xs: array<vec2f>;

struct XUnit {
  lo: vec4u,  // elements 0..15, four per word, element 4i in the low byte of word i
  hi: vec4u,  // elements 16..31
  d: f32,
  s: f32,
}
fn x_unit(u: u32) -> XUnit {
  let ds = xs[u];
  return XUnit(xq[2u * u], xq[2u * u + 1u], ds.x, ds.y);
}
// Word i (0..7) of the unit: elements 4i..4i+3.
fn x_word(xu: ptr<function, XUnit>, i: u32) -> u32 {
  return select((*xu).hi[i & 3u], (*xu).lo[i & 3u], i < 4u);
}
// Sum of the q in words [i0, i0 + 4).
fn x_half_sum(xu: ptr<function, XUnit>, i0: u32) -> i32 {
  var s = 0;
  for (var i = i0; i < i0 + 4u; i++) { s += dot4I8Packed(x_word(xu, i), 0x01010101u); }
  return s;
}
