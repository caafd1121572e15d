enable subgroups;
// One int8 unit (q8_pack.wgsl's codes, d and sum of q) packed by 8 neighbouring threads, a vec4
// each: thread 8u + i holds elements 4i..4i+3 of unit u. The 8 share max |v| and the sum of q by
// subgroup shuffles (masks below 8: an aligned group of 8 stays inside a subgroup of 8 or more
// consecutive invocations; GraphBuilder checks the size, the drivers lay 1-D workgroups out in order,
// as reduce_sg.wgsl assumes too), so no barrier and no thread packs 32 values in a row. A max and
// an integer sum do not depend on their order: the codes are q8_pack's, bit for bit.
// Every thread of the workgroup calls these (uniform control flow); threads past the data pass any
// values (clamped indices) and store nothing. H200: +6% decode on Llama-3.2-1B Q4_0 and Qwen3-4B
// Q4_K_M (bench/EXPERIMENTS.md). Without subgroups: q8_pack8_none.wgsl, the one-thread packs.
const PACK8 = true;
struct Q8Word {
  w: u32,     // the packed word: 4 signed bytes
  ds: vec2f,  // the unit's (d, sum of q), the same on its 8 threads
}
fn lane_xor(v: f32, mask: u32) -> f32 { return subgroupShuffleXor(v, mask); }
fn q8_pack8(v: vec4f) -> Q8Word {
  let a = abs(v);
  var m = max(max(a.x, a.y), max(a.z, a.w));
  m = max(m, subgroupShuffleXor(m, 1u));
  m = max(m, subgroupShuffleXor(m, 2u));
  m = max(m, subgroupShuffleXor(m, 4u));
  let inv = select(0.0, 127.0 / m, m > 0.0);
  let q = vec4i(round(v * inv));
  var s = q.x + q.y + q.z + q.w;
  s += subgroupShuffleXor(s, 1u);
  s += subgroupShuffleXor(s, 2u);
  s += subgroupShuffleXor(s, 4u);
  return Q8Word(pack4xI8(q), vec2f(m / 127.0, f32(s)));
}
// Word k of the units from u0 on (elements 4k..4k+3), packed, and stored by XOUT's store_q8_word
// (with the unit's d and sum of q on its thread 0) where `live`.
fn store_q8_vec4(u0: u32, k: u32, live: bool, v: vec4f) {
  let p = q8_pack8(v);
  if (live) {
    store_q8_word(u0 + k / 8u, k % 8u, p.w);
    if (k % 8u == 0u) { store_q8_ds(u0 + k / 8u, p.ds); }
  }
}
// The 8 threads' x added up in their order ((x0 + x1) + x2 ...), as one thread's loop would: right
// on each group's thread 0 (the one that stores it).
fn unit_sum8(x: f32) -> f32 {
  var s = x;
  for (var j = 1u; j < 8u; j++) { s += subgroupShuffleXor(x, j); }
  return s;
}
