// The host's pick under a rule (sample_cpu.h): greedy is the best allowed token, draws come only from
// what top-k / top-p / min-p keep and the rule allows, with the same draw for the same seed and step;
// the penalties push recent tokens down; a rule that allows nothing gives -1.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine/sample_cpu.h"

using namespace ztvm;

namespace {

struct Only : TokenConstraint {
  std::set<int32_t> ok;
  mutable int asked = 0;
  explicit Only(std::set<int32_t> s) : ok(std::move(s)) {}
  bool allows(int32_t id) const override {
    asked++;
    return ok.count(id) > 0;
  }
  void accept(int32_t) override {}
};

std::vector<float> logits() { return {0.5f, 3.0f, 2.5f, -1.0f, 2.9f, 0.0f, 1.0f, 2.0f}; }

}  // namespace

TEST(SampleCpu, GreedyTakesTheBestAllowedAndAsksOnceWhenItIsAllowed) {
  SamplingParams greedy;
  auto l = logits();
  EXPECT_EQ(sample_cpu(l, greedy, {}, 0), 1);
  Only any({0, 1, 2, 3, 4, 5, 6, 7});
  l = logits();
  EXPECT_EQ(sample_cpu(l, greedy, {}, 0, &any), 1);
  EXPECT_EQ(any.asked, 1);  // the pick was allowed: nothing else asked
  Only some({2, 3, 6});
  l = logits();
  EXPECT_EQ(sample_cpu(l, greedy, {}, 0, &some), 2);
  Only none({});
  l = logits();
  EXPECT_EQ(sample_cpu(l, greedy, {}, 0, &none), -1);
}

TEST(SampleCpu, DrawsOnlyWhatTheFiltersAndTheRuleKeep) {
  SamplingParams p;
  p.temperature = 1.5f;
  p.top_k = 3;  // 1, 4, 2
  p.top_p = 1.f;
  p.min_p = 0.f;
  p.seed = 42;
  std::map<int32_t, int> seen;
  for (uint64_t step = 0; step < 400; step++) {
    auto l = logits();
    seen[sample_cpu(l, p, {}, step)]++;
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen.count(1) && seen.count(4) && seen.count(2));
  EXPECT_GT(seen[1], seen[2]);  // 3.0 against 2.5
  // The rule refuses 1: draws come from what it allows, among the top-k of the allowed.
  Only rule({2, 3, 4, 5});
  seen.clear();
  for (uint64_t step = 0; step < 400; step++) {
    auto l = logits();
    seen[sample_cpu(l, p, {}, step, &rule)]++;
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen.count(4) && seen.count(2) && seen.count(5)) << "top-3 of the allowed: 4, 2, 5";
  // min-p 0.5: only tokens within half the top probability (1 and 4 here).
  p.top_k = 0;
  p.min_p = 0.5f;
  seen.clear();
  for (uint64_t step = 0; step < 200; step++) {
    auto l = logits();
    seen[sample_cpu(l, p, {}, step)]++;
  }
  EXPECT_EQ(seen.size(), 3u) << "exp(-0.5) = 0.61 and exp(-0.1) = 0.9 of the top pass; exp(-1) does not";
  EXPECT_FALSE(seen.count(7));
  // The same seed and step: the same draw.
  auto a = logits(), b = logits();
  EXPECT_EQ(sample_cpu(a, p, {}, 7), sample_cpu(b, p, {}, 7));
}

TEST(SampleCpu, PenaltiesPushRecentTokensDown) {
  SamplingParams greedy;
  greedy.repeat_penalty = 2.f;  // 3.0 -> 1.5 for token 1
  auto l = logits();
  EXPECT_EQ(sample_cpu(l, greedy, {1, 1}, 0), 4);
  greedy.repeat_penalty = 1.f;
  greedy.presence_penalty = 0.05f;  // 3.0 -> 2.95, still above 2.9
  l = logits();
  EXPECT_EQ(sample_cpu(l, greedy, {1}, 0), 1);
  greedy.frequency_penalty = 0.1f;  // 3.0 - 0.05 - 0.2 = 2.75 < 2.9
  l = logits();
  EXPECT_EQ(sample_cpu(l, greedy, {1, 1}, 0), 4);
}
