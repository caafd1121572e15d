// CPU quant codecs against outside references: llama.cpp's ggml (tests/model_data/quant_reference.gguf,
// see gen_quant_reference.cpp), llama.cpp's gguf-py (tests/fixtures/quant_ref, see
// tools/make_quant_reference.py), llama-quantize's stories260K files, and the compiler's _Float16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "model/gguf.h"
#include "model/model_error.h"
#include "model/quant.h"

using namespace ztvm;

namespace {

const std::string kStories = ZTVM_TESTDATA "/stories260K/";
const std::string kReference = ZTVM_SOURCE_DIR "/tests/model_data/quant_reference.gguf";
const std::string kGgufPyRef = ZTVM_SOURCE_DIR "/tests/fixtures/quant_ref/";

// Every block type with a quantizer, and the ones added after Q8_0/Q4_0/Q4_K/Q6_K.
const GgmlType kBlockTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,  GgmlType::Q5_1,
                                GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,  GgmlType::Q6_K,
                                GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(n));
}

// Gaussian rows with an outlier every 97 elements: the round-trip and dump tests' input.
std::vector<float> test_rows(uint64_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> gauss(0.f, 1.f);
  std::vector<float> x(n);
  for (uint64_t i = 0; i < x.size(); ++i) x[i] = gauss(rng) * 0.02f * (i % 97 == 0 ? 10.f : 1.f);
  return x;
}

std::vector<float> dequant(const TensorView& t) {
  std::vector<float> out(t.elements());
  for (uint64_t r = 0; r < t.rows(); ++r)
    dequantize_row(t.type, t.data + r * row_bytes(t.type, t.cols()), out.data() + r * t.cols(), t.cols());
  return out;
}

std::vector<uint8_t> quant(GgmlType type, const std::vector<float>& x, uint64_t cols) {
  std::vector<uint8_t> out(x.size() / cols * row_bytes(type, cols));
  for (uint64_t r = 0; r < x.size() / cols; ++r)
    quantize_row(type, x.data() + r * cols, out.data() + r * row_bytes(type, cols), cols);
  return out;
}

// Normalised mean squared error: sum (a-b)^2 / sum b^2.
double nmse(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += double(a[i] - ref[i]) * (a[i] - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return den > 0 ? num / den : num;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST(Quant, TypeTable) {
  EXPECT_EQ(block_elems(GgmlType::Q4_K), 256u);
  EXPECT_EQ(block_bytes(GgmlType::Q4_K), 144u);
  EXPECT_EQ(block_bytes(GgmlType::Q6_K), 210u);
  EXPECT_EQ(row_bytes(GgmlType::Q8_0, 64), 68u);
  EXPECT_EQ(row_bytes(GgmlType::BF16, 3), 6u);
  EXPECT_THROW(row_bytes(GgmlType::Q4_0, 33), ModelError);
  EXPECT_STREQ(type_name(GgmlType::Q6_K), "Q6_K");
  GgmlType t;
  ASSERT_TRUE(type_from_name("q4_k", &t));
  EXPECT_EQ(t, GgmlType::Q4_K);
  EXPECT_FALSE(type_from_name("Q4_2", &t));
  EXPECT_FALSE(type_known(4));  // Q4_2 was removed from ggml
  EXPECT_TRUE(type_supported(GgmlType::Q6_K));
  for (GgmlType t : kBlockTypes) EXPECT_TRUE(type_supported(t)) << type_name(t);
  EXPECT_FALSE(type_supported(GgmlType::IQ2_XXS));
  EXPECT_FALSE(type_supported(GgmlType::Q8_K));
  EXPECT_THROW(dequantize_row(GgmlType::IQ2_XXS, nullptr, nullptr, 0), ModelError);
}

// Known IEEE half / bfloat16 bit patterns, including the round-to-nearest-even ties.
TEST(Quant, HalfAndBfloatKnownBits) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(bits(f16_to_f32(0x8000)), 0x80000000u);      // -0
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even (down)
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(f32_to_f16(65519.f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.f), 0x7c00);                           // rounds past the max: inf
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);             // tie between 0 and 2^-24 -> 0
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);             // tie 1.5 ulp -> 2
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(NAN) & 0x7c00, 0x7c00);
  EXPECT_NE(f32_to_f16(NAN) & 0x03ff, 0);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  float tie_down, tie_up;
  uint32_t u = 0x3f808000u, v = 0x3f818000u;
  std::memcpy(&tie_down, &u, 4);
  std::memcpy(&tie_up, &v, 4);
  EXPECT_EQ(f32_to_bf16(tie_down), 0x3f80);
  EXPECT_EQ(f32_to_bf16(tie_up), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

// Every half value survives f16 -> f32 -> f16; the decode agrees with the compiler's _Float16.
TEST(Quant, HalfExhaustive) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
#ifdef __FLT16_MAX__
    _Float16 ref;
    const uint16_t hh = uint16_t(h);
    std::memcpy(&ref, &hh, 2);
    ASSERT_EQ(bits(f), bits(float(ref))) << std::hex << h;
#endif
  }
#ifdef __FLT16_MAX__
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    const _Float16 ref = _Float16(f);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(f32_to_f16(f), want) << f;
  }
#endif
}

// ggml's f16 and bf16 rounding of awkward floats (ties, near-overflow, subnormals).
TEST(Quant, HalfAndBfloatMatchGgml) {
  auto ref = GgufFile::open(kReference);
  const TensorView& src = *ref->find("conv.src.f32");
  const TensorView& f16 = *ref->find("conv.f16");
  const TensorView& bf16 = *ref->find("conv.bf16");
  const float* x = reinterpret_cast<const float*>(src.data);
  for (uint64_t i = 0; i < src.elements(); ++i) {
    uint16_t want_h, want_b;
    std::memcpy(&want_h, f16.data + 2 * i, 2);
    std::memcpy(&want_b, bf16.data + 2 * i, 2);
    ASSERT_EQ(f32_to_f16(x[i]), want_h) << "f16 of " << x[i] << " (bits " << std::hex << bits(x[i]) << ")";
    ASSERT_EQ(f32_to_bf16(x[i]), want_b) << "bf16 of " << x[i] << " (bits " << std::hex << bits(x[i]) << ")";
  }
}

// Our decoders reproduce ggml's bit for bit: on blocks ggml quantized and on random-byte blocks
// (every scale and nibble pattern), for each supported block type.
TEST(Quant, DequantizeMatchesGgmlBitExact) {
  auto ref = GgufFile::open(kReference);
  for (const char* name : {"q8_0", "q4_0", "q4_K", "q6_K"}) {
    for (const char* kind : {".ggml", ".rand"}) {
      const std::string base = std::string(name) + kind;
      const TensorView* q = ref->find(base);
      const TensorView* want = ref->find(base + ".f32");
      ASSERT_TRUE(q && want) << base;
      const std::vector<float> got = dequant(*q);
      const float* w = reinterpret_cast<const float*>(want->data);
      for (uint64_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(bits(got[i]), bits(w[i])) << base << " element " << i << ": " << got[i] << " vs " << w[i];
    }
  }
}

// Random valid blocks of every block type (every code, bit position, scale sign; zero, subnormal
// and large f16 scales; extreme E8M0 bytes), dequantized by llama.cpp's gguf-py: ours must give
// the same floats bit for bit. Exact is right: each value is one or two f32 products of exactly
// representable factors, at most followed by one addition, in the same order as ggml and gguf-py.
TEST(Quant, DequantizeMatchesLlamaCppGgufPy) {
  for (GgmlType t : kBlockTypes) {
    const std::string name = type_name(t);
    const std::vector<uint8_t> blocks = read_file(kGgufPyRef + name + ".blocks");
    const std::vector<uint8_t> want_bytes = read_file(kGgufPyRef + name + ".f32");
    ASSERT_FALSE(blocks.empty()) << kGgufPyRef + name + ".blocks";
    ASSERT_EQ(blocks.size() % block_bytes(t), 0u) << name;
    const uint64_t n = blocks.size() / block_bytes(t) * block_elems(t);
    ASSERT_EQ(want_bytes.size(), n * 4) << name;
    std::vector<float> got(n);
    dequantize_row(t, blocks.data(), got.data(), n);
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t want;
      std::memcpy(&want, want_bytes.data() + 4 * i, 4);
      float w;
      std::memcpy(&w, &want, 4);
      ASSERT_EQ(bits(got[i]), want) << name << " element " << i << ": " << got[i] << " vs " << w;
    }
  }
}

// ZTVM_QUANT_DUMP=DIR writes source.f32 (test_rows), TYPE.ours.blocks (our quantize_row of them)
// and TYPE.ours.f32 (our dequantize_row of those bytes) for tools/make_quant_reference.py
// --check-ours DIR, which checks that llama.cpp's gguf-py decodes our bytes to exactly our floats
// (and, where gguf-py has a quantizer, compares its bytes with ours). A tool, not a check, so it is
// disabled: ZTVM_QUANT_DUMP=DIR model_quant_test --gtest_also_run_disabled_tests
// --gtest_filter=Quant.DISABLED_DumpOurBlocksForGgufPy.
TEST(Quant, DISABLED_DumpOurBlocksForGgufPy) {
  const char* dir = std::getenv("ZTVM_QUANT_DUMP");
  ASSERT_TRUE(dir && *dir) << "set ZTVM_QUANT_DUMP=DIR";
  const uint64_t cols = 1024, rows = 16;
  const std::vector<float> x = test_rows(cols * rows);
  write_file(std::string(dir) + "/source.f32", x.data(), x.size() * 4);
  for (GgmlType t : kBlockTypes) {
    const std::vector<uint8_t> q = quant(t, x, cols);
    std::vector<float> y(x.size());
    dequantize_row(t, q.data(), y.data(), x.size());
    write_file(std::string(dir) + "/" + type_name(t) + ".ours.blocks", q.data(), q.size());
    write_file(std::string(dir) + "/" + type_name(t) + ".ours.f32", y.data(), y.size() * 4);
  }
}

// ggml's reference quantizers for Q8_0 and Q4_0 are deterministic: ours must give the same bytes.
TEST(Quant, Q8_0AndQ4_0QuantizeMatchGgml) {
  auto ref = GgufFile::open(kReference);
  const TensorView& src = *ref->find("src.f32");
  const std::vector<float> x = dequant(src);
  for (const char* name : {"q8_0.ggml", "q4_0.ggml"}) {
    const TensorView& want = *ref->find(name);
    const std::vector<uint8_t> got = quant(want.type, x, src.cols());
    ASSERT_EQ(got.size(), want.nbytes);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data, want.nbytes)) << name;
  }
}

// llama-quantize made stories260K-Q8_0/Q4_0 from the f32 file: requantizing the f32 tensors must
// reproduce its bytes (Q8_0, Q4_0 and the F16 fallback it used for 172-wide rows).
TEST(Quant, StoriesRequantizeMatchesLlamaQuantize) {
  auto f32 = GgufFile::open(kStories + "stories260K-f32.gguf");
  for (const char* file : {"stories260K-Q8_0.gguf", "stories260K-Q4_0.gguf"}) {
    auto q = GgufFile::open(kStories + file);
    for (const TensorView& t : q->tensors()) {
      const std::vector<float> x = dequant(*f32->find(t.name));
      const std::vector<uint8_t> got = quant(t.type, x, t.cols());
      EXPECT_EQ(0, std::memcmp(got.data(), t.data, t.nbytes)) << file << " " << t.name << " " << type_name(t.type);
    }
  }
}

// Dequantized llama-quantize tensors against the f32 originals: the error a correct decoder shows.
TEST(Quant, StoriesDequantizedVsF32) {
  auto f32 = GgufFile::open(kStories + "stories260K-f32.gguf");
  for (const char* file : {"stories260K-Q8_0.gguf", "stories260K-Q4_0.gguf"}) {
    auto q = GgufFile::open(kStories + file);
    double worst = 0;
    for (const TensorView& t : q->tensors()) {
      const double e = nmse(dequant(t), dequant(*f32->find(t.name)));
      const double bound = t.type == GgmlType::Q4_0 ? 1e-2 : t.type == GgmlType::Q8_0 ? 1e-4 : 1e-6;
      EXPECT_LT(e, bound) << file << " " << t.name << " " << type_name(t.type);
      if (t.type == q->tensors()[3].type) worst = std::max(worst, e);
    }
    std::printf("  %s: worst NMSE of %s tensors vs f32 = %.3g\n", file, type_name(q->tensors()[3].type), worst);
  }
}

// quantize -> dequantize on gaussian rows (with outliers) for every writable type. The bounds are
// the measured NMSE with ~20-30% headroom.
TEST(Quant, RoundTripNmse) {
  const uint64_t cols = 1024, rows = 64;
  const std::vector<float> x = test_rows(cols * rows);
  struct Case {
    GgmlType type;
    double bound;
  } cases[] = {{GgmlType::F32, 0},        {GgmlType::F16, 1e-6},    {GgmlType::BF16, 2e-5}, {GgmlType::Q8_0, 2e-4},
               {GgmlType::Q6_K, 1.5e-3},  {GgmlType::Q4_K, 1e-2},   {GgmlType::Q4_0, 3e-2}, {GgmlType::Q4_1, 1.25e-2},
               {GgmlType::Q5_0, 7e-3},    {GgmlType::Q5_1, 3e-3},   {GgmlType::Q2_K, 8.5e-2}, {GgmlType::Q3_K, 4.2e-2},
               {GgmlType::Q5_K, 2.5e-3},  {GgmlType::IQ4_NL, 1.6e-2}, {GgmlType::IQ4_XS, 1.6e-2}, {GgmlType::MXFP4, 3e-2}};
  for (const Case& c : cases) {
    const std::vector<uint8_t> q = quant(c.type, x, cols);
    std::vector<float> y(x.size());
    for (uint64_t r = 0; r < rows; ++r) dequantize_row(c.type, q.data() + r * row_bytes(c.type, cols), y.data() + r * cols, cols);
    const double e = nmse(y, x);
    std::printf("  round trip %-5s NMSE %.3g (bound %.3g)\n", type_name(c.type), e, c.bound);
    EXPECT_LE(e, c.bound) << type_name(c.type);
  }
}

// Our K-quantizers against ggml's on the same rows: within 15% of its error, and exact
// on degenerate rows (zeros; a constant row within one quantization step).
TEST(Quant, KQuantsVersusGgml) {
  auto ref = GgufFile::open(kReference);
  const TensorView& src = *ref->find("src.f32");
  const std::vector<float> x = dequant(src);
  for (const char* name : {"q4_K", "q6_K"}) {
    const TensorView& theirs = *ref->find(std::string(name) + ".ggml");
    const std::vector<uint8_t> q = quant(theirs.type, x, src.cols());
    std::vector<float> ours(x.size());
    for (uint64_t r = 0; r < src.rows(); ++r)
      dequantize_row(theirs.type, q.data() + r * theirs.nbytes / src.rows(), ours.data() + r * src.cols(), src.cols());
    const std::vector<float> ggml = dequant(theirs);
    for (uint64_t r = 0; r < src.rows(); ++r) {
      std::vector<float> xr(x.begin() + r * 256, x.begin() + (r + 1) * 256);
      std::vector<float> o(ours.begin() + r * 256, ours.begin() + (r + 1) * 256);
      std::vector<float> g(ggml.begin() + r * 256, ggml.begin() + (r + 1) * 256);
      const double eo = nmse(o, xr), eg = nmse(g, xr);
      std::printf("  %s row %llu: NMSE ours %.3g, ggml %.3g\n", name, (unsigned long long)r, eo, eg);
      if (r == 6) EXPECT_EQ(eo, 0.0) << name << " zero row";
      else EXPECT_LE(eo, std::max(1.15 * eg, 1e-6)) << name << " row " << r;
    }
  }
}

// Degenerate rows: all zeros decode to zeros for every type; a constant row and a row holding one
// spike come back close (no NaN/inf from zero ranges or zero scales).
TEST(Quant, DegenerateRowsRoundTrip) {
  const uint64_t n = 512;
  for (GgmlType t : kBlockTypes) {
    SCOPED_TRACE(type_name(t));
    const std::vector<float> zeros(n, 0.f);
    std::vector<float> y(n, 1.f);
    std::vector<uint8_t> q = quant(t, zeros, n);
    dequantize_row(t, q.data(), y.data(), n);
    for (float v : y) ASSERT_EQ(v, 0.f);
    for (const float c : {0.25f, -0.03f}) {
      std::vector<float> x(n, c);
      x[7] = 3 * c;  // not quite constant
      q = quant(t, x, n);
      dequantize_row(t, q.data(), y.data(), n);
      for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(std::isfinite(y[i])) << i;
      EXPECT_LT(nmse(y, x), 0.05) << c;
    }
  }
}
