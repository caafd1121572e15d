// The forward pass of every supported architecture (llama, qwen2, qwen3, phi3, qwen3moe, qwen35), one line per dispatch.
// build() runs once per head mode at load; passes then replay the recorded dispatches (graph.h).
#include "engine/forward.h"


#include <algorithm>
#include <cmath>

namespace ztvm {

// Attention splits of Forward::kSplit positions (H200 at 4k with the f16 cache: 128 beat 64 by 4%), or
// twice that in one-token passes past 24 splits (attention_split: 256 on 128 threads beat 128 by 3-4% at
// 4k and lost 1.5-6% at 600-1,024 positions; 512 lost 3%).
// Decode steps that see up to 512 positions take attention_decode.wgsl instead: no splits (graph_attention.cpp).
// Passes of up to kQ8MaxTokens tokens run the matvec on int8 x (graph.h use_q8_x): groups of
// kQ8TokensPerGroup tokens, kQ8RowsPerLane rows per group of kQ8Lanes lanes; longer passes a GEMM.
// Measured on the H200 (bench/EXPERIMENTS.md, 35-token prompts): with each x unit loaded once for all
// of a lane's rows, 4 tokens x 2 rows x 16 lanes beat 8 x 1 (the best before) by 10-20% in TTFT, and
// 8 x 2, 4 x 4, 2 x 2, 4 x 1, 8 or 32 lanes by 4-25%; at 512 tokens the int8 matvec only matched the GEMM.
static constexpr uint32_t kQ8MaxTokens = GraphBuilder::kQ8MatvecMaxTokens, kQ8TokensPerGroup = 4, kQ8RowsPerLane = 2,
                          kQ8Lanes = 16;
// Longer chunks through gemm_q8.wgsl (int8 tiles) instead of the f32 GEMM: prefill of 512 tokens
// 1.5-1.6x faster on the H200 (bench/EXPERIMENTS.md, 2026-11-30).
static constexpr bool kQ8Gemm = true;
// Decode steps up to 512 positions without the rope_kv dispatch: attention_decode.wgsl makes the heads
// itself (graph.h).
static constexpr bool kRopeInDecode = true;
// Passes of 2+ tokens that flash attention serves: it makes the queries from the raw qkv rows and rope_kv
// only the keys and values (graph.h).
static constexpr bool kRopeInFlash = true;

std::vector<float> rope_table(const ModelConfig& c, uint32_t max_context) {
  const uint32_t half = c.rotary_dim / 2;
  std::vector<float> t((size_t)max_context * half * 2);
  for (uint32_t i = 0; i < half; i++) {
    double inv_freq = std::pow((double)c.rope_theta, -2.0 * i / c.rotary_dim);
    if (!c.rope_freq_factors.empty()) inv_freq /= c.rope_freq_factors[i];
    for (uint32_t p = 0; p < max_context; p++) {
      t[((size_t)p * half + i) * 2 + 0] = (float)std::cos(p * inv_freq);
      t[((size_t)p * half + i) * 2 + 1] = (float)std::sin(p * inv_freq);
    }
  }
  return t;
}

// Qwen3.5's gated DeltaNet heads (ModelConfig's linear_* fields).
static GraphBuilder::DeltaShape delta_shape(const ModelConfig& c) {
  return {c.linear_num_key_heads, c.linear_key_head_dim, c.linear_num_value_heads, c.linear_value_head_dim,
          c.linear_conv_kernel_dim, c.linear_v_heads_tiled};
}

Forward::Forward(gpu::Device& dev, const ModelFile& model, uint32_t max_context, uint32_t max_chunk, uint32_t kv_pages)
    : dev_(dev), kernels_(dev), cfg_(model.config), max_context_(max_context), max_chunk_(max_chunk) {
  const ModelConfig& c = cfg_;
  const uint32_t hd = c.head_dim, nh = c.num_attention_heads, nkv = c.num_key_value_heads, d = c.hidden_size;
  const uint64_t F = 4;
  const uint32_t max_splits = (max_context + kSplit - 1) / kSplit;
  // Per-pass buffers grow with the chunk and each must fit one binding: devices with small limits
  // (lavapipe: 128 MiB) get shorter chunks, which only costs prefill speed. The split partials grow with
  // it only where flash attention does not serve the longer passes, and the logits of every token of a
  // pass (ztvm logits, perplexity) only up to kLogitsRows: those passes are chunked shorter instead.
  const bool flash = GraphBuilder::flash_serves(hd, nh, nkv);
  flash_nh_ = flash ? nh : 0;
  const uint64_t part_row = (uint64_t)nh * max_splits * (hd + 2) * F;  // one token's split partials
  bool sparse = false;  // some layer is a mixture of experts
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) sparse |= c.layer(l).ffn == Ffn::Moe;
  const uint64_t K = sparse ? c.num_experts_per_tok : 0;
  const uint64_t shexp = sparse ? c.shared_expert_intermediate_size : 0;
  const uint64_t ffn = std::max<uint64_t>({c.intermediate_size, K * c.moe_intermediate_size, shexp});  // h's width a token
  const GraphBuilder::DeltaShape ds = delta_shape(c);
  const bool recurrent = c.has_recurrent_state();
  const uint64_t dn_c = recurrent ? ds.channels() : 0, dn_vd = recurrent ? (uint64_t)ds.nv * ds.dv : 0;
  const uint64_t widest_row = std::max({(uint64_t)d, ffn, K * d, (uint64_t)(nh + 2 * nkv) * hd, dn_c}) * F;
  const uint64_t limit = std::min(dev.max_binding_size() / widest_row, flash ? UINT32_MAX : dev.max_binding_size() / part_row);
  max_chunk_ = (uint32_t)std::max<uint64_t>(1, std::min<uint64_t>(max_chunk, limit));
  const uint64_t T = max_chunk_;
  logits_rows_ = (uint32_t)std::max<uint64_t>(
      1, std::min<uint64_t>({T, kLogitsRows, dev.max_binding_size() / ((uint64_t)c.vocab_size * F)}));
  w_ = upload_weights(dev, model);
  const uint32_t n_pages = (max_context + kPage - 1) / kPage;  // page table entries of one sequence
  kv_pages_ = kv_pages ? kv_pages : n_pages;
  s_.step = dev.buffer("state.step", sizeof(StepParams), gpu::kUniform);
  s_.step_last = dev.buffer("state.step_last", sizeof(StepParams), gpu::kUniform);
  s_.sampling = dev.buffer("state.sampling", sizeof(SamplingUniform), gpu::kUniform);
  set_sampling(SamplingParams{});
  s_.ids = dev.buffer("state.ids", T * 4);
  s_.tokens = dev.buffer("state.tokens", (uint64_t)max_context * 4);
  s_.x_a = dev.buffer("state.x_a", T * d * F);
  s_.x_b = dev.buffer("state.x_b", T * d * F);
  s_.xb = dev.buffer("state.xb", T * d * F);
  s_.qkv = dev.buffer("state.qkv", T * std::max<uint64_t>((nh + 2 * nkv) * hd, dn_c) * F);
  s_.q = dev.buffer("state.q", T * nh * hd * F);
  s_.att = dev.buffer("state.att", T * std::max<uint64_t>(nh * hd, dn_vd) * F);
  bool gated = false;  // some layer is gated attention
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) gated |= c.layer(l).mixer == Mixer::GatedAttention;
  if (gated || recurrent) s_.gate = dev.buffer("state.gate", T * std::max<uint64_t>(gated ? nh * hd : 0, dn_vd) * F);
  if (recurrent) {
    s_.dn_x = dev.buffer("state.dn_x", T * dn_c * F);
    s_.dn_o = dev.buffer("state.dn_o", T * dn_vd * F);
    s_.dn_b = dev.buffer("state.dn_b", T * ds.nv * F);
    s_.dn_a = dev.buffer("state.dn_a", T * ds.nv * F);
  }
  // Flash attention's splits: up to kFlashSplitMaxTokens tokens x kFlashSplits.
  const uint64_t flash_part = flash ? std::min<uint64_t>(T, kFlashSplitMaxTokens) * nh * kFlashSplits * (hd + 2) * F : 0;
  s_.part = dev.buffer("state.part", std::max((flash ? 1 : T) * part_row, flash_part));
  s_.proj = dev.buffer("state.proj", T * d * F);
  s_.h = dev.buffer("state.h", T * ffn * F);
  if (sparse) {
    s_.router = dev.buffer("state.router", T * c.num_experts * F);
    s_.moe_ids = dev.buffer("state.moe_ids", T * K * 4);
    s_.moe_wts = dev.buffer("state.moe_wts", T * K * F);
    s_.moe_y = dev.buffer("state.moe_y", T * K * d * F);
    s_.moe_plan = dev.buffer("state.moe_plan", GraphBuilder::moe_plan_bytes(c.num_experts, (uint32_t)K, (uint32_t)T));
  }
  if (shexp) {
    s_.shexp_y = dev.buffer("state.shexp_y", T * d * F);
    s_.shexp_g = dev.buffer("state.shexp_g", T * F);
    s_.x_c = dev.buffer("state.x_c", T * d * F);
    s_.xb_unused = dev.buffer("state.xb_unused", T * d * F);
  }
  s_.gemm_part = dev.buffer("state.gemm_part", GraphBuilder::split_k_scratch_bytes(split_tokens()));
  s_.x_last = dev.buffer("state.x_last", d * F);
  s_.norm_xw = dev.buffer("state.norm_xw", d * F);
  s_.norm_ss = dev.buffer("state.norm_ss", d * F);
  s_.zeros = dev.buffer("state.zeros", d * F);
  const std::vector<float> zeros(d, 0.f);
  dev.write(s_.zeros, zeros.data(), d * F);
  const uint64_t widest = std::max<uint64_t>({d, ffn, (uint64_t)nh * hd, dn_vd});  // the widest matvec input (a token's)
  s_.xq = dev.buffer("state.xq", q8_tokens() * widest + 16);
  s_.xqs = dev.buffer("state.xqs", q8_tokens() * widest / 32 * 8 + 8);
  if (kQ8Gemm) {
    const uint64_t gated_ff = std::max<uint64_t>(c.intermediate_size, shexp);  // the gated GEMMs' h (use_q8_h)
    s_.hq = dev.buffer("state.hq", T * gated_ff + 16);
    s_.hqs = dev.buffer("state.hqs", T * gated_ff / 32 * 8 + 8);
  }
  s_.logits = dev.buffer("state.logits", (uint64_t)c.vocab_size * F);
  s_.argmax_part = dev.buffer("state.argmax_part", GraphBuilder::kArgmaxParts * 8);
  // The buffer first: a context too long for the device fails here, before the table is computed.
  s_.rope = dev.buffer("state.rope", (uint64_t)max_context * (c.rotary_dim / 2) * 2 * F);
  std::vector<float> rope = rope_table(c, max_context);
  dev.write(s_.rope, rope.data(), rope.size() * F);
  std::vector<uint32_t> pages(n_pages);
  for (uint32_t i = 0; i < n_pages; i++) pages[i] = i;
  s_.pages = dev.buffer("state.pages", n_pages * 4);
  dev.write(s_.pages, pages.data(), n_pages * 4);
  const uint64_t kv_bytes = (uint64_t)kv_pages_ * kPage * nkv * hd * 2;  // f16 keys and values
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) {
    const std::string L = "L" + std::to_string(l);
    const bool dn = c.layer(l).mixer == Mixer::GatedDeltaNet;  // a state instead of a KV cache
    s_.k_cache.push_back(dn ? gpu::Buffer() : dev.buffer(L + ".k_cache", kv_bytes));
    s_.v_cache.push_back(dn ? gpu::Buffer() : dev.buffer(L + ".v_cache", kv_bytes));
    s_.conv_state.push_back(dn ? dev.buffer(L + ".conv_state", GraphBuilder::deltanet_conv_state_bytes(ds)) : gpu::Buffer());
    s_.scan_state.push_back(dn ? dev.buffer(L + ".scan_state", GraphBuilder::deltanet_scan_state_bytes(ds)) : gpu::Buffer());
  }
  for (Head h : {Head::None, Head::LastSample, Head::LastRandom}) graph(h);
  dev.wait_idle();
}

Forward::~Forward() = default;

uint32_t Forward::q8_tokens() const { return kQ8Gemm ? max_chunk_ : std::max(1u, std::min(max_chunk_, kQ8MaxTokens)); }

void Forward::build(Head head, Graph& graph) {
  const ModelConfig& c = cfg_;
  const Weights& w = *w_;
  State& s = s_;
  GraphBuilder g(kernels_, graph, s.step);
  g.use_split_k(s.gemm_part, split_tokens());                 // short chunks: split K on small matrices
  g.use_q8_x(s.xq, s.xqs, q8_tokens(), kQ8TokensPerGroup, kQ8RowsPerLane, kQ8Lanes);  // short passes: int8 x, matvec
  g.use_q8_gemm(kQ8Gemm);
  if (kQ8Gemm) g.use_q8_h(s.hq, s.hqs);                    // long passes: gate|up stores h as int8 units for down
  g.use_rope_in_decode(kRopeInDecode);
  g.use_prenorm(s.norm_xw, s.norm_ss);                     // decode: x * norm weight stored by o and down
  g.use_rope_in_flash(kRopeInFlash);
  const float eps = c.rms_norm_eps;
  const GraphBuilder::AttnShape shape{c.head_dim, c.num_attention_heads, c.num_key_value_heads, c.rotary_dim,
                                      kPage, kSplit, c.rope_style == RopeStyle::Neox, c.qk_norm, c.attn_bias, eps};
  const uint32_t d = c.hidden_size, nh = c.num_attention_heads, hd = c.head_dim;
  const GraphBuilder::DeltaShape ds = delta_shape(c);
  const uint32_t k = c.num_experts_per_tok;
  g.embed(s.x_a, s.ids, w.token_embd);                        // x = token_embd[ids]
  g.rmsnorm(s.xb, s.x_a, w.layers[0].attn_norm, d, eps, &s.zeros, &s.x_b);  // xb = rmsnorm(x) * attn_norm
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) {
    const LayerWeights& L = w.layers[l];
    const gpu::Buffer& next_norm = l + 1 < c.num_hidden_layers ? w.layers[l + 1].attn_norm : w.output_norm;
    switch (c.layer(l).mixer) {
      case Mixer::GatedDeltaNet:  // Qwen3.5's linear attention: a state per value head, no KV cache
        g.matmul(s.qkv, s.xb, L.qkv);                         // qkv = W_qkv xb (the conv's q | k | v channels)
        g.matmul(s.gate, s.xb, L.gate);                       // z = W_z xb
        g.matmul(s.dn_b, s.xb, L.ssm_beta);                   // b = W_beta xb
        g.matmul(s.dn_a, s.xb, L.ssm_alpha);                  // a = W_alpha xb
        g.deltanet_conv(s.dn_x, s.conv_state[l], s.qkv, L.ssm_conv1d, ds);  // x = silu(causal conv1d(qkv)); window carried
        g.deltanet_scan(s.dn_o, s.scan_state[l], s.dn_x, s.dn_a, s.dn_b, L.ssm_a, L.ssm_dt, ds);  // o = gated delta rule(q, k, v; g(a), sigmoid(b)); S carried
        g.gated_rmsnorm(s.att, s.dn_o, s.gate, L.ssm_norm, ds.dv, ds.nv, eps);  // att = rmsnorm(o) * w * silu(z), per value head
        g.matmul(s.proj, s.att, L.attn_output);               // proj = W_out att
        break;
      case Mixer::GatedAttention:  // attention * sigmoid(gate), the gate from attn_q's interleaved rows
        g.matmul(s.gate, s.xb, L.gate);                       // gate = Wq_gate xb
        [[fallthrough]];
      case Mixer::Attention:
        g.matmul(s.qkv, s.xb, L.qkv);                         // qkv = [Wq; Wk; Wv] xb
        g.rope_kv(s.q, s.k_cache[l], s.v_cache[l], s.qkv, L.aux, s.rope, s.pages, shape);  // q, k = rope(qk_norm(q, k)); cache k, v
        g.attention(s.att, s.part, s.q, s.k_cache[l], s.v_cache[l], s.pages, shape);  // softmax(q k^T / sqrt(hd)) v, per split (long passes, early decode steps: att)
        g.attention_combine(s.att, s.part, shape);            // merge the splits (not after flash or decode attention)
        if (c.layer(l).mixer == Mixer::GatedAttention)
          g.sigmoid_gate(s.att, s.gate, nh, hd, nh * hd, 0, hd);  // att *= sigmoid(gate)
        g.matmul(s.proj, s.att, L.attn_output);               // proj = Wo att
        break;
    }
    g.add_rmsnorm(s.xb, s.x_b, s.x_a, s.proj, L.ffn_norm, d, eps);  // x' = x + proj; xb = rmsnorm(x') * ffn_norm
    if (c.layer(l).ffn == Ffn::Dense) {
      g.matmul(s.h, s.xb, L.gate_up);                         // h = silu(Wgate xb) * (Wup xb)
      g.matmul(s.proj, s.h, L.ffn_down);                      // proj = Wdown h
    } else {  // Mixture of experts: k of them a token.
      g.matmul(s.router, s.xb, L.moe.router);                 // router = Wr xb
      g.moe_route(s.moe_ids, s.moe_wts, s.moe_plan, s.router, c.num_experts, k, c.norm_topk_prob);  // ids, wts = top-k(softmax(router)); the pairs by expert
      g.moe_matmul(s.h, s.xb, s.moe_ids, s.moe_plan, L.moe, true, k);      // h[t, j] = silu(Wgate_e xb[t]) * (Wup_e xb[t]), e = ids[t, j]
      g.moe_matmul(s.moe_y, s.h, s.moe_ids, s.moe_plan, L.moe, false, k);  // y[t, j] = Wdown_e h[t, j]
      g.moe_combine(s.proj, s.moe_y, s.moe_wts, d, k);        // proj[t] = sum_j wts[t, j] y[t, j]
    }
    const bool shexp = c.layer(l).ffn == Ffn::Moe && c.shared_expert_intermediate_size;
    if (shexp) {  // Qwen3.5-MoE: a shared expert every token runs, gated by sigmoid(Wg xb)
      g.matmul(s.h, s.xb, L.shexp_gate_up);                   // h = silu(Wgate_s xb) * (Wup_s xb)
      g.matmul(s.shexp_y, s.h, L.shexp_down);                 // y = Wdown_s h
      g.matmul(s.shexp_g, s.xb, L.shexp_gate);                // g = Wg xb, one value a token
      g.sigmoid_gate(s.shexp_y, s.shexp_g, d, 1, 1, 0, 0);    // y[t] *= sigmoid(g[t])
      g.add_rmsnorm(s.xb_unused, s.x_c, s.x_b, s.shexp_y, next_norm, d, eps);  // x'' = x' + y (its norm unread)
    }
    g.add_rmsnorm(s.xb, s.x_a, shexp ? s.x_c : s.x_b, s.proj, next_norm, d, eps);  // x = x' (+ y) + proj; xb = rmsnorm(x) * next norm
  }
  if (head == Head::AllLogits) {
    g.matmul(s.logits_all, s.xb, w.lm_head());                // logits[t] = W_out xb[t]
  } else if (head == Head::LastSample || head == Head::LastRandom) {
    g.copy_last_row(s.x_last, s.xb, d);                       // the last token only
    g.use_step(s.step_last);
    g.matmul(s.logits, s.x_last, w.lm_head(), 0, true);       // logits = W_out xb[last]
    if (head == Head::LastSample)
      next_embedded_ = g.argmax(s.ids, s.tokens, s.argmax_part, s.logits, c.vocab_size, s.x_a, w.token_embd);  // ids[0] = tokens[out_index] = argmax(logits); x = token_embd[ids[0]] for the next step
    else
      next_embedded_ = g.sample(s.ids, s.tokens, s.logits, s.sampling, c.vocab_size, s.x_a, w.token_embd);  // ids[0] = tokens[out_index] ~ p(logits); x as argmax
  }
  g.finish();                                                 // fuse neighbours (graph_fuse.cpp), make the kernels
}

void Forward::set_sampling(const SamplingParams& p) {
  SamplingUniform u{p.temperature > 0 ? p.temperature : 1.f, p.top_p, p.min_p, p.repeat_penalty, p.presence_penalty,
                    p.frequency_penalty, (uint32_t)std::max(0, p.top_k), (uint32_t)std::max(0, p.repeat_last_n),
                    (uint32_t)p.seed, (uint32_t)(p.seed >> 32), 0, 0};
  dev_.write(s_.sampling, &u, sizeof u);
}

void Forward::use_pages(const std::vector<uint32_t>& table) {
  const uint32_t n = (max_context_ + kPage - 1) / kPage;
  if (table.size() > n) throw std::runtime_error("page table longer than the context");
  for (uint32_t p : table)
    if (p >= kv_pages_) throw std::runtime_error("page " + std::to_string(p) + " outside the KV pool");
  if (!table.empty()) dev_.write(s_.pages, table.data(), table.size() * 4);
}

void Forward::encode(gpu::Recorder& rec, Head head, uint32_t pos0, uint32_t n_tokens, uint32_t out_index) {
  encode_pass(rec, head, pos0, n_tokens, out_index, kStepSlots);
}

void Forward::encode_step(gpu::Recorder& rec, Head head, uint32_t pos0, uint32_t out_index, uint32_t slot) {
  if (slot >= kStepSlots) throw std::runtime_error("decode step slot " + std::to_string(slot) + " of " + std::to_string(kStepSlots));
  encode_pass(rec, head, pos0, 1, out_index, slot);
}

void Forward::encode_pass(gpu::Recorder& rec, Head head, uint32_t pos0, uint32_t n_tokens, uint32_t out_index,
                          uint32_t slot) {
  if (n_tokens == 0 || n_tokens > max_chunk_) throw std::runtime_error("pass of " + std::to_string(n_tokens) + " tokens (chunk limit " + std::to_string(max_chunk_) + ")");
  if (head == Head::AllLogits && n_tokens > logits_rows_)
    throw std::runtime_error("pass of " + std::to_string(n_tokens) + " tokens with all logits (limit " + std::to_string(logits_rows_) + ")");
  if (pos0 + n_tokens > max_context_)
    throw std::runtime_error("context full: " + std::to_string(pos0 + n_tokens) + " tokens exceed the context of " + std::to_string(max_context_));
  const StepParams p{pos0, n_tokens, out_index, attention_split(kSplit, pos0 + n_tokens, n_tokens, flash_nh_)};
  const StepParams both[2] = {p, {pos0 + n_tokens - 1, 1, out_index, p.split}};  // the pass, its last token
  if (slot == kStepSlots) {
    dev_.write(s_.step, &both[0], sizeof p);
    dev_.write(s_.step_last, &both[1], sizeof p);
  } else {
    if (!s_.step_slots) s_.step_slots = dev_.buffer("state.step_slots", kStepSlots * sizeof both);
    dev_.write(s_.step_slots, both, sizeof both, (uint64_t)slot * sizeof both);
    rec.copy(s_.step_slots, (uint64_t)slot * sizeof both, s_.step, 0, sizeof p);
    rec.copy(s_.step_slots, (uint64_t)slot * sizeof both + sizeof p, s_.step_last, 0, sizeof p);
  }
  graph(head).encode(rec, pos0, n_tokens, x_embedded_ && n_tokens == 1);
  passes_++;
  x_embedded_ = (head == Head::LastSample || head == Head::LastRandom) && next_embedded_;
}

void Forward::write_ids(const int32_t* ids, uint32_t n) {
  if (n > max_chunk_) throw std::runtime_error("pass of " + std::to_string(n) + " ids (chunk limit " + std::to_string(max_chunk_) + ")");
  dev_.write(s_.ids, ids, (uint64_t)n * 4);
  x_embedded_ = false;  // x no longer holds the row of ids[0]
}

const Graph& Forward::graph(Head h) {
  if (!built_[(int)h]) {
    if (h == Head::AllLogits)
      s_.logits_all = dev_.buffer("state.logits_all", (uint64_t)logits_rows_ * cfg_.vocab_size * 4);
    build(h, graphs_[(int)h]);
    built_[(int)h] = true;
  }
  return graphs_[(int)h];
}

}  // namespace ztvm
