// Sampling parameters (shared by the generator and the GPU graph that samples).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace ztvm {

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

// A rule on which token may come next (constrained generation, e.g. JSON output). A generation
// given one picks every token on the host from the step's logits (sample_cpu.h), one step a
// submission: slower than the GPU's own sampling, which cannot ask the rule.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  virtual bool allows(int32_t id) const = 0;  // may `id` come next?
  virtual void accept(int32_t id) = 0;        // `id` came
};

// Given to Generator::generate: sees every step's logits (as the model gave them, before any penalty)
// and the token picked from them (logprobs). Like a rule, it moves the picking to the host.
using LogitsTap = std::function<void(const std::vector<float>& logits, int32_t picked)>;

// Mirrors `Sampling` in kernels/sample.wgsl.
struct SamplingUniform {
  float temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  uint32_t top_k, repeat_last_n, seed_lo, seed_hi, pad0, pad1;
};

}  // namespace ztvm
