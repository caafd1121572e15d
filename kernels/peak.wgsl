// Peak-rate probes (`ztvm gpu --peak`): what one arithmetic unit or the memory can do on this GPU, to
// read a kernel's rate against. OP 0: each thread runs ITERS steps of 8 independent int8 dot-product
// chains (dot4I8Packed, accumulated); OP 1: the same with f32 fma chains; OP 2: each thread reads
// ITERS 16-byte words of `big`, a grid-stride apart (coalesced), and folds them with xor.
// The inputs come from `inp` and every result is stored, so nothing folds away at compile time; in
// OP 0 the word `a` changes each step (one add per 8 dots), so a chain is not N times one product.
//!include common

override OP: u32 = 0u;
override ITERS: u32 = 256u;
const WG = 256u;

@group(0) @binding(0) var<storage, read_write> out: array<u32>;  // one word per thread
@group(0) @binding(1) var<storage, read> inp: array<u32>;        // 16 words
@group(0) @binding(2) var<storage, read> big: array<vec4u>;      // OP 2: threads x ITERS words

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let t = flat_group(wid, nwg) * WG + lid;
  if (OP == 0u) {
    var acc: array<i32, 8>;
    var a = inp[0] + t;
    for (var i = 0u; i < ITERS; i++) {
      for (var k = 0u; k < 8u; k++) { acc[k] = dot4I8Packed(a, inp[1u + k]) + acc[k]; }
      a += 0x01010101u;
    }
    var s = 0;
    for (var k = 0u; k < 8u; k++) { s += acc[k]; }
    out[t] = bitcast<u32>(s);
  } else if (OP == 1u) {
    var x: array<f32, 8>;
    for (var k = 0u; k < 8u; k++) { x[k] = f32(inp[1u + k] & 0xFFu) + f32(t % 7u); }
    let m = bitcast<f32>(inp[9]);
    let c = bitcast<f32>(inp[10]);
    for (var i = 0u; i < ITERS; i++) {
      for (var k = 0u; k < 8u; k++) { x[k] = fma(x[k], m, c); }
    }
    var s = 0.0;
    for (var k = 0u; k < 8u; k++) { s += x[k]; }
    out[t] = bitcast<u32>(s);
  } else {
    let threads = nwg.x * nwg.y * WG;
    var v = vec4u(0u);
    for (var i = 0u; i < ITERS; i++) { v ^= big[i * threads + t]; }
    out[t] = v.x ^ v.y ^ v.z ^ v.w;
  }
}
