// The output gate of Qwen3.5's gated attention: att[t][h][d] *= sigmoid(gate[t][h][d]), in place. The
// gate is read where the projection left it, so no kernel copies it out first: element (t, h, d) at
// gate[t * STRIDE + OFFSET + h * HEAD_STRIDE + d] (attn_q's rows interleave each head's HD query
// values and HD gate values: STRIDE = 2 NH HD, OFFSET = HD, HEAD_STRIDE = 2 HD). A thread an element.
//!include common

override NH: u32;
override HD: u32;
override STRIDE: u32;
override OFFSET: u32;
override HEAD_STRIDE: u32;
const WG = 64u;

@group(0) @binding(0) var<storage, read_write> att: array<f32>;  // [token][NH][HD]
@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<uniform> step: Step;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let W = NH * HD;
  let blocks = (W + WG - 1u) / WG;  // a token's workgroups
  let g = flat_group(wid, nwg);
  let t = g / blocks;
  let e = (g % blocks) * WG + lid;
  if (t >= step.n_tokens || e >= W) { return; }
  let gv = gate[t * STRIDE + OFFSET + (e / HD) * HEAD_STRIDE + e % HD];
  att[t * W + e] = att[t * W + e] / (1.0 + exp(-gv));
}
