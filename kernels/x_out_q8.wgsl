// For kernels whose output feeds a decode matvec on quantized weights (add_rmsnorm, rmsnorm,
// attention_combine): they also store one token's output as int8 units (x_q8.wgsl), saving a
// quantize_q8 dispatch. The kernel sets XQ_BINDING to its first free binding.
//!include q8_pack
@group(0) @binding(XQ_BINDING) var<storage, read_write> xq: array<vec4u>;
@group(0) @binding(XQ_BINDING + 1) var<storage, read_write> xs: array<vec2f>;

const EMIT_Q8 = true;
fn store_q8(u: u32, v: ptr<function, array<vec4f, 8>>) {
  let q = q8_pack(v);
  xq[2u * u] = q.lo;
  xq[2u * u + 1u] = q.hi;
  xs[u] = q.ds;
}
// Kernels that spread a unit over 8 threads (add_rmsnorm.wgsl): word k (elements 4k..4k+3) of unit u,
// and the unit's (d, sum of q).
fn store_q8_word(u: u32, k: u32, w: u32) { xq[2u * u + k / 4u][k % 4u] = w; }
fn store_q8_ds(u: u32, ds: vec2f) { xs[u] = ds; }
