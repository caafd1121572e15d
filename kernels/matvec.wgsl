// Decode-time y = W x for one token: 32 lanes per row, each lane streaming whole 32-element units
// (consecutive lanes, consecutive units) and dotting them straight against x as vec4s; 8 rows per
// workgroup. The DOT snippet knows the weight encoding. GATED as in gemm.wgsl. COLS % 32 == 0.
//!include common
//!include WEIGHT
//!include DOT

override ROWS: u32;
override COLS: u32;
override Y_OFFSET: u32 = 0u;
override GATED: bool = false;

const LANES: u32 = 32u;
const RPW: u32 = 8u;  // rows per workgroup

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> xv: array<vec4f>;
@group(0) @binding(2) var<storage, read> w: array<u32>;

var<workgroup> red: array<f32, 512>;  // [2 halves][256 lanes]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let lane = lid % LANES;
  let row = flat_group(wid, nwg) * RPW + lid / LANES;
  var acc = 0.0;
  var acc_up = 0.0;
  if (row < ROWS) {
    let units = COLS / 32u;
    let rb = row * w_row_bytes();
    let rb_up = (row + ROWS) * w_row_bytes();
    for (var u = lane; u < units; u += LANES) {
      acc += w_dot(rb, u);
      if (GATED) { acc_up += w_dot(rb_up, u); }
    }
  }
  red[lid] = acc;
  red[256u + lid] = acc_up;
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      red[lid] += red[lid + s];
      red[256u + lid] += red[256u + lid + s];
    }
    workgroupBarrier();
  }
  if (lane == 0u && row < ROWS) {
    var r = red[lid];
    if (GATED) { r = r / (1.0 + exp(-r)) * red[256u + lid]; }
    y[Y_OFFSET + row] = r;
  }
}
