// Q5_K sub-block u (weight_q5_k.wgsl) against an int8 x unit (x_q8.wgsl): x = d*scale_j q - dmin*min_j.
struct WUnit {
  lo: vec4u,  // codes 0..31 of elements 0..15 as bytes
  hi: vec4u,  // elements 16..31
  d: f32,     // d * scale_j
  m: f32,     // -dmin * min_j
}
fn w_load(row_byte: u32, u: u32) -> WUnit {
  let q = w_q5_k(row_byte, u);
  return WUnit(q.lo, q.hi, q.f.x, -q.f.y);
}
//!include dotq8_scale_min
