// attention_flash.wgsl's queries as rope_kv.wgsl stored them (after bias, QK-norm and RoPE): for
// devices with too few storage bindings for q_flash_rope.wgsl.
@group(0) @binding(1) var<storage, read> q: array<vec4f>;  // [T, NH*HD]
const QIN_BINDINGS = 0u;  // bindings after the kernel's seven

// qt = the tile's 32 query rows (row r: head h0 + r % G of token t0 + r / G) x SCALE x log2(e); rows
// past the pass repeat its last token (not stored). Every thread calls it.
fn stage_queries(t0: u32, T: u32, h0: u32, lid: u32) {
  for (var i = lid; i < ROWS * HD4; i += WG) {
    let r = i / HD4;
    let t = min(t0 + r / G, T - 1u);
    qt[r * QST + i % HD4] = q[(t * NH + h0 + r % G) * HD4 + i % HD4] * (SCALE * LOG2E);
  }
}
