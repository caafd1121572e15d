// What q_in_rope.wgsl and q_in_rope_split.wgsl share: the bindings of a kernel that makes its heads
// from the raw qkv row, and this token's key and value kept in the workgroup. The query heads of one
// KV head all write the same cache words, and reading one's own writes back would need a storage
// barrier (lavapipe: 3.5x slower decode), so this position is scored and weighed from k_new and v_new.
@group(0) @binding(1) var<storage, read> qkv: array<f32>;              // [(NH + 2 NKV) * HD], the token's raw row
@group(0) @binding(2) var<storage, read_write> k_cache: array<vec4u>;  // as q_in_plain.wgsl
@group(0) @binding(3) var<storage, read_write> v_cache: array<vec4u>;
@group(0) @binding(6) var<storage, read> aux: array<f32>;              // [q_norm HD | k_norm HD | bias]
@group(0) @binding(7) var<storage, read> rope: array<vec2f>;           // [pos][ROT/2] (cos, sin)
const QIN_BINDINGS = 2u;

// This token's key and value as the cache words (f16 pairs): unpacking the words later, not the floats
// now, keeps the compiler from folding the f16 rounding away (lavapipe did).
var<workgroup> k_new: array<u32, 64>;
var<workgroup> v_new: array<u32, 64>;

// Appends word i of the key and of the value at pos to the cache and keeps them in k_new, v_new.
fn keep_kv_word(i: u32, page: u32, kvh: u32, pos: u32, kw: u32, vw: u32) {
  let kb = ((page * NKV + kvh) * (HD / 8u) + i / 4u) * PAGE + pos % PAGE;
  k_cache[kb][i % 4u] = kw;
  k_new[i] = kw;
  let vb = ((page * PAGE + pos % PAGE) * NKV + kvh) * (HD / 8u) + i / 4u;
  v_cache[vb][i % 4u] = vw;
  v_new[i] = vw;
}

// The score of position p, s from the cache: this token's from k_new (its cache words may not be
// written yet), by the one thread that has it.
fn fresh_score(p: u32, s: f32) -> f32 {
  if (p != step.pos0) { return s; }
  var s0 = 0.0;  // summed as attention_decode sums the cache's keys
  var s1 = 0.0;
  for (var d = 0u; d < HD / 8u; d++) {
    s0 += dot(qv[2u * d], vec4f(unpack2x16float(k_new[4u * d]), unpack2x16float(k_new[4u * d + 1u])));
    s1 += dot(qv[2u * d + 1u], vec4f(unpack2x16float(k_new[4u * d + 2u]), unpack2x16float(k_new[4u * d + 3u])));
  }
  return s0 + s1;
}

// Value chunk c (8 halves, dims 8c..8c+7) of position p, v from the cache: this token's from v_new.
fn fresh_value(p: u32, c: u32, v: vec4u) -> vec4u {
  return select(v, vec4u(v_new[4u * c], v_new[4u * c + 1u], v_new[4u * c + 2u], v_new[4u * c + 3u]), p == step.pos0);
}
