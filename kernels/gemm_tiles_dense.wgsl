// gemm_q8.wgsl's token tiles of a dense matmul: token tile i is tokens 64 i .. 64 i + 63 of the pass,
// token t reads x row t and writes y row t, and every tile reads the same weight rows.
// gemm_moe_tiles.wgsl is the experts' form.
struct Tile {
  t0: u32,    // the tile's first slot
  end: u32,   // slots t0 .. end - 1 are live (at most 64 of them)
  row0: u32,  // the first weight row of the tile's matrix in w
}
const SKIP_EMPTY = false;  // a thread skips the products of its slots past end (all live but the last tile's)
fn gemm_tile(i: u32, lid: u32) -> Tile { return Tile(i * 64u, step.n_tokens, 0u); }
fn x_row(t: u32) -> u32 { return t; }
fn y_row(t: u32) -> u32 { return t; }
