// x[t, :] = token_embd[ids[t], :] dequantized. One workgroup per token. A table too large for one
// binding comes in parts of rows [ROW0, ROW0 + ROWS), one dispatch each: a part skips the tokens
// whose rows another part holds.
//!include common
//!include embed_row

override COLS: u32;  // hidden size
override ROW0: u32 = 0u;
override ROWS: u32 = 0xFFFFFFFFu;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<vec4u>;  // 16-byte words: aligned loads of 4 words are one load
@group(0) @binding(3) var<uniform> step: Step;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let t = flat_group(wid, nwg);
  if (t >= step.n_tokens) { return; }
  let id = ids[t];
  if (id < ROW0 || id - ROW0 >= ROWS) { return; }
  embed_row(t * COLS, (id - ROW0) * w_row_bytes(), lid, 64u);
}
