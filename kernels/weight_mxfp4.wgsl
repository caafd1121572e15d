// MXFP4 (OCP microscaling): blocks of 32 elements, 17 bytes = an E8M0 scale byte e, then 16 bytes of
// 4-bit E2M1 codes (byte j: element j low, j + 16 high); x = e2m1(code) * 2^(e - 127). The E2M1
// values are kept doubled as int8 (0 1 2 3 4 6 8 12 and their negatives, as llama.cpp does) and the
// scale halved to match. Read as stored: blocks start at any byte (w_quad_at realigns).
//!include weight_bytes
//!include weight_bits
fn w_row_bytes() -> u32 { return COLS / 32u * 17u; }
const W_E2M1_DOUBLED = vec4u(0x03020100u, 0x0C080604u, 0xFDFEFF00u, 0xF4F8FAFCu);
// 2^(e - 128): e's bits as an f32 exponent (e - 1), or the two subnormals below.
fn w_mxfp4_d(row_byte: u32, u: u32) -> f32 {
  let e = w_u8(row_byte + u * 17u);
  return bitcast<f32>(select((e - 1u) << 23u, 0x00200000u << e, e < 2u));
}
fn w_mxfp4_q(row_byte: u32, u: u32) -> vec4u { return w_quad_at(row_byte + u * 17u + 1u); }  // code pairs
fn w_prologue(lid: u32, threads: u32) { w_fill_pairs(lid, threads, W_E2M1_DOUBLED); }
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  let d = w_mxfp4_d(row_byte, u);
  let q = w_levels(w_mxfp4_q(row_byte, u), W_E2M1_DOUBLED);
  return w_bytes_to_floats(q[0], q[1], d, d, 0.0);
}
