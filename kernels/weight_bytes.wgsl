// Byte-level reads from the weight binding `w` (GGUF blocks in place; blocks need not be 4-byte aligned).
fn w_u8(byte: u32) -> u32 {
  return (w[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xFFu;
}
// 16 bits at an even byte offset.
fn w_u16(byte: u32) -> u32 {
  return (w[byte >> 2u] >> ((byte & 2u) * 8u)) & 0xFFFFu;
}
// 32 bits at any byte offset.
fn w_u32(byte: u32) -> u32 {
  let i = byte >> 2u;
  let s = (byte & 3u) * 8u;
  if (s == 0u) { return w[i]; }
  return (w[i] >> s) | (w[i + 1u] << (32u - s));
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
