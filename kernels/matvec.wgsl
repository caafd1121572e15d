// Decode-time y = W x for one token. A group of LANES lanes owns RPL rows: each lane walks whole
// 32-element units (consecutive lanes, consecutive units), loads the unit of x once into registers
// and dots it with that unit of each of its rows, so x is read once per RPL rows, not per row.
// XIN says how x is stored (x_f32: floats; x_q8: int8 units, see quantize_q8.wgsl), DOT dots one
// weight unit of that encoding with one x unit (x_q8_norm: int8 units made in the workgroup from the
// residual step). GROUPS lane groups per workgroup, 2 unless x is made per workgroup: small
// workgroups keep every SM busy on short matrices (the host picks RPL so there are enough of them).
// GATED as in gemm.wgsl. Needs COLS % 32 == 0. Short passes of several tokens: matvec_tokens.wgsl.
// A matrix of two weight types (a Q4_K_M QKV: q|k Q4_K, v Q6_K) in one dispatch: W2DECL, WEIGHT2 and
// DOT2 bring the second type (weight2_binding.wgsl; by default weight2_none.wgsl), whose ROWS2 rows
// follow the first type's ROWS in y; a lane group takes rows of one type. YOUT = y_rope: a one-token
// QKV's rows stored as rope_kv.wgsl would (y_rope.wgsl; by default y_plain.wgsl). Each weight
// snippet's w_prologue goes first: it fills the workgroup's table of levels (IQ4_NL, IQ4_XS, MXFP4).
//!include common
//!include PACK8 q8_pack8_none
//!include WEIGHT
//!include XIN
//!include DOT
//!include XOUT
//!include matvec_sums
//!include W2DECL weight2_none
//!include WEIGHT2 weight2_none
//!include DOT2 weight2_none
//!include YOUT y_plain

override ROWS: u32;
override COLS: u32;
override Y_OFFSET: u32 = 0u;
override Y_STRIDE: u32 = 0u;  // unused with one token
override GATED: bool = false;
override ROWS2: u32 = 0u;    // rows of the second weight type (W2_TWO), a multiple of RPL after ROWS

override RPL: u32 = 4u;     // rows per lane group (1, 2 or 4)
override LANES: u32 = 32u;  // lanes per group (32 or 64): more lanes, more loads in flight per row
override GROUPS: u32 = 2u;  // lane groups per workgroup (more where x_q8_norm prepares x per workgroup)
override WG: u32 = 64u;     // GROUPS * LANES
const TT = 1u;
fn out_row(t: u32) -> u32 { return t; }  // y's rows are the tokens
const KEEP_SUMS = EMIT_Q8;
const XQ_BINDING = X_BINDINGS;  // XOUT's int8 units follow x's bindings

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<vec4u>;  // 16-byte words: aligned loads of 4 words are one load

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  w_prologue(lid, WG);
  w2_prologue(lid, WG);
  let lane = lid % LANES;
  let group = flat_group(wid, nwg);
  let row0 = group * GROUPS * RPL + (lid / LANES) * RPL;
  x_prepare(lid, group == 0u);
  var acc: array<f32, 32>;  // [half][row]: RPL rows, then their up rows when GATED
  let units = COLS / 32u;
  let rb = w_row_bytes();
  let second = W2_TWO && row0 >= ROWS;  // this lane group's rows are of the second type
  for (var s = lane; s < units; s += LANES) {
    var xu = x_unit(0u, s);
    for (var j = 0u; j < RPL; j++) {
      // Rows past the end repeat the last one (write_sums drops them): no branch around the loads.
      if (second) {
        acc[j] += w2_dot(min(row0 - ROWS + j, ROWS2 - 1u) * w2_row_bytes(), s, &xu);
      } else {
        let r = min(row0 + j, ROWS - 1u);
        acc[j] += w_dot(r * rb, s, &xu);
        if (GATED) { acc[RPL + j] += w_dot((r + ROWS) * rb, s, &xu); }
      }
    }
  }
  let scale = x_scale();
  write_sums(&acc, lid, row0, 0u, 1u, scale, select(ROWS + ROWS2, 0u, Y_ROPE));  // y_rope stores them instead
  y_rope(lid, row0, scale);
  // XOUT = x_out_q8: the workgroup's rows are one whole 32-element unit of y (the host checks), stored
  // as int8 units for the next matvec too, which saves a quantize_q8 dispatch.
  if (EMIT_Q8) {
    workgroupBarrier();
    if (PACK8) {  // 8 threads pack the unit (q8_pack8.wgsl)
      let i = lid % 8u;
      store_q8_vec4((Y_OFFSET + group * GROUPS * RPL) / 32u, i, lid < 8u,
                    vec4f(kept[4u * i], kept[4u * i + 1u], kept[4u * i + 2u], kept[4u * i + 3u]));
    } else if (lid == 0u) {
      var v: array<vec4f, 8>;
      for (var i = 0u; i < 8u; i++) { v[i] = vec4f(kept[4u * i], kept[4u * i + 1u], kept[4u * i + 2u], kept[4u * i + 3u]); }
      store_q8((Y_OFFSET + row0) / 32u, &v);
    }
  }
}
