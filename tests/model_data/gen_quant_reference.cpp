// Generates tests/model_data/quant_reference.gguf with llama.cpp's ggml as the reference: blocks
// quantized by ggml, blocks of random bytes, and ggml's own decoding of each (plus ggml's f16 and
// bf16 rounding of awkward floats). model_quant_test checks our CPU codecs against it bit for bit.
// Not built by CMake; run by hand against a llama.cpp build (see gen_quant_reference.sh).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml.h"
#include "gguf.h"

static ggml_context* ctx;
static gguf_context* out;

static void add(const std::string& name, ggml_type type, int64_t ne0, int64_t ne1, const void* data) {
  ggml_tensor* t = ggml_new_tensor_2d(ctx, type, ne0, ne1);
  ggml_set_name(t, name.c_str());
  std::memcpy(t->data, data, ggml_nbytes(t));
  gguf_add_tensor(out, t);
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "quant_reference.gguf";
  ggml_init_params params = {64 << 20, nullptr, false};
  ctx = ggml_init(params);
  out = gguf_init_empty();
  gguf_set_val_str(out, "general.description", "ggml reference blocks for ztvm's quant tests");
  std::mt19937 rng(1234);
  std::normal_distribution<float> gauss(0.f, 1.f);
  std::uniform_int_distribution<int> byte(0, 255);

  // Source rows of 256: plain gaussians at several scales, one with outliers, a constant and a zero row.
  const int64_t cols = 256, rows = 8;
  std::vector<float> src(cols * rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) src[r * cols + i] = gauss(rng) * (r < 4 ? std::pow(10.f, float(r) - 2) : 0.02f);
  for (int64_t i = 0; i < cols; i += 37) src[4 * cols + i] *= 40.f;                  // outliers
  for (int64_t i = 0; i < cols; ++i) src[5 * cols + i] = 0.5f;                        // constant
  for (int64_t i = 0; i < cols; ++i) src[6 * cols + i] = 0.f;                         // zeros
  for (int64_t i = 0; i < cols; ++i) src[7 * cols + i] = std::fabs(src[7 * cols + i]); // all positive
  add("src.f32", GGML_TYPE_F32, cols, rows, src.data());

  const ggml_type types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K};
  for (ggml_type type : types) {
    const std::string name = ggml_type_name(type);
    const size_t row_size = ggml_row_size(type, cols);
    std::vector<uint8_t> q(row_size * rows);
    std::vector<float> deq(cols * rows);
    ggml_quantize_chunk(type, src.data(), q.data(), 0, rows, cols, nullptr);
    ggml_get_type_traits(type)->to_float(q.data(), deq.data(), cols * rows);
    add(name + ".ggml", type, cols, rows, q.data());
    add(name + ".ggml.f32", GGML_TYPE_F32, cols, rows, deq.data());

    // Random bytes everywhere except the f16 super-scales, which get finite values of either sign.
    for (uint8_t& b : q) b = uint8_t(byte(rng));
    const size_t bsize = ggml_type_size(type);
    for (size_t b = 0; b < q.size() / bsize; ++b) {
      uint8_t* block = q.data() + b * bsize;
      auto set_f16 = [&](size_t off) {
        ggml_fp16_t h = ggml_fp32_to_fp16(gauss(rng) * 0.01f);
        std::memcpy(block + off, &h, 2);
      };
      if (type == GGML_TYPE_Q4_K) { set_f16(0); set_f16(2); }
      else if (type == GGML_TYPE_Q6_K) set_f16(208);
      else set_f16(0);
    }
    ggml_get_type_traits(type)->to_float(q.data(), deq.data(), cols * rows);
    add(name + ".rand", type, cols, rows, q.data());
    add(name + ".rand.f32", GGML_TYPE_F32, cols, rows, deq.data());
  }

  // f16 / bf16 rounding of floats spread over the whole range, including exact ties.
  std::vector<float> conv;
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 4096; ++i) {
    uint32_t u = bits(rng);
    if (i % 4 == 1) u = (u & 0x8000ffffu) | ((100u + u % 60u) << 23);  // exponents near the f16 range
    if (i % 4 == 2) u = (u & ~0x1fffu) | 0x1000u;                       // f16 tie (13 dropped bits = 1000..0)
    if (i % 4 == 3) u = (u & ~0xffffu) | 0x8000u;                       // bf16 tie
    float f;
    std::memcpy(&f, &u, 4);
    if (f != f) f = 1.f;  // NaN payload handling differs legitimately; keep the set NaN-free
    conv.push_back(f);
  }
  std::vector<ggml_fp16_t> h(conv.size());
  std::vector<ggml_bf16_t> bf(conv.size());
  ggml_fp32_to_fp16_row(conv.data(), h.data(), int64_t(conv.size()));
  ggml_fp32_to_bf16_row_ref(conv.data(), bf.data(), int64_t(conv.size()));
  add("conv.src.f32", GGML_TYPE_F32, 256, int64_t(conv.size()) / 256, conv.data());
  add("conv.f16", GGML_TYPE_F16, 256, int64_t(conv.size()) / 256, h.data());
  add("conv.bf16", GGML_TYPE_BF16, 256, int64_t(conv.size()) / 256, bf.data());

  if (!gguf_write_to_file(out, path, false)) {
    std::fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  std::printf("wrote %s\n", path);
  gguf_free(out);
  ggml_free(ctx);
  return 0;
}
