// attention_decode.wgsl's query in the split kernel (SPLITS) for decode steps that skip rope_kv.wgsl:
// each workgroup makes its query head from the raw qkv row (rope_head.wgsl, slot 0) and its KV head's
// key (slot 1, or a second pass on 64 threads); the workgroups of the split that holds this token's
// position (own_kv) also pack the key and the value (the raw row plus its bias), append them to the
// cache and score and weigh this position from their own copy (q_rope_fresh.wgsl). The other splits
// read the cache only up to the position before, written by earlier steps. Every split remakes its
// query head: a few hundred multiplies in each workgroup's chain, where rope_kv cost a dispatch in
// the step's (H200: +2.0..+2.3% decode at 4,096 positions on Qwen3-4B, bench/EXPERIMENTS.md).
//!include rope_head
//!include q_rope_fresh
const RH_SLOTS = 2u;

fn q_prepare(h: u32, kvh: u32, pos: u32, lid: u32, own_kv: bool) {
  // The value's two elements of this thread, loaded before rope_head's barriers.
  let vh = NH + NKV + kvh;
  let vi = min(lid, HD / 2u - 1u);
  var vv = vec2f(qkv[vh * HD + 2u * vi], qkv[vh * HD + 2u * vi + 1u]);
  if (HAS_BIAS) { vv += vec2f(aux[2u * HD + vh * HD + 2u * vi], aux[2u * HD + vh * HD + 2u * vi + 1u]); }
  let page = pages[pos / PAGE];
  let hh = select(h, NH + kvh, lid >= 64u);
  rope_head(hh * HD, hh, pos, lid);
  for (var i = lid; i < HD / 4u; i += WG) {
    qv[i] = vec4f(rh_out[4u * i], rh_out[4u * i + 1u], rh_out[4u * i + 2u], rh_out[4u * i + 3u]) * SCALE;
  }
  var ko = 128u;  // the key head in rh_out: slot 1
  if (WG < 128u) {  // no slot 1: the key in a second pass (its first barrier keeps it behind the copy above)
    rope_head((NH + kvh) * HD, NH + kvh, pos, lid);
    ko = 0u;
  }
  if (own_kv && lid < HD / 2u) {
    keep_kv_word(lid, page, kvh, pos, pack2x16float(vec2f(rh_out[ko + 2u * lid], rh_out[ko + 2u * lid + 1u])),
                 pack2x16float(vv));
  }
}
