// attention_decode.wgsl's query for decode steps that skip rope_kv.wgsl (one dispatch fewer in the
// step's chain), in the unsplit kernel (every workgroup sees this token's position): each workgroup
// makes its query head from the raw qkv row (rope_head.wgsl) and its KV head's key and value for this
// token, appends them to the cache for later steps, and scores and weighs this position from its own
// copy (q_rope_fresh.wgsl).
//!include rope_head
//!include q_rope_fresh
const RH_SLOTS = 3u;

// qv = query head h at pos, scaled; KV head kvh's key and value at pos into k_new, v_new and the
// cache. The three heads are made side by side (rope_head.wgsl's slots: threads 0..63 the query,
// 64..127 the key, 128..191 the value), which needs WG >= 192 (the unsplit kernel's 256). Every
// thread calls it.
fn q_prepare(h: u32, kvh: u32, pos: u32, lid: u32, own_kv: bool) {
  let page = pages[pos / PAGE];
  let slot = lid / 64u;
  let hh = select(h, select(NH + kvh, NH + NKV + kvh, slot >= 2u), slot >= 1u);
  rope_head(hh * HD, hh, pos, lid);
  for (var i = lid; i < HD / 4u; i += WG) {
    qv[i] = vec4f(rh_out[4u * i], rh_out[4u * i + 1u], rh_out[4u * i + 2u], rh_out[4u * i + 3u]) * SCALE;
  }
  for (var i = lid; i < HD / 2u; i += WG) {
    keep_kv_word(i, page, kvh, pos, pack2x16float(vec2f(rh_out[128u + 2u * i], rh_out[128u + 2u * i + 1u])),
                 pack2x16float(vec2f(rh_out[256u + 2u * i], rh_out[256u + 2u * i + 1u])));
  }
}
