// attention_flash.wgsl's queries made from the pass's raw qkv rows: bias, QK-norm and RoPE as
// rope_head.wgsl applies them, then the scale. rope_kv.wgsl before it then makes only the key and value
// heads (GraphBuilder: FIRST_HEAD), so no q buffer is written and read back. Each query row belongs to
// one workgroup, so nothing is made twice (over splits, once per split: 32 rows each).
@group(0) @binding(1) var<storage, read> qkv: array<vec4f>;   // [T, (NH + 2 NKV) HD], un-rotated
@group(0) @binding(7) var<storage, read> aux: array<f32>;     // [q_norm HD | k_norm HD | bias (NH + 2 NKV) HD]
@group(0) @binding(8) var<storage, read> rope: array<vec2f>;  // [pos][ROT / 2] (cos, sin)
const QIN_BINDINGS = 2u;

override ROT: u32;            // rotated dims per head (<= HD)
override NEOX: bool = true;   // rotate (i, i + ROT/2) instead of (2i, 2i+1)
override QK_NORM: bool = false;
override HAS_BIAS: bool = false;
override EPS: f32 = 1e-6;

fn qt_at(r: u32, d: u32) -> f32 { return qt[r * QST + d / 4u][d % 4u]; }
fn qt_set(r: u32, d: u32, v: f32) { qt[r * QST + d / 4u][d % 4u] = v; }

// qt = the tile's 32 query rows (row r: head h0 + r % G of token t0 + r / G) x SCALE x log2(e); rows
// past the pass repeat its last token (not stored). The raw rows go to qt first; then WG / 32 threads
// per row add up its squares (through red, free until the first step) and rotate its pairs in place,
// each pair read and written by one thread. Every thread calls it.
fn stage_queries(t0: u32, T: u32, h0: u32, lid: u32) {
  let tpr = WG / ROWS;  // threads per row
  let r = lid / tpr;
  let p = lid % tpr;
  let pos = step.pos0 + min(t0 + r / G, T - 1u);
  // The thread's rotation pairs j = p, p + tpr, ... (at most 16: HD <= 128, tpr >= 4): their (cos, sin)
  // and norm weights loaded with the raw rows, so that no load waits behind the barriers.
  let half = ROT / 2u;
  var cs: array<vec2f, 16>;
  var nab: array<vec2f, 16>;
  for (var n = 0u; n < 16u; n++) {
    let j = p + n * tpr;
    if (j >= half) { break; }
    cs[n] = rope[pos * half + j];
    if (QK_NORM) { nab[n] = select(vec2f(aux[2u * j], aux[2u * j + 1u]), vec2f(aux[j], aux[j + half]), NEOX); }
  }
  let row_vec4s = (NH + 2u * NKV) * HD4;
  for (var i = lid; i < ROWS * HD4; i += WG) {
    let r = i / HD4;
    let t = min(t0 + r / G, T - 1u);
    let h = h0 + r % G;
    var v = qkv[t * row_vec4s + h * HD4 + i % HD4];
    if (HAS_BIAS) {
      let b = 2u * HD + h * HD + (i % HD4) * 4u;
      v += vec4f(aux[b], aux[b + 1u], aux[b + 2u], aux[b + 3u]);
    }
    qt[r * QST + i % HD4] = v;
  }
  workgroupBarrier();
  var inv = 1.0;
  if (QK_NORM) {
    var ss = 0.0;
    for (var c = p; c < HD4; c += tpr) {
      let v = qt[r * QST + c];
      ss += dot(v, v);
    }
    red[lid / 4u][lid % 4u] = ss;
    workgroupBarrier();
    var tot = 0.0;
    for (var j = r * tpr; j < (r + 1u) * tpr; j++) { tot += red[j / 4u][j % 4u]; }
    inv = inverseSqrt(tot / f32(HD) + EPS);
  }
  let sc = SCALE * LOG2E;
  for (var n = 0u; n < 16u; n++) {
    let j = p + n * tpr;
    if (j >= half) { break; }
    var ia = 2u * j;
    var ib = 2u * j + 1u;
    if (NEOX) { ia = j; ib = j + half; }
    var ab = vec2f(qt_at(r, ia), qt_at(r, ib));
    if (QK_NORM) { ab *= inv * nab[n]; }
    let c = cs[n];
    qt_set(r, ia, (ab.x * c.x - ab.y * c.y) * sc);
    qt_set(r, ib, (ab.x * c.y + ab.y * c.x) * sc);
  }
  for (var d = ROT + p; d < HD; d += tpr) {  // dims past the rotated ones
    var v = qt_at(r, d);
    if (QK_NORM) { v = v * inv * aux[d]; }
    qt_set(r, d, v * sc);
  }
}
