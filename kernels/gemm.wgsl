// Prefill y[t, Y_OFFSET + r] = W[r] . x[t] for a chunk of tokens: a tiled GEMM. A workgroup owns
// 64 RQ (virtual) rows x 64 tokens; per 32-column step it dequantizes the weight tile once into
// workgroup memory (WEIGHT snippet), loads the x tile beside it (both a step ahead, into registers),
// and each of its 256 threads accumulates a 4 RQ rows x 4 tokens micro-tile in registers. TILE sets
// RQ: gemm_rq1 (4 x 4), or gemm_rq2 (8 x 4, 24 KB of workgroup memory), which feeds 32 FMAs per three
// 16-byte workgroup-memory loads instead of 16 per two (GraphBuilder::add_gemm_wide). GATED: the
// 64 RQ virtual rows are 32 RQ gate rows then the same up rows, and the thread writes silu(gate) * up
// for its 2 RQ real rows.
// Split-K (KSPLIT > 1), for short passes whose grid is too small to fill the GPU: KSPLIT groups share
// each tile, group ks walks units [ks * units / KSPLIT, (ks + 1) * units / KSPLIT) and stores its raw
// sums in the scratch bound as `y` (layout below); gemm_reduce.wgsl adds them up and writes y.
//!include common
//!include WEIGHT
//!include TILE gemm_rq1
//!include gemm_store

override ROWS: u32;           // output rows (per half when GATED)
override COLS: u32;           // input width
override Y_STRIDE: u32 = 0u;  // floats between tokens in y (0: ROWS)
override Y_OFFSET: u32 = 0u;
override GATED: bool = false;
override KSPLIT: u32 = 1u;    // groups per tile along K; 1: this kernel writes y itself
const VR = 64u * RQ;  // virtual rows per tile

// With KSPLIT > 1, y is the partials scratch (gemm_store.wgsl's store_partial).
@group(0) @binding(0) var<storage, read_write> y: array<vec4f>;  // f32s, stored as vec4s (gemm_store.wgsl)
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<vec4u>;  // 16-byte words: aligned loads of 4 words are one load
@group(0) @binding(3) var<uniform> step: Step;

// Both tiles are stored as the vec4s the inner loop reads: ws[k][q] = the 4 weights of row quad q at
// column k (thread row group tr holds quads RQ tr .. RQ tr + RQ - 1), xs[k][l] = x of tokens l, l+16,
// l+32, l+48 at column k.
var<workgroup> ws: array<vec4f, 512u * RQ>;  // [32 k][16 RQ row quads]
var<workgroup> xs: array<vec4f, 512>;        // [32 k][16 token lanes]

// The real row behind virtual row v of row tile `tile`.
fn real_row(tile: u32, v: u32) -> u32 {
  if (GATED) { return tile * (VR / 2u) + (v % (VR / 2u)); }
  return tile * VR + v;
}

// Where virtual row v sits in ws: (quad, component). Gated quads are (gate r, gate r+1, up r, up r+1).
fn ws_slot(v: u32) -> vec2u {
  if (GATED) { return vec2u((v % (VR / 2u)) / 2u, (v / (VR / 2u)) * 2u + v % 2u); }
  return vec2u(v / 4u, v % 4u);
}

// Thread lid's share of unit u's tiles, loaded a step ahead into registers (staged by the next step):
// the weight unit of virtual row lid (threads 0..VR-1), and x of token lid / 4, columns 8 (lid % 4)..+8.
fn load_w(rt: u32, lid: u32, u: u32) -> array<f32, 32> {
  var v = array<f32, 32>();  // explicit zeros (see attention_flash.wgsl's scores)
  let r = real_row(rt, lid);
  if (lid < VR && r < ROWS) {
    let up = GATED && lid >= VR / 2u;
    v = w_unit((r + select(0u, ROWS, up)) * w_row_bytes(), u);
  }
  return v;
}
fn load_x(t0: u32, lid: u32, u: u32, n_tokens: u32) -> array<f32, 8> {
  var v = array<f32, 8>();
  let t = t0 + lid / 4u;
  let c0 = u * 32u + (lid % 4u) * 8u;
  for (var k = 0u; k < 8u; k++) {
    if (t < n_tokens && c0 + k < COLS) { v[k] = x[t * COLS + c0 + k]; }
  }
  return v;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let rows_per_tile = select(VR, VR / 2u, GATED);
  let row_tiles = (ROWS + rows_per_tile - 1u) / rows_per_tile;
  let ks = flat_group(wid, nwg) % KSPLIT;  // neighbouring groups: the same tile, other K ranges
  let g = flat_group(wid, nwg) / KSPLIT;
  let rt = g % row_tiles;
  let t0 = (g / row_tiles) * 64u;
  if (t0 >= step.n_tokens) { return; }
  let tr = micro_tile(lid).x;  // row group (gemm_store.wgsl)
  let tt = micro_tile(lid).y;  // token lane: tokens tt, tt + 16, tt + 32, tt + 48
  var acc: array<vec4f, ACC_LEN>;  // [row j][token m]
  let units = (COLS + 31u) / 32u;
  let u_end = (ks + 1u) * units / KSPLIT;
  let u_begin = ks * units / KSPLIT;
  var wv = load_w(rt, lid, u_begin);
  var xv = load_x(t0, lid, u_begin, step.n_tokens);
  for (var u = u_begin; u < u_end; u++) {
    if (lid < VR) {  // weight tile: one 32-element unit per virtual row
      let slot = ws_slot(lid);
      for (var k = 0u; k < 32u; k++) { ws[k * 16u * RQ + slot.x][slot.y] = wv[k]; }
    }
    {  // x tile: 64 tokens x 32 columns, 8 per thread
      let t = lid / 4u;
      let k0 = (lid % 4u) * 8u;
      for (var k = 0u; k < 8u; k++) { xs[(k0 + k) * 16u + t % 16u][t / 16u] = xv[k]; }
    }
    workgroupBarrier();
    if (u + 1u < u_end) {  // the next unit's loads in flight while this one multiplies
      wv = load_w(rt, lid, u + 1u);
      xv = load_x(t0, lid, u + 1u, step.n_tokens);
    }
    for (var k = 0u; k < 32u; k++) {
      let xt = xs[k * 16u + tt];
      for (var q = 0u; q < RQ; q++) {
        let wr = ws[(k * 16u + tr) * RQ + q];
        acc[4u * q] += wr.x * xt;
        acc[4u * q + 1u] += wr.y * xt;
        acc[4u * q + 2u] += wr.z * xt;
        acc[4u * q + 3u] += wr.w * xt;
      }
    }
    workgroupBarrier();
  }
  for (var m = 0u; m < 4u; m++) {
    let t = t0 + tt + 16u * m;
    if (t >= step.n_tokens) { continue; }
    if (KSPLIT > 1u) {
      store_partial(&acc, m, t, rt, tr, ks, step.n_tokens);
    } else {
      store_token(&acc, m, t, rt, tr);
    }
  }
}
