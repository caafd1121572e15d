// F16 weights: 2 bytes per element, unpacked to f32 (no shader-f16 on NVIDIA's Vulkan).
//!include weight_bytes
fn w_row_bytes() -> u32 { return COLS * 2u; }
fn w_unit(row_byte: u32, u: u32) -> array<f32, 32> {
  var v: array<f32, 32>;
  for (var i = 0u; i < 32u; i++) {
    let e = u * 32u + i;
    if (e < COLS) { v[i] = w_f16(row_byte + e * 2u); }
  }
  return v;
}
