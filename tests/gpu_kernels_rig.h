// Shared by the GPU kernel tests: random data, weight matrices encoded in each GGUF type, uploads,
// step uniforms, and running a recorded graph.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <unistd.h>

#include "gpu_test_util.h"
#include "engine/forward.h"
#include "engine/generator.h"
#include "engine/graph.h"
#include "engine/sampling.h"
#include "engine/weights.h"
#include "model/model_error.h"
#include "model/synth.h"
#include "reference/model.h"
#include "reference/ops.h"

namespace ztvm::test {
using namespace ztvm;

inline std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// A weight matrix encoded in `type`, with a TensorView over the bytes.
struct EncodedMatrix {
  std::vector<uint8_t> bytes;
  TensorView view;
  EncodedMatrix(GgmlType type, uint32_t rows, uint32_t cols, uint32_t seed) {
    std::vector<float> w = random_vec((size_t)rows * cols, seed, 0.5f);
    uint64_t rb = row_bytes(type, cols);
    bytes.resize(rb * rows);
    for (uint32_t r = 0; r < rows; r++) quantize_row(type, &w[(size_t)r * cols], bytes.data() + r * rb, cols);
    view.name = "test";
    view.type = type;
    view.ne = {cols, rows};
    view.data = bytes.data();
    view.nbytes = bytes.size();
  }
  ref::WeightRef ref() const { return {view.type, bytes.data(), (uint32_t)view.rows(), (uint32_t)view.cols()}; }
};

inline gpu::Buffer upload(const std::string& label, const std::vector<float>& v) {
  gpu::Buffer b = device().buffer(label, v.size() * 4);
  device().write(b, v.data(), v.size() * 4);
  return b;
}

inline gpu::Buffer step_buffer(uint32_t pos0, uint32_t n, uint32_t out_index = 0, uint32_t split = 0) {
  StepParams p{pos0, n, out_index, split};
  gpu::Buffer b = device().buffer("test.step", sizeof p, gpu::kUniform);
  device().write(b, &p, sizeof p);
  return b;
}

inline void run(const Graph& g, uint32_t pos0, uint32_t n) {
  gpu::Recorder rec(device(), "test");
  g.encode(rec, pos0, n);
  rec.submit();
  device().wait_idle();
}

inline std::vector<float> read(const gpu::Buffer& b, size_t n) { return device().read_as<float>(b, n); }

// The whole forward pass of a prompt of n tokens (fixed pseudo-random ids) through fwd, against the
// CPU reference with its f16 KV cache, as the GPU's. A key may round to the neighbouring half
// (engine_model_test), hence 1e-8 rather than exact.
inline void expect_logits_match_cpu(Forward& fwd, const ModelFile& model, uint32_t n) {
  std::vector<int32_t> ids(n);
  for (uint32_t i = 0; i < ids.size(); i++) ids[i] = (int32_t)((i * 37 + 1) % model.config.vocab_size);
  std::vector<float> gpu = Generator(fwd).logits(ids);
  std::vector<float> cpu = ref::forward_logits(model, ids, true);
  ASSERT_EQ(gpu.size(), cpu.size());
  EXPECT_LT(nmse(gpu, cpu), 1e-8);
}

}  // namespace ztvm::test
