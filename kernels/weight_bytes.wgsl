// Reads from the weight binding `w`, an array of 16-byte words so that 4 aligned 32-bit words are one
// load (w_quad). Byte-level reads serve GGUF blocks in place, which need not be 4-byte aligned.
fn w_word(i: u32) -> u32 { return w[i >> 2u][i & 3u]; }
// Words 4 q .. 4 q + 3.
fn w_quad(q: u32) -> vec4u { return w[q]; }
fn w_u8(byte: u32) -> u32 {
  return (w_word(byte >> 2u) >> ((byte & 3u) * 8u)) & 0xFFu;
}
// 16 bits at an even byte offset.
fn w_u16(byte: u32) -> u32 {
  return (w_word(byte >> 2u) >> ((byte & 2u) * 8u)) & 0xFFFFu;
}
// 32 bits at any byte offset.
fn w_u32(byte: u32) -> u32 {
  let i = byte >> 2u;
  let s = (byte & 3u) * 8u;
  if (s == 0u) { return w_word(i); }
  return (w_word(i) >> s) | (w_word(i + 1u) << (32u - s));
}
fn w_f16(byte: u32) -> f32 {
  return unpack2x16float(w_u16(byte)).x;
}
// The 32 bits that start s bits into word a and run on into word b (s = 0, 8, 16 or 24), without a
// branch: neighbouring lanes whose blocks have different alignments (18- and 34-byte blocks
// alternate) then stay on one path instead of running both sides of w_u32's `if`.
fn w_funnel(a: u32, b: u32, s: u32) -> u32 {
  return select((a >> s) | (b << (32u - s)), a, s == 0u);
}
