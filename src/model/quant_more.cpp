// More 32-value block formats (Q4_1, Q5_0, Q5_1), the non-linear 4-bit IQ4_NL / IQ4_XS, and MXFP4.
// Block layouts (little-endian, packed) as ggml defines them; in every 32-value block byte j of
// the 16 nibble bytes holds element j in its low nibble and element j + 16 in its high nibble.
//
//   Q4_1: { f16 d; f16 m; uint8 qs[16]; }           x = d * q + m, q in 0..15
//   Q5_0: { f16 d; uint32 qh; uint8 qs[16]; }       x = d * (q - 16), q in 0..31
//   Q5_1: { f16 d; f16 m; uint32 qh; uint8 qs[16]; } x = d * q + m, q in 0..31
//     In Q5_0 / Q5_1 the nibble is q's low 4 bits and bit i of qh (a little-endian 32-bit word)
//     is the fifth bit of element i.
//   IQ4_NL: { f16 d; uint8 qs[16]; }                x = d * T[q], T the 16-entry table below
//   IQ4_XS, 136 bytes per 256: { f16 d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]; }
//     8 sub-blocks of 32 (16 qs bytes each, nibbles as above), x = d * (ls - 32) * T[q], where the
//     6-bit ls of sub-block i is nibble i of scales_l (low nibble first) plus, as bits 4..5,
//     bits 2i..2i+1 of scales_h.
//   MXFP4: { uint8 e; uint8 qs[16]; }               x = E2M1x2[q] * 2^(e - 128)
//     E2M1x2 holds twice the OCP e2m1 values (the 4-bit float: sign, 2 exponent bits, 1 mantissa
//     bit), so the E8M0 scale 2^(e - 127) is applied halved; e is used as is for all 256 values
//     (e = 255 is not treated as NaN, e = 0 and 1 give f32 subnormals).
//
// Q4_1, Q5_0 and Q5_1 quantize with ggml's reference rounding (min/max or signed-max scale,
// truncation after adding one half), so they give llama-quantize's bytes. IQ4_NL, IQ4_XS and MXFP4
// use a short fixed search of our own instead of ggml's iterative / importance-weighted one (see
// each quantizer); their blocks are valid and decode by the rules above.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "model/quant.h"
#include "model/quant_impl.h"

namespace ztvm::quant_detail {

namespace {

constexpr uint32_t kBlock = 32, kHalf = 16, QK_K = 256;
constexpr uint32_t kQ4_1Bytes = 20, kQ5_0Bytes = 22, kQ5_1Bytes = 24, kIq4NlBytes = 18, kIq4XsBytes = 136,
                   kMxfp4Bytes = 17;

// The IQ4 code book: 16 levels spaced more finely near zero (as values roughly gaussian are).
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// e2m1 doubled: codes 0..7 are +{0, 0.5, 1, 1.5, 2, 3, 4, 6} x 2, codes 8..15 the same negated.
constexpr int8_t kE2m1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

uint32_t load_u32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}

// The 4-bit code of element i (0..31) in a block's 16 nibble bytes.
inline int nibble(const uint8_t* qs, uint32_t i) { return i < kHalf ? qs[i] & 0x0F : qs[i - kHalf] >> 4; }
// Packs 32 codes (each < 16 after masking) into 16 bytes.
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (uint32_t j = 0; j < kHalf; ++j) qs[j] = uint8_t((q[j] & 0x0F) | ((q[j + kHalf] & 0x0F) << 4));
}
// The 5th bits of 32 codes as the qh word.
uint32_t fifth_bits(const uint8_t* q) {
  uint32_t qh = 0;
  for (uint32_t j = 0; j < kBlock; ++j) qh |= uint32_t((q[j] >> 4) & 1) << j;
  return qh;
}

// 2^(e - 128) as an f32, bit-exact for every byte: a normal float with biased exponent e - 1, or
// for e < 2 the subnormals 2^-128 / 2^-127 (mantissa bit 21 or 22).
float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (uint32_t(e) - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// ggml's reference rounding: truncate v (already offset by +0.5) toward zero, capped at hi; NaN or
// negative -> 0 (where ggml's cast would be undefined).
inline int trunc_code(float v, int hi) {
  if (!(v > 0.f)) return 0;
  return v >= float(hi) ? hi : int(v);
}

// Index of the level of kIq4Levels nearest to t (ties to the lower level).
int nearest_iq4(float t) {
  int i = 0;
  while (i < 15 && t > 0.5f * (kIq4Levels[i] + kIq4Levels[i + 1])) ++i;
  return i;
}

// Squared error of n values encoded as scale * T[nearest code]; codes written to q when given.
float iq4_error(const float* x, int n, float scale, uint8_t* q) {
  const float inv = scale != 0.f ? 1.f / scale : 0.f;
  float err = 0.f;
  for (int i = 0; i < n; ++i) {
    const int c = nearest_iq4(x[i] * inv);
    if (q) q[i] = uint8_t(c);
    const float r = scale * kIq4Levels[c] - x[i];
    err += r * r;
  }
  return err;
}

// A float scale for n values on the IQ4 code book: two starts (the value of largest magnitude on
// the table's -127 end or on its +113 end), each refit once by least squares for its codes
// (rounded to f16 when `as_f16`), keeping the one with the smaller error. ggml instead scans a
// range of scales and weights the error by an importance matrix.
float iq4_fit(const float* x, int n, bool as_f16) {
  float amax = 0.f, max = 0.f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  if (amax == 0.f) return 0.f;
  float best = 0.f, best_err = INFINITY;
  uint8_t q[kBlock];
  for (float start : {max / kIq4Levels[0], max / kIq4Levels[15]}) {
    if (as_f16) start = through_f16(start);
    iq4_error(x, n, start, q);
    double sxv = 0, svv = 0;
    for (int i = 0; i < n; ++i) sxv += double(x[i]) * kIq4Levels[q[i]], svv += double(kIq4Levels[q[i]]) * kIq4Levels[q[i]];
    for (float s : {start, float(sxv / svv)}) {
      if (as_f16) s = through_f16(s);
      const float err = iq4_error(x, n, s, nullptr);
      if (err < best_err) best_err = err, best = s;
    }
  }
  return best;
}

// Index in kE2m1x2 of the value nearest to t (ties to the smaller magnitude; 0 -> code 0).
int nearest_e2m1(float t) {
  const float a = std::fabs(t);
  int m = 0;
  while (m < 7 && a > 0.5f * (kE2m1x2[m] + kE2m1x2[m + 1])) ++m;
  return (t < 0.f && m != 0) ? m + 8 : m;
}

}  // namespace

void dequantize_row_q4_1(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kQ4_1Bytes, dst += kBlock) {
    const float d = f16_to_f32(load_u16(src)), m = f16_to_f32(load_u16(src + 2));
    for (uint32_t i = 0; i < kBlock; ++i) dst[i] = d * nibble(src + 4, i) + m;
  }
}

void dequantize_row_q5_0(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kQ5_0Bytes, dst += kBlock) {
    const float d = f16_to_f32(load_u16(src));
    const uint32_t qh = load_u32(src + 2);
    for (uint32_t i = 0; i < kBlock; ++i) dst[i] = d * ((nibble(src + 6, i) | int((qh >> i) & 1) << 4) - 16);
  }
}

void dequantize_row_q5_1(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kQ5_1Bytes, dst += kBlock) {
    const float d = f16_to_f32(load_u16(src)), m = f16_to_f32(load_u16(src + 2));
    const uint32_t qh = load_u32(src + 4);
    for (uint32_t i = 0; i < kBlock; ++i) dst[i] = d * (nibble(src + 8, i) | int((qh >> i) & 1) << 4) + m;
  }
}

void dequantize_row_iq4_nl(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kIq4NlBytes, dst += kBlock) {
    const float d = f16_to_f32(load_u16(src));
    for (uint32_t i = 0; i < kBlock; ++i) dst[i] = d * kIq4Levels[nibble(src + 2, i)];
  }
}

void dequantize_row_iq4_xs(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += kIq4XsBytes) {
    const float d = f16_to_f32(load_u16(src));
    const uint16_t scales_h = load_u16(src + 2);
    const uint8_t* scales_l = src + 4;
    for (uint32_t s = 0; s < QK_K / kBlock; ++s, dst += kBlock) {
      const int ls = ((scales_l[s / 2] >> (4 * (s % 2))) & 0x0F) | (((scales_h >> (2 * s)) & 3) << 4);
      const float dl = d * (ls - 32);
      const uint8_t* qs = src + 8 + 16 * s;
      for (uint32_t i = 0; i < kBlock; ++i) dst[i] = dl * kIq4Levels[nibble(qs, i)];
    }
  }
}

void dequantize_row_mxfp4(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kMxfp4Bytes, dst += kBlock) {
    const float d = e8m0_half(src[0]);
    for (uint32_t i = 0; i < kBlock; ++i) dst[i] = kE2m1x2[nibble(src + 1, i)] * d;
  }
}

// d = (max - min) / 15, m = min; q = min(15, trunc((x - min) / d + 0.5)), as ggml's reference.
void quantize_row_q4_1(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += kQ4_1Bytes) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (uint32_t i = 0; i < kBlock; ++i) min = std::min(min, src[i]), max = std::max(max, src[i]);
    const float d = (max - min) / 15.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_u16(dst, f32_to_f16(d));
    store_u16(dst + 2, f32_to_f16(min));
    uint8_t q[kBlock];
    for (uint32_t i = 0; i < kBlock; ++i) q[i] = uint8_t(trunc_code((src[i] - min) * id + 0.5f, 15));
    pack_nibbles(q, dst + 4);
  }
}

// d = (signed value of largest magnitude) / -16, so it lands on code 0; q = min(31, trunc(x/d + 16.5)).
void quantize_row_q5_0(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += kQ5_0Bytes) {
    float amax = 0.f, max = 0.f;
    for (uint32_t i = 0; i < kBlock; ++i)
      if (amax < std::fabs(src[i])) amax = std::fabs(src[i]), max = src[i];
    const float d = max / -16.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_u16(dst, f32_to_f16(d));
    uint8_t q[kBlock];
    for (uint32_t i = 0; i < kBlock; ++i) q[i] = uint8_t(trunc_code(src[i] * id + 16.5f, 31));
    store_u32(dst + 2, fifth_bits(q));
    pack_nibbles(q, dst + 6);
  }
}

// d = (max - min) / 31, m = min; q = trunc((x - min) / d + 0.5) (never above 31 for finite input).
void quantize_row_q5_1(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += kQ5_1Bytes) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (uint32_t i = 0; i < kBlock; ++i) min = std::min(min, src[i]), max = std::max(max, src[i]);
    const float d = (max - min) / 31.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_u16(dst, f32_to_f16(d));
    store_u16(dst + 2, f32_to_f16(min));
    uint8_t q[kBlock];
    for (uint32_t i = 0; i < kBlock; ++i) q[i] = uint8_t(trunc_code((src[i] - min) * id + 0.5f, 31));
    store_u32(dst + 4, fifth_bits(q));
    pack_nibbles(q, dst + 8);
  }
}

// The f16 block scale from iq4_fit, then the nearest level per value.
void quantize_row_iq4_nl(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += kIq4NlBytes) {
    const float d = iq4_fit(src, kBlock, true);
    uint8_t q[kBlock];
    iq4_error(src, kBlock, d, q);
    store_u16(dst, f32_to_f16(d));
    pack_nibbles(q, dst + 2);
  }
}

// Per sub-block float scales from iq4_fit; the one of largest magnitude sets d (it maps to
// ls - 32 = -32); each ls is the rounded code or a neighbour, whichever fits its values best.
void quantize_row_iq4_xs(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += QK_K, dst += kIq4XsBytes) {
    float scale[8], smax = 0.f;
    for (int s = 0; s < 8; ++s) {
      scale[s] = iq4_fit(src + kBlock * s, kBlock, false);
      if (std::fabs(scale[s]) > std::fabs(smax)) smax = scale[s];
    }
    const float d = through_f16(smax / -32.f);
    uint16_t scales_h = 0;
    std::memset(dst + 4, 0, 4);
    for (int s = 0; s < 8; ++s) {
      const float* x = src + kBlock * s;
      const int l0 = d != 0.f ? clamp_round(scale[s] / d, -32, 31) : 0;
      int best_l = l0;
      float best = INFINITY;
      for (int l = std::max(-32, l0 - 1); l <= std::min(31, l0 + 1); ++l) {
        const float err = iq4_error(x, kBlock, d * l, nullptr);
        if (err < best) best = err, best_l = l;
      }
      uint8_t q[kBlock];
      iq4_error(x, kBlock, d * best_l, q);
      pack_nibbles(q, dst + 8 + 16 * s);
      const int ls = best_l + 32;
      dst[4 + s / 2] |= uint8_t((ls & 0x0F) << (4 * (s % 2)));
      scales_h |= uint16_t((ls >> 4) << (2 * s));
    }
    store_u16(dst, f32_to_f16(d));
    store_u16(dst + 2, scales_h);
  }
}

// Two E8M0 exponents: ggml's (the largest magnitude lands in [8, 16) doubled-e2m1 units, values
// past 12 clip to 12) and the next one up (it lands in [4, 8): nothing clips, coarser steps);
// the one with the smaller squared error wins, then the nearest e2m1 value per element. The
// exponent is read exactly with ilogb (ggml takes floor(log2f(amax))).
void quantize_row_mxfp4(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += kMxfp4Bytes) {
    float amax = 0.f;
    for (uint32_t i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(src[i]));
    int e_best = 0;
    if (amax > 0.f && std::isfinite(amax)) {
      const int e0 = std::clamp(std::ilogb(amax) - 2 + 127, 0, 254);
      float best = INFINITY;
      for (int e = e0; e <= std::min(e0 + 1, 254); ++e) {
        const float d = e8m0_half(uint8_t(e)), inv = 1.f / d;
        float err = 0.f;
        for (uint32_t i = 0; i < kBlock; ++i) {
          const float r = kE2m1x2[nearest_e2m1(src[i] * inv)] * d - src[i];
          err += r * r;
        }
        if (err < best) best = err, e_best = e;
      }
    }
    dst[0] = uint8_t(e_best);
    const float inv = 1.f / e8m0_half(uint8_t(e_best));
    uint8_t q[kBlock];
    for (uint32_t i = 0; i < kBlock; ++i) q[i] = uint8_t(nearest_e2m1(src[i] * inv));
    pack_nibbles(q, dst + 1);
  }
}

}  // namespace ztvm::quant_detail
