// Prefill y[t, Y_OFFSET + r] = W[r] . x[t] on quantized weights, x as int8 units (x_q8.wgsl): the
// tiled GEMM of gemm.wgsl (64 virtual rows x 64 tokens per workgroup, a 4 x 4 micro-tile per thread)
// with int8 tiles. Weight units are decoded once per tile (w_load of the dotq8 snippet) and x units
// loaded into workgroup memory; then every thread runs 8 dot4I8Packed per (row, token) of its
// micro-tile and unit, and w_combine applies the scales. GATED as in
// gemm.wgsl: virtual rows 0..31 are gate rows, 32..63 the same rows of up.
// TILES says what a token tile is: the pass's next 64 tokens (gemm_tiles_dense.wgsl), or up to 64
// (token, expert) pairs of one expert (gemm_moe_tiles.wgsl), with the x and y rows of each slot.
//!include common
//!include WEIGHT
//!include x_q8
//!include DOT
//!include gemm_store
//!include HOUT h_out_f32
//!include TILES gemm_tiles_dense

override ROWS: u32;           // output rows (per half when GATED)
override COLS: u32;           // input width, a multiple of 32
override Y_STRIDE: u32 = 0u;  // floats between tokens in y (0: ROWS)
override Y_OFFSET: u32 = 0u;
override GATED: bool = false;
override KSPLIT: u32 = 1u;    // groups per tile along K, as in gemm.wgsl (partials for gemm_reduce.wgsl)
const RQ = 1u;                // a 4 x 4 micro-tile (gemm_store.wgsl)
const ACC_LEN = 4u;

@group(0) @binding(0) var<storage, read_write> y: array<vec4f>;  // f32s, stored as vec4s (gemm_store.wgsl)
@group(0) @binding(2) var<storage, read> w: array<vec4u>;  // 16-byte words: aligned loads of 4 words are one load
@group(0) @binding(STEP_BINDING) var<uniform> step: Step;

// Four units (128 columns) per step (H200: +1.5-2.3% prefill over two; half the barriers). The
// 64 x 64 tile's units (64 weight rows and 64 tokens, for each unit of the step) are staged by the
// threads in turn, two each, a weight unit decoded once per tile
// (w_load). The next step's units are loaded into registers while this step's tiles are multiplied,
// so the global loads' latency hides behind the dot products. Codes live in separate lo/hi arrays:
// the 16 tokens a warp reads are then 256 contiguous bytes.
// (64 x 128 tiles, 8 tokens per thread: +4% on a 1B model, -1% on a 4B one, on the H200.)
// LOWREG: fewer registers per thread. Units are staged when their step starts instead of a step
// ahead in registers, and each unit's 4 x 4 micro-tile is taken by halves (the low codes' integer
// dots, then the high ones' with the floats), so one half of the codes is live. On the H200: Q4_K
// 128 -> 113 registers, Q6_K 120 -> 91, Q4_0 117 -> 115; still two workgroups per SM, yet 4B Q4_K_M
// prefill +1.3..+1.6% and Q4_0 -0.9..-2.3%, so GraphBuilder sets it for the k-quants only.
override LOWREG: bool = false;
override UPS: u32 = 4u;  // units per step: 4, or 2 where workgroup memory is under 20 KB (GraphBuilder)
override SPT: u32 = UPS / 2u;                     // units each thread stages per step (at most 2)
var<workgroup> wlo: array<vec4u, 64u * UPS>;      // [unit][64 virtual rows]: codes 0..15 as bytes
var<workgroup> whi: array<vec4u, 64u * UPS>;      // codes 16..31
var<workgroup> wf: array<vec2f, 64u * UPS>;       // the unit's floats (w_floats)
var<workgroup> xlo: array<vec4u, 64u * UPS>;      // [unit][64 tokens]
var<workgroup> xhi: array<vec4u, 64u * UPS>;
var<workgroup> xf: array<vec2f, 64u * UPS>;       // (d, d x sum of q)

fn real_row(tile: u32, v: u32) -> u32 {
  if (GATED) { return tile * 32u + (v % 32u); }
  return tile * 64u + v;
}
// Virtual row of micro-tile row j of thread row group tr; gated: gate 2tr, 2tr+1, then their up rows.
fn vrow(tr: u32, j: u32) -> u32 {
  if (GATED) { return select(32u + 2u * tr + j - 2u, 2u * tr + j, j < 2u); }
  return 4u * tr + j;
}
// The integer dot of 16 codes with 16 x values, 4 to a word.
fn dot16(a: vec4u, b: vec4u) -> i32 {
  return dot4I8Packed(a.x, b.x) + dot4I8Packed(a.y, b.y) + dot4I8Packed(a.z, b.z) + dot4I8Packed(a.w, b.w);
}

struct Staged {
  lo: vec4u,
  hi: vec4u,
  f: vec2f,
}
// Unit i of step s's tile: weight units first, then x units; zeros past the matrix, the pass or the
// row (they add nothing). Neighbouring i are the step's UPS units of one row (or token), side by side
// in memory, so a warp's loads cover whole sectors; workgroup memory holds them [unit][row] (or
// [unit][token]) for the products: slot(i).
fn slot(i: u32) -> u32 { return (i % UPS) * 64u + i / UPS; }
fn stage(s: u32, i: u32, rt: u32, tile: Tile) -> Staged {
  var st = Staged(vec4u(0u), vec4u(0u), vec2f(0.0));
  if (i < 64u * UPS) {
    let u = s * UPS + i % UPS;
    let v = i / UPS;  // virtual row
    let r = real_row(rt, v);
    if (u < COLS / 32u && r < ROWS) {
      let wu = w_load((tile.row0 + r + select(0u, ROWS, GATED && v >= 32u)) * w_row_bytes(), u);
      st = Staged(w_gemm_codes(wu.lo), w_gemm_codes(wu.hi), w_floats(wu));
    }
  } else {
    let j = i - 64u * UPS;
    let u = s * UPS + j % UPS;
    let t = tile.t0 + j / UPS;
    if (u < COLS / 32u && t < tile.end) {
      let xu = x_unit(x_row(t), u);
      st = Staged(xu.lo, xu.hi, vec2f(xu.d, xu.d * xu.s));
    }
  }
  return st;
}
fn put(i: u32, st: Staged) {
  if (i < 64u * UPS) {
    wlo[slot(i)] = st.lo;
    whi[slot(i)] = st.hi;
    wf[slot(i)] = st.f;
  } else {
    let j = slot(i - 64u * UPS);
    xlo[j] = st.lo;
    xhi[j] = st.hi;
    xf[j] = st.f;
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  w_prologue(lid, 256u);  // the table of levels, for the types that have one (matvec.wgsl); a barrier
  let rows_per_tile = select(64u, 32u, GATED);
  let row_tiles = (ROWS + rows_per_tile - 1u) / rows_per_tile;
  let ks = flat_group(wid, nwg) % KSPLIT;  // neighbouring groups: the same tile, other K ranges
  let g = flat_group(wid, nwg) / KSPLIT;
  let rt = g % row_tiles;
  let tile = gemm_tile(g / row_tiles, lid);
  let t0 = tile.t0;
  let n_tokens = tile.end;  // slots t0 .. n_tokens - 1
  if (t0 >= n_tokens) { return; }
  let tr = micro_tile(lid).x;  // row group (gemm_store.wgsl)
  let tt = micro_tile(lid).y;  // token lane: tokens tt, tt + 16, tt + 32, tt + 48
  var acc: array<vec4f, 4>;  // [row j][token m]
  let live = min(4u, (n_tokens - t0 + 15u - tt) / 16u);  // SKIP_EMPTY: the thread's slots before end
  let steps = (COLS / 32u + UPS - 1u) / UPS;
  let s_begin = ks * steps / KSPLIT;
  let s_end = (ks + 1u) * steps / KSPLIT;
  var next: array<Staged, 2>;  // 128 UPS units per step: SPT per thread
  if (!LOWREG) {
    for (var k = 0u; k < SPT; k++) { next[k] = stage(s_begin, lid + 256u * k, rt, tile); }
  }
  for (var s = s_begin; s < s_end; s++) {
    for (var k = 0u; k < SPT; k++) {
      if (LOWREG) { put(lid + 256u * k, stage(s, lid + 256u * k, rt, tile)); } else { put(lid + 256u * k, next[k]); }
    }
    workgroupBarrier();
    if (!LOWREG && s + 1u < s_end) {
      for (var k = 0u; k < SPT; k++) { next[k] = stage(s + 1u, lid + 256u * k, rt, tile); }
    }
    for (var uu = 0u; uu < UPS; uu++) {
      if (LOWREG) {
        var lo: array<vec4i, 4>;  // [row j][token m]: the low codes' dots
        var wc: array<vec4u, 4>;
        for (var j = 0u; j < 4u; j++) { wc[j] = wlo[uu * 64u + vrow(tr, j)]; }
        for (var m = 0u; m < 4u; m++) {
          if (SKIP_EMPTY && m >= live) { continue; }
          let xl = xlo[uu * 64u + tt + 16u * m];
          for (var j = 0u; j < 4u; j++) { lo[j][m] = dot16(wc[j], xl); }
        }
        var wfl: array<vec2f, 4>;
        for (var j = 0u; j < 4u; j++) {
          wc[j] = whi[uu * 64u + vrow(tr, j)];
          wfl[j] = wf[uu * 64u + vrow(tr, j)];
        }
        for (var m = 0u; m < 4u; m++) {
          if (SKIP_EMPTY && m >= live) { continue; }
          let t = uu * 64u + tt + 16u * m;
          let xh = xhi[t];
          let x2 = xf[t];
          for (var j = 0u; j < 4u; j++) { acc[j][m] += w_combine(wfl[j], lo[j][m], dot16(wc[j], xh), x2); }
        }
        continue;
      }
      var wl: array<vec4u, 4>;
      var wh: array<vec4u, 4>;
      var wff: array<vec2f, 4>;
      for (var j = 0u; j < 4u; j++) {
        let v = uu * 64u + vrow(tr, j);
        wl[j] = wlo[v];
        wh[j] = whi[v];
        wff[j] = wf[v];
      }
      for (var m = 0u; m < 4u; m++) {
        if (SKIP_EMPTY && m >= live) { continue; }
        let t = uu * 64u + tt + 16u * m;
        let xl = xlo[t];
        let xh = xhi[t];
        let x2 = xf[t];
        for (var j = 0u; j < 4u; j++) {
          acc[j][m] += w_combine(wff[j], dot16(wl[j], xl), dot16(wh[j], xh), x2);
        }
      }
    }
    workgroupBarrier();
  }
  if (H_Q8) {  // int8 units of h for the next GEMM (h_out_q8.wgsl)
    store_h_q8(&acc, rt, tr, tt, t0, n_tokens, lid);
    return;
  }
  for (var m = 0u; m < 4u; m++) {
    let t = t0 + tt + 16u * m;
    if (t >= n_tokens) { continue; }
    if (KSPLIT > 1u) {
      store_partial(&acc, m, t, rt, tr, ks, n_tokens);
    } else {
      store_token(&acc, m, y_row(t), rt, tr);
    }
  }
}
