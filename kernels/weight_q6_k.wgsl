// Q6_K: super-blocks of 256 elements, 210 bytes = ql[128] (low 4 bits), qh[64] (high 2 bits),
// int8 scales[16], f16 d. Element 128n + 32k + l (n<2, k<4, l<32) takes: low bits from
// ql[64n + l + 32*(k&1)] (low nibble if k<2, else high), high bits (qh[32n + l] >> 2k) & 3,
// scale scales[8n + l/16 + 2k]; x = d * scale * (q - 32).
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS / 256u * 210u; }
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  let b = row_byte + (u / 8u) * 210u;
  let jj = u % 8u;
  let n = jj / 4u;
  let k = jj % 4u;
  let d = w_f16(b + 208u);
  let ql = b + 64u * n + 32u * (k & 1u);
  let qh = b + 128u + 32u * n;
  let sc = b + 192u + 8u * n + 2u * k;
  let s0 = d * f32(extractBits(i32(w_u8(sc)), 0u, 8u));
  let s1 = d * f32(extractBits(i32(w_u8(sc + 1u)), 0u, 8u));
  let lo_shift = select(0u, 4u, k >= 2u);
  for (var i = 0u; i < 8u; i++) {
    let lw = w_u32(ql + i * 4u);
    let hw = w_u32(qh + i * 4u);
    for (var c = 0u; c < 4u; c++) {
      let l = i * 4u + c;
      let lo = (lw >> (c * 8u + lo_shift)) & 0xFu;
      let hi = (hw >> (c * 8u + 2u * k)) & 3u;
      let q = f32(lo | (hi << 4u)) - 32.0;
      v[l] = select(s1, s0, l < 16u) * q;
    }
  }
  return v;
}
