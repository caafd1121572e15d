#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ztvm {

std::vector<PerplexityWindow> plan_perplexity_windows(size_t n_tokens, const PerplexityOptions& o) {
  if (o.ctx < 2) throw std::runtime_error("perplexity: context of " + std::to_string(o.ctx) + " tokens, need at least 2");
  const uint32_t stride = o.stride ? o.stride : o.ctx;
  // llama.cpp scores from ctx/2 on; a short stride moves the start later so that consecutive
  // windows score disjoint tokens.
  const uint32_t first = std::max<uint32_t>(o.ctx / 2, o.ctx > stride ? o.ctx - stride : 0);
  if (n_tokens < o.ctx)
    throw std::runtime_error("perplexity: the text has " + std::to_string(n_tokens) + " tokens, need at least " +
                             std::to_string(o.ctx) + " (one window of --ctx)");
  size_t n = (n_tokens - o.ctx) / stride + 1;  // with stride == ctx: n_tokens / ctx, as llama.cpp
  if (o.max_windows) n = std::min<size_t>(n, o.max_windows);
  std::vector<PerplexityWindow> w(n);
  for (size_t i = 0; i < n; i++) w[i] = {i * stride, first};
  return w;
}

double token_nll(const float* logits, size_t vocab, int32_t target) {
  if (target < 0 || (size_t)target >= vocab)
    throw std::runtime_error("perplexity: target token " + std::to_string(target) + " outside the vocabulary of " +
                             std::to_string(vocab));
  // Subtracting the max keeps exp() in range; the sum is in double so a large vocabulary of small
  // probabilities does not lose precision.
  double max_logit = logits[0];
  for (size_t i = 1; i < vocab; i++) max_logit = std::max<double>(max_logit, logits[i]);
  double sum = 0;
  for (size_t i = 0; i < vocab; i++) sum += std::exp((double)logits[i] - max_logit);
  return -((double)logits[target] - max_logit - std::log(sum));
}

double PerplexityAccumulator::ppl() const { return count_ ? std::exp(mean_) : 0.0; }

PerplexityResult PerplexityAccumulator::result(size_t windows) const {
  PerplexityResult r;
  r.count = count_;
  r.windows = windows;
  if (!count_) return r;
  const double mean = mean_;
  r.ppl = std::exp(mean);
  // Standard error of the mean nll as llama.cpp estimates it (population variance over n - 1); the
  // ppl error is its first-order propagation through exp().
  double var = m2_ / (double)count_;
  double se = count_ > 1 ? std::sqrt(var / (double)(count_ - 1)) : 0.0;
  r.error = r.ppl * se;
  r.low = std::exp(mean - 1.96 * se);
  r.high = std::exp(mean + 1.96 * se);
  return r;
}

PerplexityResult compute_perplexity(const std::vector<int32_t>& tokens, size_t vocab, const PerplexityOptions& o,
                                    const LogitsFn& logits, const PerplexityProgress& progress) {
  std::vector<PerplexityWindow> windows = plan_perplexity_windows(tokens.size(), o);
  PerplexityAccumulator acc;
  std::vector<int32_t> ids(o.ctx);
  for (size_t w = 0; w < windows.size(); w++) {
    const PerplexityWindow& win = windows[w];
    std::copy(tokens.begin() + win.start, tokens.begin() + win.start + o.ctx, ids.begin());
    // Every window starts a fresh sequence, so it gets the BOS a sequence starts with.
    if (o.bos >= 0) ids[0] = o.bos;
    std::vector<float> l = logits(ids);
    if (l.size() != (size_t)o.ctx * vocab)
      throw std::runtime_error("perplexity: logits of " + std::to_string(l.size()) + " floats, expected " +
                               std::to_string((size_t)o.ctx * vocab) + " (ctx x vocab)");
    // The logits at position p predict token p+1; the last position has nothing to predict within
    // the window and is not scored (as in llama.cpp).
    for (uint32_t p = win.first; p + 1 < o.ctx; p++) acc.add(l.data() + (size_t)p * vocab, vocab, ids[p + 1]);
    if (progress) progress(w + 1, windows.size(), acc.ppl());
  }
  return acc.result(windows.size());
}

}  // namespace ztvm
