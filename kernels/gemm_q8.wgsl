// Prefill y[t, Y_OFFSET + r] = W[r] . x[t] on quantized weights, x as int8 units (x_q8.wgsl): the
// tiled GEMM of gemm.wgsl (64 virtual rows x 64 tokens per workgroup, a 4 x 4 micro-tile per thread;
// RM = 8: 128 rows and 8 x 4) with int8 tiles. Weight units are decoded once per tile (w_load of the dotq8 snippet) and x units
// loaded into workgroup memory; then every thread runs 8 dot4I8Packed per (row, token) of its
// micro-tile and unit, and w_combine applies the scales. GATED as in
// gemm.wgsl: virtual rows 0..31 are gate rows, 32..63 the same rows of up.
//!include common
//!include WEIGHT
//!include x_q8
//!include DOT

override ROWS: u32;           // output rows (per half when GATED)
override COLS: u32;           // input width, a multiple of 32
override Y_STRIDE: u32 = 0u;  // floats between tokens in y (0: ROWS)
override Y_OFFSET: u32 = 0u;
override GATED: bool = false;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(STEP_BINDING) var<uniform> step: Step;

// Four units (128 columns) per step (H200: +1.5-2.3% prefill over two; half the barriers). The
// tile's units (TR weight rows and 64 tokens, for each unit of the step) are staged by the threads in
// turn, SPT each, a weight unit decoded once per tile
// (w_load). The next step's units are loaded into registers while this step's tiles are multiplied,
// so the global loads' latency hides behind the dot products. Codes live in separate lo/hi arrays:
// the 16 tokens a warp reads are then 256 contiguous bytes.
// (64 x 128 tiles, 8 tokens per thread: +4% on a 1B model, -1% on a 4B one, on the H200.)
override UPS: u32 = 4u;  // units per step: 4, or 2 where workgroup memory is under 22.5 KB (GraphBuilder)
override RM: u32 = 4u;   // rows of a thread's micro-tile: 4, or 8 (a 128-row tile: x reused over twice the rows)
override TR: u32 = 16u * RM;                      // virtual rows per tile
override SPT: u32 = ((TR + 64u) * UPS + 255u) / 256u;  // units each thread stages per step (at most 3)
var<workgroup> wlo: array<vec4u, TR * UPS>;       // [unit][TR virtual rows]: codes 0..15 as bytes
var<workgroup> whi: array<vec4u, TR * UPS>;       // codes 16..31
var<workgroup> wf: array<vec2f, TR * UPS>;        // the unit's floats (w_floats)
var<workgroup> xlo: array<vec4u, 64u * UPS>;      // [unit][64 tokens]
var<workgroup> xhi: array<vec4u, 64u * UPS>;
var<workgroup> xf: array<vec3f, 64u * UPS>;       // (d, sum of q, sum of q over 0..15)

fn real_row(tile: u32, v: u32) -> u32 {
  if (GATED) { return tile * (TR / 2u) + (v % (TR / 2u)); }
  return tile * TR + v;
}
// Virtual row of micro-tile row j of thread row group tr; gated: gate rows first, then their up rows.
fn vrow(tr: u32, j: u32) -> u32 {
  let h = RM / 2u;
  if (GATED) { return select(TR / 2u + h * tr + j - h, h * tr + j, j < h); }
  return RM * tr + j;
}
// The integer dot of 16 codes with 16 x values, 4 to a word.
fn dot16(a: vec4u, b: vec4u) -> i32 {
  return dot4I8Packed(a.x, b.x) + dot4I8Packed(a.y, b.y) + dot4I8Packed(a.z, b.z) + dot4I8Packed(a.w, b.w);
}

struct Staged {
  lo: vec4u,
  hi: vec4u,
  f: vec3f,
}
// Unit i of step s's tile: weight units first ([unit][row]), then x units ([unit][token]); zeros past
// the matrix, the pass or the row (they add nothing).
fn stage(s: u32, i: u32, rt: u32, t0: u32, n_tokens: u32) -> Staged {
  var st = Staged(vec4u(0u), vec4u(0u), vec3f(0.0));
  if (i < TR * UPS) {
    let u = s * UPS + i / TR;
    let r = real_row(rt, i % TR);
    if (u < COLS / 32u && r < ROWS) {
      let wu = w_load((r + select(0u, ROWS, GATED && i % TR >= TR / 2u)) * w_row_bytes(), u);
      st = Staged(wu.lo, wu.hi, vec3f(w_floats(wu), 0.0));
    }
  } else if (i < (TR + 64u) * UPS) {
    let j = i - TR * UPS;
    let u = s * UPS + j / 64u;
    let t = t0 + j % 64u;
    if (u < COLS / 32u && t < n_tokens) {
      let xu = x_unit(t, u);
      st = Staged(xu.lo, xu.hi, vec3f(xu.d, xu.s, f32(dot16(xu.lo, vec4u(0x01010101u)))));
    }
  }
  return st;
}
fn put(i: u32, st: Staged) {
  if (i < TR * UPS) {
    wlo[i] = st.lo;
    whi[i] = st.hi;
    wf[i] = st.f.xy;
  } else if (i < (TR + 64u) * UPS) {
    let j = i - TR * UPS;
    xlo[j] = st.lo;
    xhi[j] = st.hi;
    xf[j] = st.f;
  }
}
// Token t's column m of a thread's micro-tile into y; GATED: rows j < RM / 2 are gate rows and
// j + RM / 2 the same rows of up, stored as silu(gate) * up.
fn store_token(acc: ptr<function, array<vec4f, 8>>, m: u32, t: u32, rt: u32, tr: u32) {
  let stride = select(ROWS, Y_STRIDE, Y_STRIDE != 0u);
  if (GATED) {
    for (var j = 0u; j < RM / 2u; j++) {
      let r = rt * (TR / 2u) + (RM / 2u) * tr + j;
      let gv = (*acc)[j][m];
      if (r < ROWS) { y[t * stride + Y_OFFSET + r] = gv / (1.0 + exp(-gv)) * (*acc)[j + RM / 2u][m]; }
    }
  } else {
    for (var j = 0u; j < RM; j++) {
      let r = rt * TR + RM * tr + j;
      if (r < ROWS) { y[t * stride + Y_OFFSET + r] = (*acc)[j][m]; }
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let rows_per_tile = select(TR, TR / 2u, GATED);
  let row_tiles = (ROWS + rows_per_tile - 1u) / rows_per_tile;
  let g = flat_group(wid, nwg);
  let rt = g % row_tiles;
  let t0 = (g / row_tiles) * 64u;
  let n_tokens = step.n_tokens;
  if (t0 >= n_tokens) { return; }
  let tr = lid / 16u;  // micro-tile row group
  let tt = lid % 16u;  // micro-tile tokens tt, tt + 16, tt + 32, tt + 48
  var acc: array<vec4f, 8>;  // [row j][token m], RM rows
  let steps = (COLS / 32u + UPS - 1u) / UPS;
  var next: array<Staged, 3>;  // (TR + 64) UPS units per step: SPT per thread
  for (var k = 0u; k < SPT; k++) { next[k] = stage(0u, lid + 256u * k, rt, t0, n_tokens); }
  for (var s = 0u; s < steps; s++) {
    for (var k = 0u; k < SPT; k++) { put(lid + 256u * k, next[k]); }
    workgroupBarrier();
    if (s + 1u < steps) {
      for (var k = 0u; k < SPT; k++) { next[k] = stage(s + 1u, lid + 256u * k, rt, t0, n_tokens); }
    }
    for (var uu = 0u; uu < UPS; uu++) {
      if (RM == 4u) {  // the four rows' units in registers, each token's unit read once
        var wl: array<vec4u, 4>;
        var wh: array<vec4u, 4>;
        var wff: array<vec2f, 4>;
        for (var j = 0u; j < 4u; j++) {
          let v = uu * TR + vrow(tr, j);
          wl[j] = wlo[v];
          wh[j] = whi[v];
          wff[j] = wf[v];
        }
        for (var m = 0u; m < 4u; m++) {
          let t = uu * 64u + tt + 16u * m;
          let xl = xlo[t];
          let xh = xhi[t];
          let x3 = xf[t];
          for (var j = 0u; j < 4u; j++) {
            acc[j][m] += w_combine(wff[j], dot16(wl[j], xl), dot16(wh[j], xh), x3);
          }
        }
      } else {  // eight rows: the four tokens' units in registers, each row's unit read once
        var xl: array<vec4u, 4>;
        var xh: array<vec4u, 4>;
        var x3: array<vec3f, 4>;
        for (var m = 0u; m < 4u; m++) {
          let t = uu * 64u + tt + 16u * m;
          xl[m] = xlo[t];
          xh[m] = xhi[t];
          x3[m] = xf[t];
        }
        for (var j = 0u; j < RM; j++) {
          let v = uu * TR + vrow(tr, j);
          let wl = wlo[v];
          let wh = whi[v];
          let wff = wf[v];
          for (var m = 0u; m < 4u; m++) {
            acc[j][m] += w_combine(wff, dot16(wl, xl[m]), dot16(wh, xh[m]), x3[m]);
          }
        }
      }
    }
    workgroupBarrier();
  }
  for (var m = 0u; m < 4u; m++) {
    let t = t0 + tt + 16u * m;
    if (t < n_tokens) { store_token(&acc, m, t, rt, tr); }
  }
}
