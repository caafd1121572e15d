// Prefix reuse in models with a recurrent state (Qwen3.5's gated DeltaNet, whose state cannot be cut
// back as a KV cache is): a prompt sharing a prefix with the cache resumes from the newest snapshot of
// the state inside that prefix (engine/state_ring.h) and must give what a prefill from position 0
// gives: the same greedy tokens, logits within 1e-5 NMSE of the fresh run's and of the CPU
// reference's, with fewer tokens prefilled. On the tiny random fixtures (dense and MoE) in chunks of
// 4, so a prompt leaves several snapshots; on the GPU's own decode loop and on the host path a logits
// tap takes; then through the scheduler with two slots taking turns with the one live state.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>

#include "engine/forward.h"
#include "engine/generator.h"
#include "engine/scheduler.h"
#include "engine/state_ring.h"
#include "gpu_test_util.h"
#include "model/model_file.h"
#include "model/synth.h"
#include "reference/model.h"

using namespace ztvm;
using test::nmse;

namespace {

const std::string kFixtures = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/";
constexpr uint32_t kChunk = 4, kCtx = 128;

// n ids of the vocabulary (past its specials), the same for the same seed.
std::vector<int32_t> ids(size_t n, uint32_t seed, uint32_t vocab) {
  std::vector<int32_t> v;
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    v.push_back(3 + (int32_t)((x >> 8) % (vocab - 3)));
  }
  return v;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b, size_t b_len = SIZE_MAX) {
  a.insert(a.end(), b.begin(), b.begin() + (ptrdiff_t)std::min(b_len, b.size()));
  return a;
}

struct Turn {
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // with a tap: each step's, [tokens, vocab]
  GenerateStats st;
};

// One model in chunks of 4 with pages for two sequences: `reuse` keeps its cache from call to call,
// `fresh` is reset before each of its calls; they take turns with the Forward's live state.
struct Rig {
  explicit Rig(const std::string& dir)
      : m(open_model(dir)), fwd(test::device(), *m, kCtx, kChunk, 2 * kCtx / Forward::kPage), pool(fwd.kv_pages()),
        reuse(fwd, 4, &pool), fresh(fwd, 4, &pool) {}
  std::unique_ptr<ModelFile> m;
  Forward fwd;
  PagePool pool;
  Generator reuse, fresh;
  uint32_t vocab() const { return m->config.vocab_size; }
};

Rig& rig(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Rig>> rigs;
  auto& r = rigs[name];
  if (!r) r = std::make_unique<Rig>(kFixtures + name);
  r->reuse.reset();
  r->fresh.reset();
  return *r;
}

// Greedy; with `tap` every step's logits come back (the host path); stops after `stop_after` tokens.
Turn run(Generator& g, const std::vector<int32_t>& prompt, uint32_t n, bool tap, uint32_t stop_after = 0) {
  Turn t;
  const LogitsTap on_logits = [&](const std::vector<float>& l, int32_t) { t.logits.insert(t.logits.end(), l.begin(), l.end()); };
  t.st = g.generate(prompt, n, [&](int32_t id) {
    t.tokens.push_back(id);
    return !(stop_after && t.tokens.size() >= stop_after);
  }, {}, nullptr, tap ? &on_logits : nullptr);
  return t;
}

class Reuse : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
 protected:
  Rig& r_ = rig(std::get<0>(GetParam()));
  const bool tap_ = std::get<1>(GetParam());

  // The reusing generator's turn against a fresh generator's from position 0. `from`: the snapshot
  // the reusing one must start at (the newest held at or before the shared prefix, or 0).
  Turn expect_as_fresh(const std::vector<int32_t>& prompt, uint32_t n, size_t from, uint32_t stop_after = 0) {
    const Turn got = run(r_.reuse, prompt, n, tap_, stop_after);
    r_.fresh.reset();
    const Turn want = run(r_.fresh, prompt, n, tap_, stop_after);
    EXPECT_EQ(got.tokens, want.tokens);
    EXPECT_EQ(want.st.n_prefilled, prompt.size());
    EXPECT_EQ(got.st.n_prefilled, prompt.size() - from) << "the prompt of " << prompt.size() << " from " << from;
    std::printf("  %s%s: prompt of %zu tokens, %u prefilled (fresh: %u), %zu generated\n", r_.m->config.arch_name.c_str(),
                tap_ ? " (host path)" : "", prompt.size(), got.st.n_prefilled, want.st.n_prefilled, got.tokens.size());
    if (tap_ && !got.tokens.empty()) {
      EXPECT_LT(nmse(got.logits, want.logits), 1e-5);
      // Against the CPU reference over the whole sequence: the steps' rows are its last ones.
      const std::vector<int32_t> all = cat(prompt, got.tokens, got.tokens.size() - 1);
      const std::vector<float> ref = ref::forward_logits(*r_.m, all);
      const std::vector<float> tail(ref.end() - (ptrdiff_t)got.logits.size(), ref.end());
      const double e = nmse(got.logits, tail);
      std::printf("    logits NMSE vs fresh %.3g, vs the CPU reference %.3g\n", nmse(got.logits, want.logits), e);
      EXPECT_LT(e, 1e-5);
    }
    return got;
  }
  std::vector<uint32_t> held() const { return r_.reuse.states()->positions(); }
};

// (a) A second prompt that keeps the first one's first 26 ids: the snapshots of the first prompt are
// its last three chunk boundaries (24, 28 and its end, 30; the ring keeps one older entry beside a
// prompt's; the host path runs the prompt's last id alone, so its prefill ends at 29), and 35 (the
// state after its generation, parked when the fresh generator took the live state); the newest at or
// before 26 is 24.
TEST_P(Reuse, SecondPromptSharingALongPrefix) {
  const std::vector<int32_t> p1 = ids(30, 1, r_.vocab());
  expect_as_fresh(p1, 6, 0);
  EXPECT_EQ(held(), (std::vector<uint32_t>{24, 28, tap_ ? 29u : 30u, 35}));
  expect_as_fresh(cat(std::vector<int32_t>(p1.begin(), p1.begin() + 26), ids(8, 2, r_.vocab())), 12, 24);
}

// (b) Prompts diverging inside the first one: after 29 of its ids the nearest snapshot is 28 (not its
// end, 30; on the host path the prefill's end, 29, fits). Then the snapshots past 29 are forgotten and
// the new prompt's chunk ends taken, the least recently used making room: after 27 ids, 24 is left
// on the GPU path; on the host path it made room for the new ones, and the prompt runs from 0.
TEST_P(Reuse, DivergingInsideTheFirstPrompt) {
  const std::vector<int32_t> p1 = ids(30, 3, r_.vocab());
  expect_as_fresh(p1, 6, 0);
  const std::vector<int32_t> p2 = cat(std::vector<int32_t>(p1.begin(), p1.begin() + 29), ids(6, 4, r_.vocab()));
  expect_as_fresh(p2, 6, tap_ ? 29 : 28);
  const std::vector<uint32_t> host{28, 29, 33, 34, 40}, gpu{24, 28, 32, 35, 40};
  EXPECT_EQ(held(), tap_ ? host : gpu);
  expect_as_fresh(cat(std::vector<int32_t>(p1.begin(), p1.begin() + 27), ids(5, 5, r_.vocab())), 6, tap_ ? 0 : 24);
}

// (c) A chat: each prompt is the last one, its reply and a new message. The state after the reply's
// last fed token (all of it but its last token) was kept, so only that token and the message run.
TEST_P(Reuse, MultiTurnChat) {
  std::vector<int32_t> prompt = ids(30, 6, r_.vocab());
  size_t from = 0;
  for (uint32_t turn = 0; turn < 3; turn++) {
    const Turn t = expect_as_fresh(prompt, 8, from);
    ASSERT_EQ(t.tokens.size(), 8u);
    from = prompt.size() + 7;
    prompt = cat(cat(prompt, t.tokens), ids(7, 10 + turn, r_.vocab()));
  }
}

// A reply cut by its caller after 3 tokens: the GPU's decode loop has run steps past the stop, so the
// cache (and the state) holds tokens nobody was given. The next turn keeps only the 3 handed out: the
// state after the longer cache must not be restored for it; the prompt's end (30) serves instead.
// (The host path runs no step past a stop: its cache is the 29 ids of its prefill and the 3 fed.)
TEST_P(Reuse, StoppedReplyDoesNotLeakStepsPastTheStop) {
  const std::vector<int32_t> p1 = ids(30, 20, r_.vocab());
  const Turn t = expect_as_fresh(p1, 12, 0, 3);
  ASSERT_EQ(t.tokens.size(), 3u);
  const std::vector<int32_t>& cached = r_.reuse.cached();
  std::printf("    cached after the stop: %zu (prompt + %zu)\n", cached.size(), cached.size() - p1.size());
  ASSERT_GE(cached.size(), p1.size() + 2);
  EXPECT_EQ(std::vector<int32_t>(cached.begin(), cached.begin() + 32), cat(p1, t.tokens, 2));
  const std::vector<int32_t> p2 = cat(cat(p1, t.tokens), ids(6, 21, r_.vocab()));
  size_t common = 0;
  while (common < cached.size() && cached[common] == p2[common]) common++;
  expect_as_fresh(p2, 6, cached.size() <= common ? cached.size() : 30);
  if (!tap_) {
    EXPECT_GT(cached.size(), common) << "no step ran past the stop: the case is not tested";
  }
}

INSTANTIATE_TEST_SUITE_P(Qwen35, Reuse,
                         ::testing::Combine(::testing::Values("qwen3.5-f16", "qwen3.5-moe-f16"), ::testing::Bool()),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param);
                           for (char& c : n) c = isalnum((unsigned char)c) ? c : '_';
                           return n + (std::get<1>(info.param) ? "_host" : "_gpu");
                         });

// The ring's buffer is the live state's size; ztvm logs it (engine_setup.cpp). Qwen3.5-4B's shape
// (synth.cpp, from its config.json: 24 DeltaNet layers of 32, 16 key heads and 32 value heads of 128,
// 4 taps) takes 24 x (3 x 8192 + 32 x 128 x 128) x 4 bytes a snapshot.
TEST(StateRing, SnapshotBytes) {
  Rig& r = rig("qwen3.5-f16");
  uint64_t live = 0;
  for (size_t l = 0; l < r.fwd.conv_state().size(); l++) live += r.fwd.conv_state()[l].size() + r.fwd.scan_state()[l].size();
  EXPECT_EQ(StateRing::snapshot_bytes(r.m->config), live);
  const uint64_t b4 = StateRing::snapshot_bytes(synth_shape("qwen3.5-4b"));
  const uint64_t b35 = StateRing::snapshot_bytes(synth_shape("qwen3.6-35b-a3b"));
  std::printf("  snapshot: qwen3.5 fixture %llu bytes, moe fixture %llu; Qwen3.5-4B %llu (%.2f MiB), Qwen3.6-35B-A3B "
              "%llu (%.2f MiB)\n",
              (unsigned long long)live, (unsigned long long)StateRing::snapshot_bytes(rig("qwen3.5-moe-f16").m->config),
              (unsigned long long)b4, b4 / 1048576.0, (unsigned long long)b35, b35 / 1048576.0);
  EXPECT_EQ(b4, 24ull * (3 * 8192 + 32 * 128 * 128) * 4);
}

// Models without a recurrent state keep no snapshots.
TEST(StateRing, NoneWithoutARecurrentState) {
  auto m = open_model(kFixtures + "qwen3-f16");
  ASSERT_FALSE(m->config.has_recurrent_state());
  Forward fwd(test::device(), *m, 64, kChunk);
  EXPECT_EQ(Generator(fwd).states(), nullptr);
}

struct Result {
  std::vector<int32_t> tokens;
  SeqResult res;
};

std::shared_ptr<SeqRequest> request(const std::vector<int32_t>& prompt, uint32_t n, Result& out, std::promise<void>& done) {
  auto r = std::make_shared<SeqRequest>();
  r->prompt = prompt;
  r->n_max = n;
  r->on_token = [&out](int32_t t) {
    out.tokens.push_back(t);
    return true;
  };
  r->on_done = [&out, &done](const SeqResult& res) {
    out.res = res;
    done.set_value();
  };
  return r;
}

// Two conversations at once through two slots, then a second turn of the first: the same tokens as
// alone from position 0, and the second turn reuses all of the first's cache (the prompt and the reply
// but its last token). The first request's first burst (32 tokens, alone) waits until the second is
// queued, so that from then on they take bursts of 4 in turn, each parking its state for the other.
TEST(StateRing, SchedulerSlotsTakeTurns) {
  for (const char* name : {"qwen3.5-f16", "qwen3.5-moe-f16"}) {
    auto m = open_model(kFixtures + name);
    Forward fwd(test::device(), *m, kCtx, kChunk, 2 * kCtx / Forward::kPage);
    const uint32_t vocab = m->config.vocab_size, n = 40;
    const std::vector<int32_t> pa = ids(21, 30, vocab), pb = ids(17, 31, vocab), ma = ids(6, 32, vocab);
    std::vector<int32_t> want_a, want_b, want_a2;
    {
      Generator g(fwd);
      want_a = run(g, pa, n, false).tokens;
      g.reset();
      want_b = run(g, pb, n, false).tokens;
      g.reset();
      want_a2 = run(g, cat(cat(pa, want_a), ma), 10, false).tokens;
    }
    Scheduler sched(fwd, 2, 8, 4);
    EXPECT_EQ(sched.load().slots, 2u);
    Result a, b, a2;
    std::promise<void> da, db, da2, b_queued;
    std::shared_future<void> b_in = b_queued.get_future().share();
    auto ra = request(pa, n, a, da);
    ra->on_token = [&a, b_in](int32_t t) {
      if (a.tokens.empty()) b_in.wait();
      a.tokens.push_back(t);
      return true;
    };
    ASSERT_TRUE(sched.submit(ra));
    ASSERT_TRUE(sched.submit(request(pb, n, b, db)));
    b_queued.set_value();
    da.get_future().wait();
    db.get_future().wait();
    EXPECT_EQ(a.tokens, want_a) << name;
    EXPECT_EQ(b.tokens, want_b) << name;
    ASSERT_EQ(a.res.finish, Finish::Length) << a.res.error;
    const std::vector<int32_t> p2 = cat(cat(pa, a.tokens), ma);
    ASSERT_TRUE(sched.submit(request(p2, 10, a2, da2)));
    da2.get_future().wait();
    EXPECT_EQ(a2.tokens, want_a2) << name;
    EXPECT_EQ(a2.res.n_reused, pa.size() + n - 1) << name;
    std::printf("  %s through 2 slots: the second turn of %zu tokens reused %u, prefilled %u\n", name, p2.size(),
                a2.res.n_reused, a2.res.stats.n_prefilled);
  }
}

}  // namespace
