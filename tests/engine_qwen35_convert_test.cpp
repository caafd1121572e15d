// The Qwen3.5 files `ztvm convert` and `ztvm synth` write, run: a convert -> load round trip of
// both fixtures (qwen35, qwen35moe) gives the HF directory's logits, in the CPU reference and on the
// GPU (lavapipe in CI), F32 against the directory as it is, Q8_0 against it quantized on load; and synth's
// tiny Qwen3.5 shapes run on the GPU as the CPU reference's int8-x twin does. The files' layout
// itself: model_qwen35_convert_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "engine/forward.h"
#include "engine/generator.h"
#include "gpu_test_util.h"
#include "model/convert.h"
#include "model/model_file.h"
#include "model/synth.h"
#include "reference/model.h"

using namespace ztvm;
using test::nmse;

namespace {

const std::string kFixtures = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/";
const std::string kDense = kFixtures + "qwen3.5-f16", kMoe = kFixtures + "qwen3.5-moe-f16";

namespace fs = std::filesystem;

// A directory of its own for a test's files, removed after (gpu_test_util.h and model_test_util.h
// cannot share a file: both define nmse).
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ztvm_qwen35_convert_" + std::to_string(std::random_device{}()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream f(path);
  return {std::istream_iterator<int32_t>(f), std::istream_iterator<int32_t>()};
}

std::vector<float> gpu_logits(const ModelFile& m, const std::vector<int32_t>& ids, uint32_t chunk = 16) {
  Forward fwd(test::device(), m, 64, chunk);
  return Generator(fwd).logits(ids);
}

// The directory as the engine reads it, quantized on load as the file is (nothing, or Q8_0): the same
// values the file holds, whose logits the file's must give.
std::unique_ptr<ModelFile> directory(const std::string& dir, GgmlType type) {
  auto m = open_model(dir);
  if (type != GgmlType::F32) quantize_weights(*m, type);
  return m;
}

// F32 holds the F16 checkpoint's values exactly (1 + w and -exp(A_log) are the loader's own F32
// arithmetic in both), Q8_0 the same blocks quantize_weights makes: only the order of sums may
// differ. Against the unquantized directory, Q8_0 measured 1.9e-3 (qwen35) and 9.2e-2 (qwen35moe:
// the random tiny router flips experts), the same as the directory quantized on load.
constexpr GgmlType kTypes[] = {GgmlType::F32, GgmlType::Q8_0};

}  // namespace

TEST(Qwen35ConvertForward, ReferenceRoundTripGivesTheDirectorysLogits) {
  for (const std::string& dir : {kDense, kMoe}) {
    auto hf = open_model(dir);
    const std::vector<int32_t> ids = read_ids(dir + "/ids.txt");
    for (GgmlType type : kTypes) {
      SCOPED_TRACE(hf->config.arch_name + " " + type_name(type));
      const std::vector<float> want = ref::forward_logits(*directory(dir, type), ids);
      TempDir tmp;
      convert_model(*hf, tmp.file("m.gguf"), type, nullptr);
      auto m = open_model(tmp.file("m.gguf"));
      ASSERT_TRUE(m->config.linear_v_heads_tiled);
      const std::vector<float> got = ref::forward_logits(*m, ids);
      ASSERT_EQ(got.size(), want.size());
      const double e = nmse(got, want);
      std::printf("  %s %s GGUF vs HF directory (CPU reference): logits NMSE %.3g\n", m->config.arch_name.c_str(),
                  type_name(type), e);
      EXPECT_LT(e, 1e-12);
    }
  }
}

// The same round trip on the GPU, whole prompt and one token a pass (the DeltaNet state carried).
TEST(Qwen35ConvertForward, GpuRoundTripGivesTheDirectorysLogits) {
  for (const std::string& dir : {kDense, kMoe}) {
    auto hf = open_model(dir);
    const std::vector<int32_t> ids = read_ids(dir + "/ids.txt");
    for (GgmlType type : kTypes) {
      SCOPED_TRACE(hf->config.arch_name + " " + type_name(type));
      auto want_model = directory(dir, type);
      TempDir tmp;
      convert_model(*hf, tmp.file("m.gguf"), type, nullptr);
      auto m = open_model(tmp.file("m.gguf"));
      for (uint32_t chunk : {16u, 1u}) {  // one token a pass takes other kernels: compared alike
        const std::vector<float> want = gpu_logits(*want_model, ids, chunk), got = gpu_logits(*m, ids, chunk);
        ASSERT_EQ(got.size(), want.size());
        const double e = nmse(got, want);
        std::printf("  %s %s GGUF vs HF directory (GPU, passes of %2u): logits NMSE %.3g\n", m->config.arch_name.c_str(),
                    type_name(type), chunk, e);
        EXPECT_LT(e, 1e-7) << "chunk " << chunk;
      }
    }
  }
}

// synth's tiny Qwen3.5 shapes (random weights, value heads tiled as llama.cpp stores them): finite
// logits on the GPU that match the CPU reference's int8-x twin, which reads the same file.
TEST(Qwen35ConvertForward, SynthTinyShapesRunOnTheGpu) {
  const std::vector<int32_t> ids = {1, 7, 42, 99, 300, 511, 5, 64, 3, 200};
  for (const char* shape : {"tiny-qwen35", "tiny-qwen35moe"})
    for (QuantMix mix : {QuantMix::Q4_K_M, QuantMix::Q8_0}) {
      SCOPED_TRACE(std::string(shape) + " " + quant_mix_name(mix));
      TempDir tmp;
      synth_model(synth_shape(shape), mix, nullptr, tmp.file("m.gguf"));
      auto m = open_model(tmp.file("m.gguf"));
      ASSERT_TRUE(m->config.has_recurrent_state());
      const std::vector<float> cpu = ref::forward_logits(*m, ids, true), gpu = gpu_logits(*m, ids);
      ASSERT_EQ(gpu.size(), ids.size() * m->config.vocab_size);
      for (float v : gpu) ASSERT_TRUE(std::isfinite(v));
      const double e = nmse(gpu, cpu);
      std::printf("  %s %s synth: GPU vs int8-x CPU twin NMSE %.3g\n", shape, quant_mix_name(mix), e);
      EXPECT_LT(e, 1e-3);
    }
}
