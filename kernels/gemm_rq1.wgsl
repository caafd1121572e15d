// gemm.wgsl's 4 x 4 micro-tile: 64-row tiles, 16 KB of workgroup memory (WebGPU's floor).
const RQ = 1u;
const ACC_LEN = 4u;
