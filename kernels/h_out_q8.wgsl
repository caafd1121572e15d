// gemm_q8.wgsl's gated tiles (GATED, UPS 4) storing h = silu(gate) * up as the int8 units the next
// GEMM reads (x_q8.wgsl) instead of f32: a tile's 32 rows are one unit of each of its 64 tokens, so no
// quantize_q8 dispatch is needed and h takes 40 bytes a unit instead of 128. The values and their
// rounding are those of store_token then quantize_q8.wgsl (q8_pack.wgsl), so the units are the same.
// The tile goes through wlo and whi (free after the last step's barrier) as 64 tokens x 32 rows of f32
// bits, each row XOR-swizzled by the token so that neither the writers nor the readers share banks;
// then 4 threads make a token's unit, 8 rows each, sharing their max |v| and sums of q through wf.
@group(0) @binding(5) var<storage, read_write> hq: array<vec2u>;  // [token][unit]: 8 words, 2 per thread
@group(0) @binding(6) var<storage, read_write> hs: array<vec2f>;  // [token][unit]: (d, sum of q)
const H_Q8 = true;

fn h_slot(tl: u32, row: u32) -> u32 { return (tl % 32u) * 32u + (row ^ (tl % 8u)); }
fn h_put(tl: u32, row: u32, v: f32) {
  let s = h_slot(tl, row);
  if (tl < 32u) { wlo[s / 4u][s % 4u] = bitcast<u32>(v); } else { whi[s / 4u][s % 4u] = bitcast<u32>(v); }
}
fn h_get(tl: u32, row: u32) -> f32 {
  let s = h_slot(tl, row);
  return bitcast<f32>(select(whi[s / 4u][s % 4u], wlo[s / 4u][s % 4u], tl < 32u));
}

// Every thread of the workgroup calls it (barriers), after the last step's barrier.
fn store_h_q8(acc: ptr<function, array<vec4f, ACC_LEN>>, rt: u32, tr: u32, tt: u32, t0: u32, n_tokens: u32, lid: u32) {
  for (var m = 0u; m < 4u; m++) {
    for (var j = 0u; j < 2u; j++) {  // rows 2 tr + j: gate in acc[j], up in acc[j + 2]
      let gv = (*acc)[j][m];
      h_put(tt + 16u * m, 2u * tr + j, gv / (1.0 + exp(-gv)) * (*acc)[j + 2u][m]);
    }
  }
  workgroupBarrier();
  let tl = lid / 4u;  // the token
  let p = lid % 4u;   // rows 8p .. 8p + 7: words 2p, 2p + 1 of the unit
  var v: array<f32, 8>;
  var amax = 0.0;
  for (var c = 0u; c < 8u; c++) {
    v[c] = h_get(tl, 8u * p + c);
    amax = max(amax, abs(v[c]));
  }
  wf[lid].x = amax;
  workgroupBarrier();
  amax = max(max(wf[4u * tl].x, wf[4u * tl + 1u].x), max(wf[4u * tl + 2u].x, wf[4u * tl + 3u].x));
  let scale = select(0.0, 127.0 / amax, amax > 0.0);
  let q0 = vec4i(round(vec4f(v[0], v[1], v[2], v[3]) * scale));
  let q1 = vec4i(round(vec4f(v[4], v[5], v[6], v[7]) * scale));
  wf[lid].y = f32(q0.x + q0.y + q0.z + q0.w + q1.x + q1.y + q1.z + q1.w);
  let t = t0 + tl;
  let u = y_row(t) * (ROWS / 32u) + rt;  // the slot's row of h (TILES)
  if (t < n_tokens) {
    hq[4u * u + p] = vec2u(pack4xI8(q0), pack4xI8(q1));  // a token's 4 threads: its unit's 32 bytes
  }
  workgroupBarrier();
  if (p == 0u && t < n_tokens) {
    hs[u] = vec2f(amax / 127.0, wf[4u * tl].y + wf[4u * tl + 1u].y + wf[4u * tl + 2u].y + wf[4u * tl + 3u].y);
  }
}
