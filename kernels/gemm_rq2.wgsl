// gemm.wgsl's 8 x 4 micro-tile: 128-row tiles, 24 KB of workgroup memory (GraphBuilder::add_gemm_wide).
const RQ = 2u;
const ACC_LEN = 8u;
