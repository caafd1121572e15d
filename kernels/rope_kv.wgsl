// After the QKV matmul: per (token, head) — the head as attention reads it (rope_head.wgsl: bias,
// QK-norm, RoPE), written as q for attention or appended as k, v at this token's position in the
// paged KV cache, as f16 pairs packed in u32 words (no shader-f16 needed; attention.wgsl unpacks
// them). Decode steps skip it when attention_decode.wgsl does this itself (q_in_rope.wgsl); passes that
// flash attention serves make only the key and value heads (FIRST_HEAD), the queries being made there
// (q_flash_rope.wgsl).
// HD <= 128: 64 threads a head, RH_SLOTS heads of one token per workgroup (long passes: fewer, larger
// workgroups; a one-token pass keeps one head each, so its 48-odd heads spread over as many SMs).
//!include common
//!include rope_head

override HD: u32;              // head dim
override NH: u32;              // query heads
override NKV: u32;             // key/value heads
override PAGE: u32;            // tokens per KV page
override RH_SLOTS: u32 = 1u;   // heads per workgroup (rope_head.wgsl)
override FIRST_HEAD: u32 = 0u; // NH: only the key and value heads (flash attention makes the queries, q_flash_rope.wgsl)

@group(0) @binding(0) var<storage, read_write> q_out: array<f32>;   // [T, NH*HD]
@group(0) @binding(1) var<storage, read_write> k_cache: array<u32>; // [pages][NKV][HD / 8][PAGE][4] f16 pairs
@group(0) @binding(2) var<storage, read_write> v_cache: array<u32>; // [pages][PAGE][NKV][HD / 2] f16 pairs
@group(0) @binding(3) var<storage, read> qkv: array<f32>;           // [T, (NH + 2 NKV) * HD]
@group(0) @binding(4) var<storage, read> aux: array<f32>;           // [q_norm HD | k_norm HD | bias (NH+2NKV)*HD]
@group(0) @binding(5) var<storage, read> rope: array<vec2f>;        // [pos][ROT/2] (cos, sin)
@group(0) @binding(6) var<storage, read> pages: array<u32>;         // logical page -> physical page
@group(0) @binding(7) var<uniform> step: Step;

@compute @workgroup_size(64 * RH_SLOTS)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let heads = NH + 2u * NKV;
  let per_token = (heads - FIRST_HEAD + RH_SLOTS - 1u) / RH_SLOTS;  // workgroups per token
  let g = flat_group(wid, nwg);
  let t = g / per_token;
  if (t >= step.n_tokens) { return; }
  let slot = lid / 64u;
  let h_slot = FIRST_HEAD + (g % per_token) * RH_SLOTS + slot;
  let h = min(h_slot, heads - 1u);  // slots past the last head make it again (rope_head's barriers) and store nothing
  let pos = step.pos0 + t;
  let page = pages[pos / PAGE];  // issued with rope_head's loads
  rope_head(t * heads * HD + h * HD, h, pos, lid);
  if (h_slot >= heads) { return; }
  let o = slot * 128u;  // the slot's rh_out
  let l = lid % 64u;
  if (h < NH) {
    for (var d = l; d < HD; d += 64u) { q_out[t * NH * HD + h * HD + d] = rh_out[o + d]; }
    return;
  }
  for (var i = l; i < HD / 2u; i += 64u) {
    let w = pack2x16float(vec2f(rh_out[o + 2u * i], rh_out[o + 2u * i + 1u]));
    if (h < NH + NKV) {
      // keys dims-major within a page: attention's threads (positions) read them side by side
      let kb = ((page * NKV + h - NH) * (HD / 8u) + i / 4u) * PAGE + pos % PAGE;
      k_cache[kb * 4u + i % 4u] = w;
    } else {
      v_cache[(page * PAGE + pos % PAGE) * NKV * (HD / 2u) + (h - NH - NKV) * (HD / 2u) + i] = w;
    }
  }
}
