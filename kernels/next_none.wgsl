// argmax.wgsl's final pass and sample.wgsl without the next step's embedding (the embed dispatch makes it).
fn embed_next(tok: u32, lid: u32) {}
