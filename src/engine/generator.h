// Runs passes of the forward graph: chunked prefill with prefix reuse, and a decode loop that keeps
// the next token on the GPU (argmax writes the id the embedding reads) while the host reads sampled
// ids back through a ring of mapped buffers a few steps behind, instead of waiting on every token.
#pragma once
#include <functional>
#include <vector>

#include "engine/forward.h"

namespace ztvm {

struct GenerateStats {
  uint32_t n_prompt = 0;     // prompt tokens given
  uint32_t n_prefilled = 0;  // of which actually computed (the rest reused from the KV cache)
  uint32_t n_generated = 0;
  double ttft_ms = 0;        // start to first token on the host
  double decode_ms = 0;      // first token to last token
};

// How the next token is chosen. temperature 0 is greedy (argmax); otherwise the distribution is
// shaped by the penalties, top-k, top-p and min-p, and sampled with a seeded generator.
struct SamplingParams {
  float temperature = 0.f;
  int32_t top_k = 40;           // 0: no limit
  float top_p = 0.95f;          // 1: off
  float min_p = 0.05f;          // 0: off
  float repeat_penalty = 1.f;   // 1: off (llama.cpp's repeat penalty over the last repeat_last_n tokens)
  float presence_penalty = 0.f;
  float frequency_penalty = 0.f;
  int32_t repeat_last_n = 64;
  uint64_t seed = 0;            // same seed, same output
  bool greedy() const { return temperature <= 0.f; }
};

class Generator {
 public:
  explicit Generator(Forward& fwd, uint32_t ring = 4);

  // Greedy generation of up to n_max tokens after `prompt`. on_token returns false to stop early.
  // KV entries of a previous call that match the prompt's prefix are reused.
  GenerateStats generate(const std::vector<int32_t>& prompt, uint32_t n_max,
                         const std::function<bool(int32_t)>& on_token, const SamplingParams& sampling = {});

  // Logits [ids.size(), vocab] for every position (teacher forcing), from an empty cache.
  std::vector<float> logits(const std::vector<int32_t>& ids);

  // Ids whose keys/values are in the cache, in order.
  const std::vector<int32_t>& cached() const { return cached_; }
  void reset() { cached_.clear(); }

 private:
  void check_ids(const std::vector<int32_t>& ids) const;
  Forward& fwd_;
  std::vector<gpu::Buffer> ring_;
  std::vector<int32_t> cached_;
};

}  // namespace ztvm
