// gemm_q8.wgsl's token tiles for the experts of a mixture-of-experts layer: tile i is the i-th entry of
// moe_sort.wgsl's tile list, (expert, first, end), up to 64 pairs of one expert. Slot t is the pair at
// position t of the plan's list (pairs by expert): it reads x row pair / X_PER_PAIR (gate|up: the K
// pairs of a token share its row; down: each pair its own h row), writes y row pair, and the tile's
// weight rows are its expert's (Experts in weights.h: expert e's rows start at e * EXPERT_ROWS).
// The grid is sized for the most tiles a pass can have: spare workgroups find no tile and return.
struct Tile {
  t0: u32,
  end: u32,
  row0: u32,
}
override E: u32;
override K: u32;
override EXPERT_ROWS: u32;
override X_PER_PAIR: u32 = 1u;
// An expert's tile is often part full (Qwen3-30B-A3B at 512 tokens: 32 pairs an expert on average),
// so each thread skips the products of its slots past end: the work follows the live pairs, by 16s.
const SKIP_EMPTY = true;

@group(0) @binding(7) var<storage, read> plan: array<u32>;
var<workgroup> job: vec3u;

fn gemm_tile(i: u32, lid: u32) -> Tile {
  if (lid == 0u) {
    let tiles = 2u * E + 2u + step.n_tokens * K;  // the tile count, then the tiles
    job = select(vec3u(0u), vec3u(plan[tiles + 1u + 3u * i], plan[tiles + 2u + 3u * i], plan[tiles + 3u + 3u * i]),
                 i < plan[tiles]);
  }
  let jb = workgroupUniformLoad(&job);  // uniform: the caller returns on it before its barriers
  return Tile(jb.y, jb.z, jb.x * EXPERT_ROWS);
}
fn pair_at(t: u32) -> u32 { return plan[2u * E + 2u + t]; }
fn x_row(t: u32) -> u32 { return pair_at(t) / X_PER_PAIR; }
fn y_row(t: u32) -> u32 { return pair_at(t); }
