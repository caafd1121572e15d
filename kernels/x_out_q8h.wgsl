// x_out_q8.wgsl under other names, for a kernel that reads its own x as int8 units (x_q8.wgsl's xq
// and xs): the experts' one-token gate|up matvec (matvec_moe.wgsl) stores each pair's h as the
// units the down projection reads, in buffers of their own (GraphBuilder's hq/hs).
//!include q8_pack
@group(0) @binding(XQ_BINDING) var<storage, read_write> yq: array<vec4u>;
@group(0) @binding(XQ_BINDING + 1) var<storage, read_write> ys: array<vec2f>;

const EMIT_Q8 = true;
fn store_q8(u: u32, v: ptr<function, array<vec4f, 8>>) {
  let q = q8_pack(v);
  yq[2u * u] = q.lo;
  yq[2u * u + 1u] = q.hi;
  ys[u] = q.ds;
}
fn store_q8_word(u: u32, k: u32, w: u32) { yq[2u * u + k / 4u][k % 4u] = w; }
fn store_q8_ds(u: u32, ds: vec2f) { ys[u] = ds; }
