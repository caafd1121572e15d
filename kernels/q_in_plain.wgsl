// attention_decode.wgsl's query and caches when rope_kv.wgsl ran before it: q after RoPE, this
// token's key and value already in the cache, which is only read.
@group(0) @binding(1) var<storage, read> q: array<f32>;           // [NH*HD], after RoPE
@group(0) @binding(2) var<storage, read> k_cache: array<vec4u>;  // [pages][NKV][HD / 8][PAGE] x 8 halves
@group(0) @binding(3) var<storage, read> v_cache: array<vec4u>;  // [pages][PAGE][NKV] rows of HD / 8 x 8 halves
const QIN_BINDINGS = 0u;  // bindings after the kernel's six

// qv = query head h, scaled. Every thread calls it.
fn q_prepare(h: u32, kvh: u32, pos: u32, lid: u32, own_kv: bool) {
  for (var i = lid; i < HD / 4u; i += WG) {
    let b = h * HD + i * 4u;
    qv[i] = vec4f(q[b], q[b + 1u], q[b + 2u], q[b + 3u]) * SCALE;
  }
}

// Scores and values come from the cache only.
fn fresh_score(p: u32, s: f32) -> f32 { return s; }
fn fresh_value(p: u32, c: u32, v: vec4u) -> vec4u { return v; }
