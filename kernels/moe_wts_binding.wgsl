// matvec_moe.wgsl by token (WTS): a job is one token, whose K pairs' rows are summed, each weighted
// by the router (moe_route.wgsl's wts), into the token's row of y: the experts' down projection and
// their weighted sum in one dispatch, no [K][hidden] rows in between (one-token passes).
const COMBINE = true;
@group(0) @binding(X_BINDINGS + 2u) var<storage, read> wts: array<f32>;  // [pair] its weight
fn pair_weight(p: u32) -> f32 { return wts[p]; }
