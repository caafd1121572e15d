// matvec.wgsl's YOUT for a one-token matvec whose output the residual stream takes next (the o and down
// projections): each row is stored already added to the residual, y = resid + W x, so the matvec after
// it (x_q8_norm.wgsl with x_two_none.wgsl) reads one vector, not the residual and the projection, in
// every one of its workgroups, and its workgroup 0 stores no sum. The sum is the add_rmsnorm's, bit
// for bit.
@group(0) @binding(X_BINDINGS) var<storage, read> resid: array<f32>;
const Y_ROPE = false;
fn y_rope(lid: u32, row0: u32, scale: f32) {}
fn y_extra(i: u32) -> f32 { return resid[i]; }
fn y_after(i: u32, r: f32, slot: u32) {}
