// matvec.wgsl's rows stored as y (write_sums): the default of its YOUT (y_rope.wgsl is the other).
const Y_ROPE = false;
fn y_rope(lid: u32, row0: u32, scale: f32) {}
