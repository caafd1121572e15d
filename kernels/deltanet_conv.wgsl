// The causal depthwise conv1d + SiLU of a gated DeltaNet layer (Qwen3.5) over the C channels of its
// q|k|v rows: y[t][c] = silu(sum_j w[c][j] in[t - (KC - 1) + j][c]), where the inputs before the pass
// come from `state` (the last KC - 1 rows of the previous pass, oldest first; none at pos0 == 0).
// Two variants of one source, so that no thread overwrites the state while another still reads it:
// the conv (a thread per channel and token: every output is independent), then STATE_UPDATE (a thread
// per channel) moves the window's last KC - 1 inputs into the state, in the next dispatch of the pass.
//!include common

override C: u32;   // channels: 2 nk dk + nv dv
override KC: u32;  // taps (4)
override STATE_UPDATE: bool = false;
const WG = 64u;
const MAX_KC = 8u;

@group(0) @binding(0) var<storage, read_write> y: array<f32>;      // [token][C] (STATE_UPDATE: unused)
@group(0) @binding(1) var<storage, read_write> state: array<f32>;  // [KC - 1][C]
@group(0) @binding(2) var<storage, read> x: array<f32>;            // [token][C], the qkv projection
@group(0) @binding(3) var<storage, read> w: array<f32>;            // [C][KC], ssm_conv1d as stored
@group(0) @binding(4) var<uniform> step: Step;

// Input row r of the window [past KC - 1 rows | the pass's n rows] for channel c.
fn window(r: u32, c: u32) -> f32 {
  if (r >= KC - 1u) { return x[(r - (KC - 1u)) * C + c]; }
  return select(0.0, state[r * C + c], step.pos0 > 0u);  // position 0: an empty history
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let n = step.n_tokens;
  if (STATE_UPDATE) {
    let c = flat_group(wid, nwg) * WG + lid;
    if (c >= C) { return; }
    // Read the whole new history before writing it: rows of the old state move down when n < KC - 1.
    var keep: array<f32, MAX_KC>;
    for (var r = 0u; r < KC - 1u; r++) { keep[r] = window(n + r, c); }
    for (var r = 0u; r < KC - 1u; r++) { state[r * C + c] = keep[r]; }
    return;
  }
  let blocks = (C + WG - 1u) / WG;  // a token's workgroups
  let g = flat_group(wid, nwg);
  let t = g / blocks;
  let c = (g % blocks) * WG + lid;
  if (t >= n || c >= C) { return; }
  var acc = 0.0;
  for (var j = 0u; j < KC; j++) { acc += w[c * KC + j] * window(t + j, c); }
  y[t * C + c] = acc / (1.0 + exp(-acc));
}
