// The scheduler runs several sequences on one Forward, interleaved in bursts over a shared page
// pool. Whatever the interleaving, eviction or cancellation, every request must produce exactly the
// tokens it produces alone (greedy, stories260K).
#include <gtest/gtest.h>

#include <future>
#include <map>

#include "gpu_test_util.h"
#include "engine/scheduler.h"

using namespace ztvm;
using test::device;

namespace {

const std::string kModel = std::string(ZTVM_TESTDATA) + "/stories260K/stories260K-f32.gguf";

std::vector<int32_t> prompt(int seed, size_t n) {
  std::vector<int32_t> p = {1};
  for (size_t i = 1; i < n; i++) p.push_back(3 + (int32_t)((seed * 131 + i * 29) % 500));
  return p;
}

struct Outcome {
  std::vector<int32_t> tokens;
  SeqResult result;
};

// Submits a request; the future resolves when it ends.
std::future<Outcome> submit(Scheduler& s, std::vector<int32_t> p, uint32_t n, uint32_t stop_after = 0,
                            std::shared_ptr<SeqRequest>* handle = nullptr) {
  auto r = std::make_shared<SeqRequest>();
  auto out = std::make_shared<Outcome>();
  auto done = std::make_shared<std::promise<Outcome>>();
  r->prompt = std::move(p);
  r->n_max = n;
  r->on_token = [out, stop_after](int32_t t) {
    out->tokens.push_back(t);
    return stop_after == 0 || out->tokens.size() < stop_after;
  };
  r->on_done = [out, done](const SeqResult& res) {
    out->result = res;
    done->set_value(*out);
  };
  if (handle) *handle = r;
  EXPECT_TRUE(s.submit(r));
  return done->get_future();
}

}  // namespace

TEST(Scheduler, InterleavedRequestsMatchSoloRuns) {
  auto model = open_model(kModel);
  // Solo references from a plain generator.
  std::vector<std::vector<int32_t>> want;
  {
    Forward fwd(device(), *model, 256, 16);
    Generator gen(fwd);
    for (int i = 0; i < 6; i++) {
      std::vector<int32_t> t;
      gen.reset();
      gen.generate(prompt(i, 10 + 7 * i), 30, [&](int32_t x) { t.push_back(x); return true; });
      want.push_back(t);
    }
  }
  // 6 requests, 3 slots, a pool of 24 pages (384 tokens) that cannot hold them all at once.
  Forward fwd(device(), *model, 256, 16, 24);
  Scheduler sched(fwd, 3, 64, 4);
  std::vector<std::future<Outcome>> fs;
  for (int i = 0; i < 6; i++) fs.push_back(submit(sched, prompt(i, 10 + 7 * i), 30));
  for (int i = 0; i < 6; i++) {
    Outcome o = fs[i].get();
    EXPECT_EQ(o.result.finish, Finish::Length) << o.result.error;
    EXPECT_EQ(o.tokens, want[i]) << "request " << i;
    EXPECT_EQ(o.result.stats.n_generated, 30u);
  }
  EXPECT_EQ(sched.load().active, 0u);
}

TEST(Scheduler, PrefixReuseAcrossRequests) {
  auto model = open_model(kModel);
  Forward fwd(device(), *model, 256, 16, 64);
  Scheduler sched(fwd, 2, 64, 4);
  std::vector<int32_t> p = prompt(7, 40);
  Outcome first = submit(sched, p, 12).get();
  // The next turn of the same conversation: the first prompt, the reply, and more.
  std::vector<int32_t> p2 = p;
  p2.insert(p2.end(), first.tokens.begin(), first.tokens.end());
  for (int i = 0; i < 5; i++) p2.push_back(100 + i);
  Outcome second = submit(sched, p2, 12).get();
  EXPECT_GE(second.result.n_reused, 40u) << "the first request's KV should be reused";
  Forward solo(device(), *model, 256, 16);
  Generator gen(solo);
  std::vector<int32_t> want;
  gen.generate(p2, 12, [&](int32_t x) { want.push_back(x); return true; });
  EXPECT_EQ(second.tokens, want);
}

TEST(Scheduler, CancelAndStopEndRequestsAndFreePages) {
  auto model = open_model(kModel);
  Forward fwd(device(), *model, 256, 16, 32);
  Scheduler sched(fwd, 2, 64, 4);
  std::shared_ptr<SeqRequest> h;
  auto long_one = submit(sched, prompt(1, 20), 200, 0, &h);
  auto stopped = submit(sched, prompt(2, 20), 200, 5);
  Outcome s = stopped.get();
  EXPECT_EQ(s.result.finish, Finish::Stopped);
  EXPECT_EQ(s.tokens.size(), 5u);
  h->cancelled = true;
  Outcome c = long_one.get();
  EXPECT_EQ(c.result.finish, Finish::Cancelled);
  EXPECT_LT(c.tokens.size(), 200u);
  // The cancelled request's pages went back: only the stopped request's cache is still held.
  auto load = sched.load();
  EXPECT_GE(load.pages_free, load.pages_total - 3);
}

TEST(Scheduler, SmallPoolEndsCleanly) {
  auto model = open_model(kModel);
  Forward fwd(device(), *model, 256, 16, 8);  // 128 tokens of KV for a 256-token context
  Scheduler sched(fwd, 2, 64, 4);
  // A prompt that can never fit the pool ends with an error; one that fits but whose reply outgrows
  // the pool ends as "length" where the pages ran out; the scheduler keeps working after both.
  Outcome big = submit(sched, prompt(3, 200), 1).get();
  EXPECT_EQ(big.result.finish, Finish::Error);
  EXPECT_NE(big.result.error.find("KV cache"), std::string::npos) << big.result.error;
  Outcome grow = submit(sched, prompt(4, 100), 100).get();
  EXPECT_EQ(grow.result.finish, Finish::Length);
  EXPECT_EQ(grow.tokens.size(), 28u);  // 100 + 28 = 128 positions
  Outcome after = submit(sched, prompt(5, 10), 3).get();
  EXPECT_EQ(after.tokens.size(), 3u);
}

// Embedding requests (SeqRequest::embed) among generations: each gives what a lone generator gives,
// the generations keep their solo tokens, and a prompt the pool cannot hold ends as an error.
TEST(Scheduler, EmbeddingsBesideGenerations) {
  auto model = open_model(kModel);
  std::vector<std::vector<float>> want_vec;
  std::vector<int32_t> want_tokens;
  {
    Forward fwd(device(), *model, 256, 16);
    Generator gen(fwd);
    for (int i = 0; i < 3; i++) want_vec.push_back(gen.embedding(prompt(20 + i, 15 + 9 * i), i == 1 ? Pooling::Last : Pooling::Mean));
    gen.reset();
    gen.generate(prompt(3, 20), 30, [&](int32_t x) { want_tokens.push_back(x); return true; });
  }
  Forward fwd(device(), *model, 256, 16, 12);
  Scheduler sched(fwd, 2, 64, 4);
  auto gen_future = submit(sched, prompt(3, 20), 30);
  std::vector<std::future<SeqResult>> fs;
  for (int i = 0; i < 3; i++) {
    auto r = std::make_shared<SeqRequest>();
    auto done = std::make_shared<std::promise<SeqResult>>();
    r->prompt = prompt(20 + i, 15 + 9 * i);
    r->embed = i == 1 ? Pooling::Last : Pooling::Mean;
    r->on_token = [](int32_t) { return false; };
    r->on_done = [done](const SeqResult& res) { done->set_value(res); };
    fs.push_back(done->get_future());
    ASSERT_TRUE(sched.submit(r));
  }
  for (int i = 0; i < 3; i++) {
    SeqResult res = fs[i].get();
    EXPECT_EQ(res.finish, Finish::Stopped) << res.error;
    ASSERT_EQ(res.embedding.size(), want_vec[i].size());
    for (size_t k = 0; k < res.embedding.size(); k++)  // a reused BOS may change the passes' lengths
      ASSERT_NEAR(res.embedding[k], want_vec[i][k], 1e-6) << "input " << i << ", component " << k;
    EXPECT_EQ(res.stats.n_prompt, (uint32_t)(15 + 9 * i));
  }
  EXPECT_EQ(gen_future.get().tokens, want_tokens);
  // 12 pages hold 192 tokens: a 250-token input cannot fit.
  auto big = std::make_shared<SeqRequest>();
  std::promise<SeqResult> done;
  big->prompt = prompt(9, 250);
  big->embed = Pooling::Mean;
  big->on_token = [](int32_t) { return false; };
  big->on_done = [&](const SeqResult& res) { done.set_value(res); };
  ASSERT_TRUE(sched.submit(big));
  SeqResult res = done.get_future().get();
  EXPECT_EQ(res.finish, Finish::Error);
  EXPECT_NE(res.error.find("cannot hold"), std::string::npos) << res.error;
}
