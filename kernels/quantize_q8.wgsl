// One token's x (f32) -> int8 units for the matvec (x_q8.wgsl): per 32 elements, d = max|x| / 127 and
// q = round(x / d) in 8 words of packed signed bytes, with s = sum(q). One thread per unit; the
// CPU twin is ref::quantize_q8.
override COLS: u32;

@group(0) @binding(0) var<storage, read_write> xq: array<vec4u>;
@group(0) @binding(1) var<storage, read_write> xs: array<vec2f>;
@group(0) @binding(2) var<storage, read> x: array<vec4f>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let u = gid.x;
  if (u >= COLS / 32u) { return; }
  var v: array<vec4f, 8>;
  var amax = 0.0;
  for (var i = 0u; i < 8u; i++) {
    v[i] = x[u * 8u + i];
    let a = abs(v[i]);
    amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
  }
  let inv = select(0.0, 127.0 / amax, amax > 0.0);
  var w: array<u32, 8>;
  var s = 0;
  for (var i = 0u; i < 8u; i++) {
    let q = vec4i(round(v[i] * inv));
    s += q.x + q.y + q.z + q.w;
    w[i] = pack4xI8(q);
  }
  xq[2u * u] = vec4u(w[0], w[1], w[2], w[3]);
  xq[2u * u + 1u] = vec4u(w[4], w[5], w[6], w[7]);
  xs[u] = vec2f(amax / 127.0, f32(s));
}
