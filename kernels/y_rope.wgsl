// matvec.wgsl's YOUT for a one-token QKV without QK-norm, bias or NeoX pairs (Llama): instead of the
// raw qkv row, the rows go where rope_kv.wgsl would put them, which that dispatch then skips. The
// query heads rotated to y (bound to q), the key heads rotated and the value heads as they are into
// this token's slots of the f16 caches. RPL = 2: a lane group's two rows are one rope pair (dims e,
// e + 1 of a head, e even), whose sums lanes 0 and 1 of the group read from write_sums' reduction.
// On a two-type QKV (a Q4_K_M file's q|k Q4_K, v Q6_K) the value heads are the second type's rows,
// and these bindings follow its weights'.
const Y_BINDING = X_BINDINGS + W2_BINDINGS;
@group(0) @binding(Y_BINDING) var<storage, read_write> k_cache: array<u32>;      // as rope_kv.wgsl
@group(0) @binding(Y_BINDING + 1u) var<storage, read_write> v_cache: array<u32>;
@group(0) @binding(Y_BINDING + 2u) var<storage, read> pages: array<u32>;
@group(0) @binding(Y_BINDING + 3u) var<storage, read> rope: array<vec2f>;       // [pos][ROT / 2] (cos, sin)
@group(0) @binding(Y_BINDING + 4u) var<uniform> step: Step;
override HD: u32;
override NH: u32;
override NKV: u32;
override ROT: u32;
override PAGE: u32;
const Y_ROPE = true;
fn y_extra(i: u32) -> f32 { return 0.0; }
fn y_after(i: u32, r: f32, slot: u32) {}

fn y_rope(lid: u32, row0: u32, scale: f32) {
  let lane = lid % LANES;
  if (lane >= 2u || row0 >= ROWS + ROWS2) { return; }
  let base = lid - lane;  // lane 0 of the group (write_sums' partials, matvec_sums.wgsl)
  let a = lane_sum(0u, base) * scale;
  let b = lane_sum(1u, base) * scale;
  let pos = step.pos0;
  let h = row0 / HD;  // q heads, then k, then v
  let e = row0 % HD;
  var ra = a;
  var rb = b;
  if (h < NH + NKV && e < ROT) {
    let cs = rope[pos * (ROT / 2u) + e / 2u];
    ra = a * cs.x - b * cs.y;
    rb = a * cs.y + b * cs.x;
  }
  if (h < NH) {
    y[h * HD + e + lane] = select(ra, rb, lane == 1u);
    return;
  }
  if (lane == 1u) { return; }  // lane 0 stores the pair as one word of two halves
  let w = pack2x16float(vec2f(ra, rb));
  let page = pages[pos / PAGE];
  if (h < NH + NKV) {
    k_cache[(((page * NKV + h - NH) * (HD / 8u) + e / 8u) * PAGE + pos % PAGE) * 4u + (e % 8u) / 2u] = w;
  } else {
    v_cache[((page * PAGE + pos % PAGE) * NKV + h - NH - NKV) * (HD / 2u) + e / 2u] = w;
  }
}
