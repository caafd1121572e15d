// Generation under a rule (Generator::generate with a TokenConstraint) on a real model: with a rule
// that allows everything it gives the GPU path's greedy tokens, prefix reuse and scheduler bursts
// included; with response_format's JsonRule every reply is a prefix of a JSON object, and one that
// ends is an object an outside parser (nlohmann) reads.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "engine/generator.h"
#include "engine/scheduler.h"
#include "gpu_test_util.h"
#include "server/json_rule.h"
#include "text/tokenizer.h"

using namespace ztvm;
using test::device;

namespace {

const std::string kModel = std::string(ZTVM_TESTDATA) + "/stories260K/stories260K-f32.gguf";

struct Everything : TokenConstraint {
  int accepted = 0;
  bool allows(int32_t) const override { return true; }
  void accept(int32_t) override { accepted++; }
};

std::vector<int32_t> run(Generator& g, const std::vector<int32_t>& prompt, uint32_t n, const SamplingParams& sp = {},
                         TokenConstraint* rule = nullptr) {
  std::vector<int32_t> out;
  g.generate(prompt, n, [&](int32_t t) { out.push_back(t); return true; }, sp, rule);
  return out;
}

}  // namespace

TEST(RuledGeneration, AnOpenRuleGivesTheGpuPathsTokens) {
  auto model = open_model(kModel);
  auto tok = Tokenizer::from_model_path(kModel);
  Forward fwd(device(), *model, 256, 16);
  Generator gpu_path(fwd), ruled(fwd);
  const std::vector<int32_t> p = tok->encode("Once upon a time, there was a little", true, false);
  const std::vector<int32_t> want = run(gpu_path, p, 40);
  Everything open;
  EXPECT_EQ(run(ruled, p, 40, {}, &open), want);
  EXPECT_EQ(open.accepted, 40);
  // The next turn reuses the cache the ruled run left: the same tokens as from scratch.
  std::vector<int32_t> p2 = p;
  p2.insert(p2.end(), want.begin(), want.begin() + 20);
  gpu_path.reset();
  const std::vector<int32_t> want2 = run(gpu_path, p2, 24);
  ruled.reset();
  run(ruled, p, 40, {}, &open);
  EXPECT_EQ(run(ruled, p2, 24, {}, &open), want2);
  EXPECT_EQ(ruled.cached().size(), p2.size() + 23);

  // Through the scheduler, in bursts of 4: the same tokens again.
  Scheduler sched(fwd, 1, 8, 4);
  auto r = std::make_shared<SeqRequest>();
  std::vector<int32_t> got;
  std::promise<void> done;
  r->prompt = p;
  r->n_max = 40;
  r->rule = std::make_shared<Everything>();
  r->on_token = [&](int32_t t) { got.push_back(t); return true; };
  r->on_done = [&](const SeqResult&) { done.set_value(); };
  ASSERT_TRUE(sched.submit(r));
  done.get_future().wait();
  EXPECT_EQ(got, want);
}

TEST(RuledGeneration, JsonRuleRepliesAreJsonObjects) {
  auto model = open_model(kModel);
  auto tok = Tokenizer::from_model_path(kModel);
  Forward fwd(device(), *model, 512, 64);
  Generator gen(fwd);
  const std::vector<int32_t> p = tok->encode("Lily wrote her name and age as JSON:", true, false);
  // Any object (json_object), and a schema whose only values are {"ok": true} and {"ok": false}: with
  // whitespace bounded, that one must close within the token budget.
  const auto any = std::make_shared<JsonSchema>();
  const auto ok = std::make_shared<JsonSchema>(JsonSchema::compile(nlohmann::json::parse(
      R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false})")));
  for (const auto& schema : {any, ok}) {
    for (uint64_t seed = 0; seed < 4; seed++) {
      SamplingParams sp;
      if (seed) sp.temperature = 1.0f, sp.seed = seed;  // seed 0: greedy
      server::JsonRule rule(*tok, schema);
      gen.reset();
      std::vector<int32_t> out;  // as the server's jobs do: the end of generation ends the reply
      gen.generate(p, 160, [&](int32_t t) { out.push_back(t); return !tok->is_eog(t); }, sp, &rule);
      ASSERT_FALSE(out.empty());
      const bool ended = tok->is_eog(out.back());
      if (ended) out.pop_back();
      const std::string text = tok->decode(out);
      for (int32_t t : out) EXPECT_FALSE(tok->is_special(t)) << text;
      JsonSyntax check(*schema);
      EXPECT_TRUE(check.feed(text)) << "seed " << seed << ": " << text;
      EXPECT_EQ(check.done(), ended) << "the end comes when, and only when, the value closes: " << text;
      if (schema == ok) {
        ASSERT_TRUE(ended) << text;
        nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        ASSERT_TRUE(j.is_object()) << text;
        EXPECT_EQ(j.size(), 1u) << text;
        EXPECT_TRUE(j.contains("ok") && j["ok"].is_boolean()) << text;
      } else if (ended) {
        EXPECT_TRUE(nlohmann::json::parse(text, nullptr, false).is_object()) << text;
      }
      std::string shown = text.substr(0, 70);
      for (char& c : shown) c = c == '\n' ? ' ' : c;
      std::printf("  %s seed %llu: %s%s\n", schema == ok ? "ok" : "any", (unsigned long long)seed, shown.c_str(),
                  ended ? " [end]" : "");
    }
  }
}
