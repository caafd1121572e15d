// argmax.wgsl's final pass (or sample.wgsl) also stores the chosen token's embedding row in x, where the
// next one-token step's first layer reads it: that step skips its embed dispatch (Forward::encode), one
// link fewer in the chain of dependent dispatches a decode step is. Both kernels have 256 threads.
//!include embed_row
override COLS: u32;  // hidden size
@group(0) @binding(5) var<storage, read_write> x: array<f32>;
@group(0) @binding(6) var<storage, read> w: array<vec4u>;

fn embed_next(tok: u32, lid: u32) { embed_row(0u, tok * w_row_bytes(), lid, 256u); }
