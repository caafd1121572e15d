// Perplexity: the math on hand-computable logits, the window layout, and `ztvm ppl` on stories260K
// against llama.cpp's llama-perplexity on the same model and text.
#include <gtest/gtest.h>

#include "cli_test_util.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/perplexity.h"

using namespace ztvm;
namespace fs = std::filesystem;

using test::CliRun;
using test::run_ztvm;

namespace {

const std::string kData = std::string(ZTVM_TESTDATA) + "/";

// A model stand-in that returns the same logits row at every position.
LogitsFn constant_logits(std::vector<float> row, std::vector<std::vector<int32_t>>* seen = nullptr) {
  return [row, seen](const std::vector<int32_t>& ids) {
    if (seen) seen->push_back(ids);
    std::vector<float> out;
    for (size_t i = 0; i < ids.size(); i++) out.insert(out.end(), row.begin(), row.end());
    return out;
  };
}

}  // namespace

// Equal logits make every token's probability 1/V, so the perplexity is V whatever the text is,
// and every nll is the same, so the error estimate is zero.
TEST(Perplexity, UniformLogitsGiveTheVocabularySize) {
  const size_t vocab = 37;
  std::vector<int32_t> tokens(300);
  for (size_t i = 0; i < tokens.size(); i++) tokens[i] = (int32_t)((i * 7) % vocab);
  PerplexityOptions o;
  o.ctx = 64;
  PerplexityResult r = compute_perplexity(tokens, vocab, o, constant_logits(std::vector<float>(vocab, 0.25f)));
  EXPECT_NEAR(r.ppl, (double)vocab, 1e-9);
  EXPECT_EQ(r.error, 0.0);
  EXPECT_NEAR(r.low, (double)vocab, 1e-9);
  EXPECT_NEAR(r.high, (double)vocab, 1e-9);
  // 300 / 64 = 4 windows, each scoring positions 32..62 (31 predictions).
  EXPECT_EQ(r.windows, 4u);
  EXPECT_EQ(r.count, 4u * 31u);
}

// Logits (0, ln 3) give p(0) = 1/4 and p(1) = 3/4: nll ln 4 and ln(4/3).
TEST(Perplexity, TwoTokenVocabularyByHand) {
  EXPECT_NEAR(token_nll(std::vector<float>{0.f, (float)std::log(3.0)}.data(), 2, 0), std::log(4.0), 1e-6);
  EXPECT_NEAR(token_nll(std::vector<float>{0.f, (float)std::log(3.0)}.data(), 2, 1), std::log(4.0 / 3.0), 1e-6);
  // Half the targets of each kind: ppl = exp((ln 4 + ln 4/3) / 2) = 4 / sqrt(3).
  PerplexityAccumulator acc;
  acc.add_nll(std::log(4.0));
  acc.add_nll(std::log(4.0 / 3.0));
  EXPECT_NEAR(acc.ppl(), 4.0 / std::sqrt(3.0), 1e-12);
  // llama.cpp's stderr of the mean: population variance ((a - b) / 2)^2 over n - 1 = 1, square
  // root: |a - b| / 2 = ln 3 / 2; the ppl error is ppl times that.
  PerplexityResult r = acc.result(1);
  EXPECT_NEAR(r.error, r.ppl * std::log(3.0) / 2, 1e-12);
  EXPECT_THROW(token_nll(std::vector<float>{0.f, 0.f}.data(), 2, 2), std::runtime_error);
}

// Each window begins with BOS in place of its first token and holds the next ctx tokens of the text.
TEST(Perplexity, WindowsStartWithBosAndTileTheText) {
  std::vector<int32_t> tokens(100);
  for (size_t i = 0; i < tokens.size(); i++) tokens[i] = (int32_t)(i % 10) + 2;
  std::vector<std::vector<int32_t>> seen;
  PerplexityOptions o;
  o.ctx = 16;
  o.bos = 1;
  o.max_windows = 3;
  PerplexityResult r = compute_perplexity(tokens, 12, o, constant_logits(std::vector<float>(12, 0.f), &seen));
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(r.windows, 3u);
  for (size_t w = 0; w < seen.size(); w++) {
    EXPECT_EQ(seen[w][0], 1);
    for (size_t i = 1; i < 16; i++) EXPECT_EQ(seen[w][i], tokens[w * 16 + i]);
  }
  // A stride below ctx/2 scores only the last `stride` positions, so windows overlap but no
  // prediction is counted twice.
  o.stride = 4;
  o.max_windows = 0;
  auto w = plan_perplexity_windows(100, o);
  EXPECT_EQ(w.size(), (100u - 16u) / 4u + 1u);
  EXPECT_EQ(w[1].start, 4u);
  EXPECT_EQ(w[1].first, 12u);
  EXPECT_THROW(plan_perplexity_windows(15, o), std::runtime_error);
}

// Expected value from llama.cpp (its CPU build, same model and text, f32 weights):
//   .cache/llamacpp/bin/llama-perplexity -m build/testdata/stories260K/stories260K-f32.gguf
//       -f build/testdata/corpora/kjv.txt -c 128 --chunks 20 -t 1
//   -> "Final estimate: PPL = 57.6936 +/- 5.29706"
TEST(PerplexityCli, Stories260KMatchesLlamaCpp) {
  CliRun r = run_ztvm("ppl -m " + kData + "stories260K/stories260K-f32.gguf -f " + kData +
                      "corpora/kjv.txt --ctx 128 --chunks 20");
  ASSERT_EQ(r.status, 0) << r.err;
  std::smatch m;
  std::regex line(R"(ppl ([0-9.]+) \+/- ([0-9.]+) \(95% interval ([0-9.]+)\.\.([0-9.]+)\), (\d+) tokens scored in (\d+) chunks)");
  ASSERT_TRUE(std::regex_search(r.out, m, line)) << r.out;
  const double ppl = std::stod(m[1]), err = std::stod(m[2]);
  std::printf("  ztvm ppl %.4f +/- %.4f, llama.cpp 57.6936 +/- 5.29706\n", ppl, err);
  EXPECT_NEAR(ppl, 57.6936, 57.6936 * 0.005);
  EXPECT_NEAR(err, 5.29706, 5.29706 * 0.02);
  EXPECT_LT(std::stod(m[3]), ppl);
  EXPECT_GT(std::stod(m[4]), ppl);
  EXPECT_EQ(std::stoul(m[5]), 20u * 63u);  // 128 - 1 - 64 predictions per window
  EXPECT_EQ(std::stoul(m[6]), 20u);
  EXPECT_NE(r.err.find("[20/20] ppl"), std::string::npos) << r.err;
}

// A text shorter than one window is one clear error line and exit status 1.
TEST(PerplexityCli, TooShortTextIsAnError) {
  fs::path tiny = fs::temp_directory_path() / ("ztvm_ppl_tiny_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(tiny) << "In the beginning";
  CliRun r = run_ztvm("ppl -m " + kData + "stories260K/stories260K-f32.gguf -f " + tiny.string() + " --ctx 128");
  fs::remove(tiny);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("need at least 128"), std::string::npos) << r.err;
}
