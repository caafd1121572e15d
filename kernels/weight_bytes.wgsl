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
