// Runs passes of the forward graph: chunked prefill with prefix reuse, and a decode loop that keeps
// the next token on the GPU (argmax writes the id the embedding reads) while the host reads sampled
// ids back through a ring of mapped buffers a few steps behind, instead of waiting on every token.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "engine/embedding.h"
#include "engine/forward.h"
#include "engine/kv_pages.h"
#include "engine/sampling.h"
#include "engine/state_ring.h"

namespace ztvm {

struct GenerateStats {
  uint32_t n_prompt = 0;     // prompt tokens given
  uint32_t n_prefilled = 0;  // of which actually computed (the rest reused from the KV cache)
  uint32_t n_generated = 0;
  double ttft_ms = 0;        // start to first token on the host
  double decode_ms = 0;      // first token to last token
  double encode_ms = 0;      // decode steps: host time spent recording and submitting them
  double wait_ms = 0;        // decode steps: host time spent waiting for the GPU's tokens
  uint32_t submissions = 0;  // decode steps' submissions (fewer than the steps when several share one)
};

class Generator {
 public:
  // Without a pool the generator owns the whole KV cache (identity page table). With one, it is one
  // of several sequences: it holds pages from the pool and points the passes at them on every call.
  explicit Generator(Forward& fwd, uint32_t ring = 4, PagePool* pool = nullptr);
  ~Generator();

  // Greedy generation of up to n_max tokens after `prompt`. on_token returns false to stop early.
  // KV entries of a previous call that match the prompt's prefix are reused; in models with a
  // recurrent state (ModelConfig::has_recurrent_state) up to the newest snapshot of it inside that
  // prefix (state_ring.h), the rest of the prompt replayed from there. With a `rule`, every
  // token is picked on the host among those it allows (sample_cpu.h), a step at a time; generation
  // also ends where the rule allows nothing.
  // A `tap` sees each step's logits and pick (the same host path as a rule).
  GenerateStats generate(const std::vector<int32_t>& prompt, uint32_t n_max,
                         const std::function<bool(int32_t)>& on_token, const SamplingParams& sampling = {},
                         TokenConstraint* rule = nullptr, const LogitsTap* tap = nullptr);

  // Logits [ids.size(), vocab] for every position (teacher forcing), from an empty cache.
  std::vector<float> logits(const std::vector<int32_t>& ids);
  // The same, a position at a time: row(pos, logits of pos) as each pass's rows come back, so a long
  // text is scored without holding [n, vocab] (echoed prompt logprobs).
  void each_logits(const std::vector<int32_t>& ids, const std::function<void(uint32_t, const float*)>& row);

  // The embedding of `ids` (engine/embedding.h): their final states pooled and of unit length. Last-
  // token pooling reuses a cached prefix as generate() does; mean and cls read every pass from 0.
  std::vector<float> embedding(const std::vector<int32_t>& ids, Pooling pooling);

  // Ids whose keys/values are in the cache, in order: after generate(), the prompt and every generated
  // token that went back through the model, also those of steps run past a stop (not handed out).
  const std::vector<int32_t>& cached() const { return cached_; }
  void reset();
  // Models with a recurrent state: the snapshots of it this generator holds (null for other models).
  const StateRing* states() const { return states_.get(); }

  // Decode steps recorded into one submission (1: a submission a step; 0, the default: chosen as the
  // tokens come, auto_steps_per_submit). More save the GPU a submission's boundary per step (14-19 us
  // on the H200, 1-2% of a step: bench/EXPERIMENTS.md) but hand tokens out in bursts of K.
  void set_steps_per_submit(uint32_t k);
  uint32_t steps_per_submit() const { return steps_per_submit_; }
  // Steps a submission for a decode step of `ms_per_token`: as many as fit in kAutoGroupMs, so that a
  // burst holds back at most that much text (invisible when streaming), at most kAutoMaxSteps; one
  // on slow devices (a CPU through lavapipe), where every token is shown as it comes.
  static constexpr double kAutoGroupMs = 10.0;
  static constexpr uint32_t kAutoMaxSteps = 4;
  static uint32_t auto_steps_per_submit(double ms_per_token);

  // Pooled generators: makes sure positions [0, n_tokens) have pages; false (nothing taken) if the
  // pool has too few free. release() gives every page back and forgets the cache.
  bool reserve(uint32_t n_tokens);
  void release();
  uint32_t pages_held() const { return (uint32_t)pages_.size(); }

 private:
  void check_ids(const std::vector<int32_t>& ids) const;
  // Checks, page binding and prefix reuse, then prompt[cached, end) through the model in chunks; the
  // last chunk with `last_head` (and its picked id copied to ring slot 0 unless the head is None).
  void prefill(const std::vector<int32_t>& prompt, size_t end, uint32_t n_max, Head last_head, GenerateStats& st);
  // The cache cut to its first `keep` ids for a pass over new ones; with a recurrent state, cut further
  // back to the newest state held at or before keep. Returns the cut.
  size_t rewind(size_t keep);
  // After the pass over ids [at, at + n) of a prompt's [from, end), recorded into rec: saves the state
  // at the chunk boundaries a ring of snapshots keeps (the last few of the prompt, its end included).
  void snapshot(gpu::Recorder& rec, size_t from, size_t at, uint32_t n, size_t end);
  GenerateStats generate_ruled(const std::vector<int32_t>& prompt, uint32_t n_max,
                               const std::function<bool(int32_t)>& on_token, const SamplingParams& sampling,
                               TokenConstraint* rule, const LogitsTap* tap);
  void bind_pages(uint32_t n_tokens);  // reserve (or throw) and point the passes at our pages
  void grow_ring(uint32_t n);          // readback slots, at least n
  Forward& fwd_;
  PagePool* pool_;
  std::vector<uint32_t> pages_;
  std::vector<gpu::Buffer> ring_;
  std::vector<int32_t> cached_;
  std::unique_ptr<StateRing> states_;  // models with a recurrent state
  uint32_t steps_per_submit_ = 0;
  uint32_t depth_;  // steps in flight with one a submission (the ring's size as constructed)
};

}  // namespace ztvm
