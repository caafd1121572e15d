// Embeddings (ztvm embed, /v1/embeddings): the final norm's states the GPU leaves after a pass,
// pooled, against the CPU reference forward pass pooled the same way; chunked passes (one of a single
// token), prefix reuse, and the pooling a model file names.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gpu_test_util.h"
#include "engine/embedding.h"
#include "engine/forward.h"
#include "engine/generator.h"
#include "model/synth.h"
#include "reference/model.h"

using namespace ztvm;
using test::device;

namespace {

const std::string kDir = std::string(ZTVM_TESTDATA) + "/stories260K/";

// BOS and 16 arbitrary ids of the 512-token vocabulary: with chunks of 8 the last pass has one token.
const std::vector<int32_t> kIds = {1, 403, 407, 261, 378, 429, 300, 275, 266, 45, 263, 289, 346, 45, 69, 270, 300};

// The CPU twin: every position's reference state, pooled by the same Pooler.
std::vector<float> cpu_embedding(const ModelFile& m, const std::vector<int32_t>& ids, Pooling p) {
  const uint32_t d = m.config.hidden_size;
  const std::vector<float> h = ref::forward_hidden(m, ids, true);
  Pooler pool(p, d, (uint32_t)ids.size());
  uint32_t first, count;
  pool.wanted(0, (uint32_t)ids.size(), first, count);
  pool.add(h.data() + (size_t)first * d, count);
  return pool.finish();
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); i++) m = std::max(m, (double)std::fabs(a[i] - b[i]));
  return m;
}

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += (double)x * x;
  return std::sqrt(s);
}

}  // namespace

class StoriesEmbedding : public ::testing::TestWithParam<const char*> {};

// Chunks of 8 and of 1 (every pass the decode path); inputs of 17 ids (passes of 8, 8 and 1), 16 (the
// last token is row 7 of its pass) and 1; each pooling: the twin's vector to NMSE 1e-8 (f32 weights:
// keys rounded to f16 on one side a bit apart from the other's give ~3e-9), of unit length. Reading
// row 0 of the last pass instead of its last row fails here.
TEST_P(StoriesEmbedding, GpuMatchesCpuReference) {
  auto model = open_model(kDir + GetParam());
  for (uint32_t chunk : {8u, 1u}) {
    Forward fwd(device(), *model, 64, chunk);
    Generator gen(fwd);
    for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last}) {
      for (size_t n : {kIds.size(), kIds.size() - 1, size_t(1)}) {
        const std::vector<int32_t> ids(kIds.begin(), kIds.begin() + (std::ptrdiff_t)n);
        const std::vector<float> gpu = gen.embedding(ids, p), cpu = cpu_embedding(*model, ids, p);
        ASSERT_EQ(gpu.size(), (size_t)model->config.hidden_size);
        EXPECT_NEAR(norm(gpu), 1.0, 1e-5);
        const double e = test::nmse(gpu, cpu);
        std::printf("  %s %s, %zu ids, chunk %u: NMSE %.3g\n", GetParam(), pooling_name(p), n, chunk, e);
        EXPECT_LT(e, 1e-8) << pooling_name(p) << ", " << n << " ids, chunk " << chunk;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, StoriesEmbedding,
                         ::testing::Values("stories260K-f32.gguf", "stories260K-Q8_0.gguf", "stories260K-Q4_0.gguf"),
                         [](const auto& info) {
                           std::string s = info.param;
                           return s.substr(12, s.find(".gguf") - 12);
                         });

// The poolings differ from each other on this input (so the test above tells them apart).
TEST(StoriesEmbedding, PoolingsGiveDifferentVectors) {
  auto model = open_model(kDir + "stories260K-f32.gguf");
  Forward fwd(device(), *model, 64, 8);
  Generator gen(fwd);
  const std::vector<float> mean = gen.embedding(kIds, Pooling::Mean), cls = gen.embedding(kIds, Pooling::Cls),
                           last = gen.embedding(kIds, Pooling::Last);
  EXPECT_GT(max_abs_diff(mean, cls), 0.01);
  EXPECT_GT(max_abs_diff(mean, last), 0.01);
  EXPECT_GT(max_abs_diff(cls, last), 0.01);
}

// Last-token pooling after a generation or another embedding that shares the prefix recomputes only
// the rest, and gives what a cold cache gives; generation after an embedding reuses its cache.
TEST(StoriesEmbedding, LastPoolingReusesTheCachedPrefix) {
  auto model = open_model(kDir + "stories260K-Q8_0.gguf");
  Forward fwd(device(), *model, 64, 8);
  Generator warm(fwd);
  std::vector<int32_t> prefix(kIds.begin(), kIds.begin() + 12);
  std::vector<int32_t> out;
  warm.generate(prefix, 4, [&](int32_t t) { out.push_back(t); return true; });
  const std::vector<float> reused = warm.embedding(kIds, Pooling::Last);
  EXPECT_EQ(warm.cached(), kIds);
  Forward fwd2(device(), *model, 64, 8);
  const std::vector<float> cold = Generator(fwd2).embedding(kIds, Pooling::Last);
  EXPECT_LT(max_abs_diff(reused, cold), 1e-6);
  // And generation on top of the embedding's cache gives the tokens a cold generation gives.
  std::vector<int32_t> a, b;
  warm.generate(kIds, 6, [&](int32_t t) { a.push_back(t); return true; });
  Forward fwd3(device(), *model, 64, 8);
  Generator(fwd3).generate(kIds, 6, [&](int32_t t) { b.push_back(t); return true; });
  EXPECT_EQ(a, b);
}

TEST(StoriesEmbedding, BadInputIsAClearError) {
  auto model = open_model(kDir + "stories260K-f32.gguf");
  Forward fwd(device(), *model, 16, 8);
  Generator gen(fwd);
  EXPECT_THROW(gen.embedding({}, Pooling::Mean), std::runtime_error);
  EXPECT_THROW(gen.embedding({1, 9999}, Pooling::Mean), std::runtime_error);
  std::vector<int32_t> long_ids(17, 5);
  try {
    gen.embedding(long_ids, Pooling::Mean);
    FAIL() << "17 tokens in a context of 16";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the context of 16"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gen.embedding({1, 5}, Pooling::Mean).size(), (size_t)model->config.hidden_size);  // still usable
}

// A Qwen3-shaped file (QK-norm, tied head) that names last-token pooling, as Qwen3-Embedding's GGUF
// does: the loader reads it, choose_pooling keeps it, and the GPU matches the twin with it.
TEST(SynthEmbedding, FileNamesItsPooling) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ztvm_embed_synth";
  std::filesystem::create_directories(dir);
  ModelConfig c = synth_shape("tiny");
  c.arch = Arch::Qwen3, c.arch_name = "qwen3", c.qk_norm = true, c.rope_style = RopeStyle::Neox;
  c.pooling = Pooling::Last;
  const std::string path = (dir / "qwen3-embed.gguf").string();
  synth_model(c, QuantMix::Q8_0, nullptr, path);
  auto model = open_model(path);
  EXPECT_EQ(model->config.pooling, Pooling::Last);
  EXPECT_EQ(choose_pooling(model->config), Pooling::Last);
  EXPECT_EQ(choose_pooling(model->config, Pooling::Mean), Pooling::Mean);
  Forward fwd(device(), *model, 64, 8);
  const std::vector<float> gpu = Generator(fwd).embedding(kIds, Pooling::Last);
  const double e = test::nmse(gpu, cpu_embedding(*model, kIds, Pooling::Last));
  std::printf("  qwen3 tiny Q8_0, last: NMSE %.3g\n", e);
  EXPECT_LT(e, 1e-3);  // random weights: int8 codes that round the other way (its logits: 1.2e-4 too)
  // A file that names none: mean.
  auto plain = open_model(kDir + "stories260K-f32.gguf");
  EXPECT_EQ(plain->config.pooling, Pooling::Unset);
  EXPECT_EQ(choose_pooling(plain->config), Pooling::Mean);
  std::filesystem::remove_all(dir);
}

TEST(Pooling, NamesParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(parse_pooling("mean"), Pooling::Mean);
  EXPECT_EQ(parse_pooling("cls"), Pooling::Cls);
  EXPECT_EQ(parse_pooling("last"), Pooling::Last);
  EXPECT_THROW(parse_pooling("max"), std::invalid_argument);
  std::vector<float> zero(4, 0.f);
  normalize_l2(zero);
  EXPECT_EQ(zero, std::vector<float>(4, 0.f));
}
