// Prefill y[t, Y_OFFSET + r] = W[r] . x[t] on quantized weights, x as int8 units (x_q8.wgsl): the
// tiled GEMM of gemm.wgsl (64 virtual rows x 64 tokens per workgroup, a 4 x 4 micro-tile per thread)
// with int8 tiles. Per 32-column step, 64 threads decode a weight unit each (w_load of the dotq8
// snippet) and 64 threads load a token's x unit into workgroup memory; then every thread runs 8
// dot4I8Packed per (row, token) of its micro-tile, and w_combine applies the scales. GATED as in
// gemm.wgsl: virtual rows 0..31 are gate rows, 32..63 the same rows of up.
//!include common
//!include WEIGHT
//!include x_q8
//!include DOT
//!include gemm_store

override ROWS: u32;           // output rows (per half when GATED)
override COLS: u32;           // input width, a multiple of 32
override Y_STRIDE: u32 = 0u;  // floats between tokens in y (0: ROWS)
override Y_OFFSET: u32 = 0u;
override GATED: bool = false;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(STEP_BINDING) var<uniform> step: Step;

var<workgroup> wq: array<vec4u, 128>;  // [64 virtual rows][lo, hi]: the unit's 32 codes as bytes
var<workgroup> wf: array<vec2f, 64>;   // the unit's floats (w_floats)
var<workgroup> xw: array<vec4u, 128>;  // [64 tokens][lo, hi]
var<workgroup> xf: array<vec3f, 64>;   // (d, sum of q, sum of q over elements 0..15)

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

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let rows_per_tile = select(64u, 32u, GATED);
  let row_tiles = (ROWS + rows_per_tile - 1u) / rows_per_tile;
  let g = flat_group(wid, nwg);
  let rt = g % row_tiles;
  let t0 = (g / row_tiles) * 64u;
  if (t0 >= step.n_tokens) { return; }
  let tr = lid / 16u;  // micro-tile row group
  let tt = lid % 16u;  // micro-tile tokens tt, tt+16, tt+32, tt+48
  var acc: array<vec4f, 4>;  // [row j][token m]
  let rb = w_row_bytes();
  for (var u = 0u; u < COLS / 32u; u++) {
    if (lid < 64u) {  // weight tile: one unit per virtual row
      let r = real_row(rt, lid);
      var lo = vec4u(0u);
      var hi = vec4u(0u);
      var f = vec2f(0.0);
      if (r < ROWS) {
        let wu = w_load((r + select(0u, ROWS, GATED && lid >= 32u)) * rb, u);
        lo = wu.lo;
        hi = wu.hi;
        f = w_floats(wu);
      }
      wq[2u * lid] = lo;
      wq[2u * lid + 1u] = hi;
      wf[lid] = f;
    } else if (lid < 128u) {  // x tile: one unit per token
      let t = lid - 64u;
      var lo = vec4u(0u);
      var hi = vec4u(0u);
      var f = vec3f(0.0);
      if (t0 + t < step.n_tokens) {
        let xu = x_unit(t0 + t, u);
        lo = xu.lo;
        hi = xu.hi;
        f = vec3f(xu.d, xu.s, f32(dot16(lo, vec4u(0x01010101u))));
      }
      xw[2u * t] = lo;
      xw[2u * t + 1u] = hi;
      xf[t] = f;
    }
    workgroupBarrier();
    var xlo: array<vec4u, 4>;
    var xhi: array<vec4u, 4>;
    var xs3: array<vec3f, 4>;
    for (var m = 0u; m < 4u; m++) {
      let t = tt + 16u * m;
      xlo[m] = xw[2u * t];
      xhi[m] = xw[2u * t + 1u];
      xs3[m] = xf[t];
    }
    for (var j = 0u; j < 4u; j++) {
      let v = vrow(tr, j);
      let wlo = wq[2u * v];
      let whi = wq[2u * v + 1u];
      let f = wf[v];
      for (var m = 0u; m < 4u; m++) {
        acc[j][m] += w_combine(f, dot16(wlo, xlo[m]), dot16(whi, xhi[m]), xs3[m]);
      }
    }
    workgroupBarrier();
  }
  for (var m = 0u; m < 4u; m++) {
    let t = t0 + tt + 16u * m;
    if (t < step.n_tokens) { store_token(&acc, m, t, rt, tr); }
  }
}
