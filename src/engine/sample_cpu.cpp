#include "engine/sample_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <unordered_map>

namespace ztvm {

namespace {

constexpr float kNone = -std::numeric_limits<float>::infinity();

void apply_penalties(std::vector<float>& l, const SamplingParams& p, const std::vector<int32_t>& recent) {
  if (p.repeat_penalty == 1.f && p.presence_penalty == 0.f && p.frequency_penalty == 0.f) return;
  std::unordered_map<int32_t, int> count;
  const size_t n = std::min<size_t>(recent.size(), (size_t)std::max(0, p.repeat_last_n));
  for (size_t i = recent.size() - n; i < recent.size(); i++) count[recent[i]]++;
  for (auto [id, times] : count) {
    if (id < 0 || (size_t)id >= l.size()) continue;
    float& x = l[id];
    if (p.repeat_penalty != 1.f) x = x > 0 ? x / p.repeat_penalty : x * p.repeat_penalty;  // llama.cpp's rule
    x -= p.presence_penalty + p.frequency_penalty * (float)times;
  }
}

// One pick from shaped logits; tokens at -inf are out. -1 if every token is.
int32_t pick(const std::vector<float>& l, const SamplingParams& p, std::mt19937_64& rng) {
  if (p.greedy()) {
    int32_t best = -1;
    for (size_t i = 0; i < l.size(); i++)
      if (l[i] > kNone && (best < 0 || l[i] > l[best])) best = (int32_t)i;
    return best;
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < l.size(); i++)
    if (l[i] > kNone) ids.push_back((int32_t)i);
  if (ids.empty()) return -1;
  const size_t k = p.top_k > 0 ? std::min<size_t>(ids.size(), (size_t)p.top_k) : ids.size();
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  ids.resize(k);
  // top-p and min-p on the untempered distribution over the top-k.
  std::vector<double> prob(k);
  double sum = 0;
  for (size_t i = 0; i < k; i++) sum += prob[i] = std::exp((double)l[ids[i]] - l[ids[0]]);
  size_t keep = k;
  double mass = 0;
  for (size_t i = 0; i < k; i++) {
    mass += prob[i] / sum;
    if (prob[i] < p.min_p * prob[0]) {
      keep = std::max<size_t>(i, 1);
      break;
    }
    if (mass >= p.top_p) {
      keep = i + 1;
      break;
    }
  }
  ids.resize(keep);
  std::vector<double> w(keep);
  for (size_t i = 0; i < keep; i++) w[i] = std::exp(((double)l[ids[i]] - l[ids[0]]) / p.temperature);
  std::discrete_distribution<size_t> draw(w.begin(), w.end());
  return ids[draw(rng)];
}

}  // namespace

int32_t sample_cpu(std::vector<float>& logits, const SamplingParams& p, const std::vector<int32_t>& recent,
                   uint64_t step, const TokenConstraint* rule) {
  apply_penalties(logits, p, recent);
  std::mt19937_64 rng(p.seed ^ (0x9E3779B97F4A7C15ull * (step + 1)));
  const int32_t first = pick(logits, p, rng);
  if (!rule || (first >= 0 && rule->allows(first))) return first;
  for (size_t i = 0; i < logits.size(); i++)
    if (logits[i] > kNone && !rule->allows((int32_t)i)) logits[i] = kNone;
  return pick(logits, p, rng);
}

}  // namespace ztvm
