// matvec.wgsl's rows stored as y (write_sums): the default of its YOUT (y_rope.wgsl and y_resid.wgsl
// are the others).
const Y_ROPE = false;
fn y_rope(lid: u32, row0: u32, scale: f32) {}
fn y_extra(i: u32) -> f32 { return 0.0; }  // y_resid.wgsl adds the residual
fn y_after(i: u32, r: f32, slot: u32) {}  // y_resid_norm.wgsl keeps more of each row
