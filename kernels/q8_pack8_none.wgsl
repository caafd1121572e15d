// q8_pack8.wgsl's names for devices without subgroups of 8+ threads: PACK8 is false, so the kernels
// take their one-thread packs and never call these.
const PACK8 = false;
struct Q8Word {
  w: u32,
  ds: vec2f,
}
fn lane_xor(v: f32, mask: u32) -> f32 { return v; }
fn q8_pack8(v: vec4f) -> Q8Word { return Q8Word(0u, vec2f(0.0)); }
fn unit_sum8(x: f32) -> f32 { return x; }
fn store_q8_vec4(u0: u32, k: u32, live: bool, v: vec4f) {}
