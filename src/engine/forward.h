// The model on the GPU: weights, activations, paged KV cache, and the recorded forward passes.
#pragma once
#include <algorithm>
#include <memory>

#include "engine/graph.h"
#include "engine/sampling.h"
#include "engine/weights.h"
#include "gpu/kernels.h"
#include "model/model_file.h"

namespace ztvm {

enum class Head {
  None,        // a prefill chunk that is not the last: fill the KV cache only
  LastSample,  // logits of the last token, argmax into ids[0] and tokens[out_index]
  LastRandom,  // the same, but sampled (sample.wgsl) with the parameters of set_sampling()
  AllLogits,   // logits for every token of the pass (ztvm logits, perplexity)
};

class Forward {
 public:
  static constexpr uint32_t kPage = 16;  // tokens per KV page
  static constexpr uint32_t kSplit = 128;  // KV positions per attention split (attention_split: or twice)
  static constexpr uint32_t kLogitsRows = 512;  // the longest pass with every token's logits (Head::AllLogits)

  // max_context: positions one sequence may use. kv_pages: physical KV pages shared by all sequences
  // (0: enough for one sequence of max_context tokens, mapped by the identity page table).
  Forward(gpu::Device& dev, const ModelFile& model, uint32_t max_context, uint32_t max_chunk = 64,
          uint32_t kv_pages = 0);
  ~Forward();

  // The ids of the next pass (ordered with earlier submits by the queue).
  void write_ids(const int32_t* ids, uint32_t n);
  // Records one pass of n_tokens tokens starting at position pos0 whose ids are in ids(): written by
  // write_ids, or ids[0] chosen by the last pass (Head::LastSample, LastRandom). Writes the step
  // uniforms (ordered with earlier submits by the queue), then the dispatches. A one-token pass right
  // after a LastSample or LastRandom pass skips its embed: that pass's argmax or sample stored the row
  // (GraphBuilder::argmax).
  void encode(gpu::Recorder& rec, Head head, uint32_t pos0, uint32_t n_tokens, uint32_t out_index = 0);
  // A one-token decode step recorded beside other steps in one submission: the queue's writes would
  // all land before the submission's first step, so its uniforms go through staging slot `slot`
  // (< kStepSlots) and copies in the recorder. Slots are reused once the steps reading them are
  // submitted (a queue write is ordered after earlier submissions).
  static constexpr uint32_t kStepSlots = 16;
  void encode_step(gpu::Recorder& rec, Head head, uint32_t pos0, uint32_t out_index, uint32_t slot);

  // The parameters Head::LastRandom passes use (a uniform the queue updates in order).
  void set_sampling(const SamplingParams& p);

  // Points the following passes at one sequence's pages: table[i] is the physical page of positions
  // [i * kPage, (i + 1) * kPage). Ordered with the passes by the queue, so sequences can alternate.
  void use_pages(const std::vector<uint32_t>& table);
  uint32_t kv_pages() const { return kv_pages_; }

  const ModelConfig& config() const { return cfg_; }
  uint32_t max_context() const { return max_context_; }
  uint32_t max_chunk() const { return max_chunk_; }
  const gpu::Buffer& ids() const { return s_.ids; }        // [max_chunk] u32 token ids of the pass (write_ids)
  // The logits of the last Head::AllLogits pass, [logits_rows, vocab] f32 (made with that graph, on its
  // first use: generation needs only the last token's row).
  const gpu::Buffer& logits() const { return s_.logits_all; }
  uint32_t logits_rows() const { return logits_rows_; }     // Head::AllLogits passes are at most this long
  // After a Head::None pass: its tokens' states after the final norm (the LM head's input), [n_tokens,
  // hidden] f32. That pass ends with the last layer's add_rmsnorm, which nothing after it fuses away.
  const gpu::Buffer& hidden() const { return s_.xb; }
  const gpu::Buffer& tokens() const { return s_.tokens; }  // [max_context] u32 sampled ids
  const Weights& weights() const { return *w_; }
  const Graph& graph(Head h);  // built on first use for Head::AllLogits
  // The live recurrent state: each DeltaNet layer's conv window and delta-rule state (null buffers in
  // other layers), which every pass advances. state_ring.h copies it out and back; `state_owner` is the
  // ring whose sequence it holds, `passes()` counts the passes recorded, so a ring can tell whether
  // anything ran since its own.
  const std::vector<gpu::Buffer>& conv_state() const { return s_.conv_state; }
  const std::vector<gpu::Buffer>& scan_state() const { return s_.scan_state; }
  uint64_t passes() const { return passes_; }
  class StateRing* state_owner = nullptr;
  gpu::Device& device() { return dev_; }

 private:
  // encode() and encode_step(): slot kStepSlots writes the uniforms through the queue.
  void encode_pass(gpu::Recorder& rec, Head head, uint32_t pos0, uint32_t n_tokens, uint32_t out_index, uint32_t slot);
  void build(Head head, Graph& graph);
  // Passes up to this long may run the split-K GEMM (one token tile).
  uint32_t split_tokens() const { return std::min(max_chunk_, GraphBuilder::kSplitMaxTokens); }
  uint32_t q8_tokens() const;  // the longest pass that reads int8 x (forward.cpp)
  struct State {
    gpu::Buffer step, step_last;      // uniforms: StepParams for the pass, and for its last token only
    gpu::Buffer step_slots;           // encode_step's staging: kStepSlots pairs of StepParams, copied into step and step_last
    gpu::Buffer sampling;             // uniform: SamplingUniform
    gpu::Buffer ids, tokens;          // token ids in, sampled ids out
    gpu::Buffer x_a, x_b;             // [chunk, hidden] residual stream, ping-pong
    gpu::Buffer xb;                   // [chunk, hidden] normed input of the next matmul
    gpu::Buffer qkv;                  // [chunk, (NH + 2 NKV) * HD]; DeltaNet layers [chunk, C] (its q | k | v)
    gpu::Buffer q, att;               // [chunk, NH * HD] rotated queries; attention output (DeltaNet: the normed o)
    gpu::Buffer gate;                 // [chunk, NH * HD] gated attention's gate; DeltaNet [chunk, NV * DV] z
    gpu::Buffer dn_x, dn_o;           // DeltaNet: [chunk, C] the conv's output; [chunk, NV * DV] the scan's
    gpu::Buffer dn_b, dn_a;           // DeltaNet: [chunk, NV] ssm_beta xb, ssm_alpha xb
    gpu::Buffer part;                 // [chunk, or 1 where flash serves long passes; NH, splits, HD + 2]
    gpu::Buffer proj;                 // [chunk, hidden] output of attn_output / ffn_down
    gpu::Buffer h;                    // [chunk, ffn] silu(gate) * up; sparse layers [chunk, k, expert ffn]
    gpu::Buffer router;               // sparse layers: [chunk, experts] the router's logits
    gpu::Buffer moe_ids, moe_wts;     // [chunk, k] each token's experts and their weights
    gpu::Buffer moe_y;                // [chunk, k, hidden] the experts' outputs
    gpu::Buffer moe_plan;             // the pass's pairs by expert (GraphBuilder::moe_route)
    gpu::Buffer shexp_y, shexp_g;     // shared expert: [chunk, hidden] its output; [chunk] its gate's logit
    gpu::Buffer x_c, xb_unused;       // shared expert: [chunk, hidden] x' + its output; that add's norm (unread)
    gpu::Buffer gemm_part;            // [KSPLIT, chunk, virtual rows] split-K GEMM partials (graph.h)
    gpu::Buffer x_last;               // [hidden] the last token's normed state (LM head input)
    gpu::Buffer norm_xw, norm_ss;     // [hidden] decode: x * the next norm's weight, sums of x^2 (use_prenorm)
    gpu::Buffer zeros;                // [hidden] zeros: the first layer's norm as a residual step of x + 0
    gpu::Buffer xq, xqs;              // one token's matvec input as int8 units + (d, sum) per unit (graph.h)
    gpu::Buffer hq, hqs;              // long passes: h as int8 units, stored by the gated GEMM (use_q8_h)
    gpu::Buffer logits;               // [vocab] the last token's, for the sampler
    gpu::Buffer logits_all;           // [logits_rows, vocab] every token's (Head::AllLogits, made on first use)
    gpu::Buffer argmax_part;          // argmax's per-workgroup (value, index) pairs
    gpu::Buffer rope;                 // [max_context, rot/2] (cos, sin)
    gpu::Buffer pages;                // KV page table of the sequence being run (identity by default)
    std::vector<gpu::Buffer> k_cache, v_cache;  // per attention layer [pages][PAGE][NKV][HD] f16
    // Per DeltaNet layer: its conv window and delta-rule state, carried from pass to pass (one sequence's:
    // a pass at position 0 starts them afresh; ModelConfig::has_recurrent_state).
    std::vector<gpu::Buffer> conv_state, scan_state;
  };
  gpu::Device& dev_;
  gpu::Kernels kernels_;
  ModelConfig cfg_;
  uint32_t max_context_, max_chunk_, kv_pages_, logits_rows_ = 1;
  uint32_t flash_nh_ = 0;  // query heads where flash attention serves them (its splits: attention_split), else 0
  std::unique_ptr<Weights> w_;
  State s_;
  Graph graphs_[4];
  bool built_[4] = {};
  bool next_embedded_ = false;  // the LastSample / LastRandom heads store the next step's embedding row
  bool x_embedded_ = false;     // ... and the last pass recorded was one, with no write_ids since
  uint64_t passes_ = 0;         // passes recorded (passes())
};

// (cos, sin) of pos * theta_i for i < rot/2, with Llama-3 style per-frequency divisors when given.
std::vector<float> rope_table(const ModelConfig& c, uint32_t max_context);

}  // namespace ztvm
