// matvec_moe.wgsl's outputs by pair (WTS, the default): each pair's rows stored on their own.
const COMBINE = false;
fn pair_weight(p: u32) -> f32 { return 1.0; }
