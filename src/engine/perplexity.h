// Perplexity over windows of a token sequence, laid out the way llama.cpp's perplexity tool does
// by default so the numbers are comparable: the tokens (with BOS at the start when the vocabulary
// adds one) are cut into windows of `ctx` tokens, each window starts from an empty cache with its
// first token replaced by BOS, and only predictions from the second half of the window count
// (so every scored token has at least ctx/2 tokens of context).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ztvm {

struct PerplexityOptions {
  uint32_t ctx = 512;         // window length in tokens
  uint32_t stride = 0;        // window advance; 0: ctx (llama.cpp's default, non-overlapping windows)
  uint32_t max_windows = 0;   // 0: as many as fit
  int32_t bos = -1;           // >= 0: replaces each window's first token (when the vocab adds BOS)
};

// One window: tokens [start, start + ctx); logits at positions first..ctx-2 are scored against the
// token that follows each of them.
struct PerplexityWindow {
  size_t start;
  uint32_t first;
};

// The windows over n_tokens tokens. With stride >= ctx/2 the second half of each window is scored
// (llama.cpp); a smaller stride scores only the last `stride` positions so no token counts twice.
// Throws if not even one window fits.
std::vector<PerplexityWindow> plan_perplexity_windows(size_t n_tokens, const PerplexityOptions& o);

// -log softmax(logits)[target], computed in double.
double token_nll(const float* logits, size_t vocab, int32_t target);

struct PerplexityResult {
  double ppl = 0;     // exp(mean negative log-likelihood)
  double error = 0;   // standard error of ppl (llama.cpp's "+/-": ppl * stderr of the mean nll)
  double low = 0, high = 0;  // 95% interval: exp(mean nll -/+ 1.96 stderr)
  size_t count = 0;   // tokens scored
  size_t windows = 0;
};

// Running mean and variance of per-token negative log-likelihoods (Welford's update: summing
// squares and subtracting mean^2 cancels badly when the nlls are nearly equal).
class PerplexityAccumulator {
 public:
  void add_nll(double nll) {
    count_++;
    double delta = nll - mean_;
    mean_ += delta / (double)count_;
    m2_ += delta * (nll - mean_);
  }
  void add(const float* logits, size_t vocab, int32_t target) { add_nll(token_nll(logits, vocab, target)); }
  size_t count() const { return count_; }
  double ppl() const;
  PerplexityResult result(size_t windows) const;

 private:
  double mean_ = 0, m2_ = 0;  // m2_: sum of squared deviations from the mean
  size_t count_ = 0;
};

// Logits [ids.size(), vocab] for every position of ids, from an empty cache.
using LogitsFn = std::function<std::vector<float>(const std::vector<int32_t>& ids)>;
// Called after each window: (windows done, windows total, running perplexity).
using PerplexityProgress = std::function<void(size_t done, size_t total, double ppl)>;

// Runs every planned window through `logits` and scores it.
PerplexityResult compute_perplexity(const std::vector<int32_t>& tokens, size_t vocab, const PerplexityOptions& o,
                                    const LogitsFn& logits, const PerplexityProgress& progress = {});

}  // namespace ztvm
