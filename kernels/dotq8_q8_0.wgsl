// Dot of Q8_0 block u (34 bytes: f16 d, 32 int8) with an int8 x unit (x_q8.wgsl): 8 dot4I8Packed.
// The 32 bytes start 0 or 2 bytes into a word; 9 words are loaded and realigned with w_funnel.
fn w_dot(row_byte: u32, u: u32, xu: ptr<function, XUnit>) -> f32 {
  let b = row_byte + u * 34u;
  let k = (b + 2u) >> 2u;
  let sh = ((b + 2u) & 3u) * 8u;
  var s = 0;
  var prev = w[k];
  for (var i = 0u; i < 8u; i++) {
    let next = w[k + i + 1u];  // the 9th word is past the block when aligned (robust access keeps it in bounds)
    s += dot4I8Packed(w_funnel(prev, next, sh), x_word(xu, i));
    prev = next;
  }
  return w_f16(b) * (*xu).d * f32(s);
}
