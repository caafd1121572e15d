// gemm_q8.wgsl's tiles stored as f32 (gemm_store.wgsl); h_out_q8.wgsl is the int8 form for gated tiles.
const H_Q8 = false;
fn store_h_q8(acc: ptr<function, array<vec4f, ACC_LEN>>, rt: u32, tr: u32, tt: u32, t0: u32, n_tokens: u32, lid: u32) {}
