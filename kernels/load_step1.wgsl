// For the int8 dot snippets whose units share no bytes (dotq8_q6_k.wgsl loads two at a time): a turn
// of the token-group matvec is one unit, its weights as w_load decodes them.
fn w_load_step(row_byte: u32, s: u32) -> array<WUnit, DOT_UNITS> {
  return array<WUnit, DOT_UNITS>(w_load(row_byte, s));
}
