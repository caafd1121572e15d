// Decode-time y = W x for one token. A group of 32 lanes owns RPL rows: each lane walks whole
// 32-element units (consecutive lanes, consecutive units), loads the unit of x once into registers
// and dots it with that unit of each of its rows — so x is read once per RPL rows, not per row.
// XIN says how x is stored (x_f32: floats; x_q8: int8 units from quantize_q8.wgsl), DOT dots one
// weight unit of that encoding with one x unit.
// 2 lane groups per workgroup: small workgroups keep every SM busy on short matrices (the host picks
// RPL so there are enough of them). The DOT snippet knows the weight encoding; GATED as in gemm.wgsl.
// Needs COLS % 32 == 0.
//!include common
//!include WEIGHT
//!include XIN
//!include DOT

override ROWS: u32;
override COLS: u32;
override Y_OFFSET: u32 = 0u;
override GATED: bool = false;

override RPL: u32 = 4u;     // rows per lane group (1, 2 or 4)
override LANES: u32 = 32u;  // lanes per group (32 or 64): more lanes, more loads in flight per row
override WG: u32 = 64u;     // 2 * LANES

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;

var<workgroup> red: array<f32, 1024>;  // [2 halves][RPL][WG lanes]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let lane = lid % LANES;
  let row0 = flat_group(wid, nwg) * 2u * RPL + (lid / LANES) * RPL;
  var acc: array<f32, 8>;  // [half][RPL]
  let units = COLS / 32u;
  let rb = w_row_bytes();
  for (var u = lane; u < units; u += LANES) {
    var xu = x_unit(u);
    for (var j = 0u; j < RPL; j++) {
      let r = row0 + j;
      if (r < ROWS) {
        acc[j] += w_dot(r * rb, u, &xu);
        if (GATED) { acc[RPL + j] += w_dot((r + ROWS) * rb, u, &xu); }
      }
    }
  }
  for (var j = 0u; j < 2u * RPL; j++) { red[j * WG + lid] = acc[j]; }
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      for (var j = 0u; j < 2u * RPL; j++) { red[j * WG + lid] += red[j * WG + lid + s]; }
    }
    workgroupBarrier();
  }
  if (lane < RPL && row0 + lane < ROWS) {
    let base = lid - lane;  // lane 0 of this group holds the sums
    var r = red[lane * WG + base];
    if (GATED) { r = r / (1.0 + exp(-r)) * red[(RPL + lane) * WG + base]; }
    y[Y_OFFSET + row0 + lane] = r;
  }
}
