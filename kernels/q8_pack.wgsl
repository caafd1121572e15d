// One 32-element unit (8 vec4s) as x_q8.wgsl stores it: d = max|v| / 127, q = round(v / d) as
// 4 signed bytes per word, and (d, sum of q). The CPU twin is ref::quantize_q8.
struct Q8Unit {
  lo: vec4u,
  hi: vec4u,
  ds: vec2f,
}
fn q8_pack(v: ptr<function, array<vec4f, 8>>) -> Q8Unit {
  var amax = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let a = abs((*v)[i]);
    amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
  }
  let inv = select(0.0, 127.0 / amax, amax > 0.0);
  var w: array<u32, 8>;
  var s = 0;
  for (var i = 0u; i < 8u; i++) {
    let q = vec4i(round((*v)[i] * inv));
    s += q.x + q.y + q.z + q.w;
    w[i] = pack4xI8(q);
  }
  return Q8Unit(vec4u(w[0], w[1], w[2], w[3]), vec4u(w[4], w[5], w[6], w[7]), vec2f(amax / 127.0, f32(s)));
}
