// Shared helpers. `step` holds the per-pass values the CPU writes before each submit.
struct Step {
  pos0: u32,      // position of the first token of this pass
  n_tokens: u32,  // tokens in this pass (1 when decoding)
  out_index: u32, // where the sampler stores its token (decode step counter)
  split: u32,    // positions per attention split in this pass (attention_split in graph.h)
}

// Flat workgroup index: Recorder folds large 1-D dispatches into 2-D.
fn flat_group(wid: vec3u, nwg: vec3u) -> u32 {
  return wid.x + wid.y * nwg.x;
}
