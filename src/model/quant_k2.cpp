// The low-bit K-quants: Q2_K and Q3_K, 256-element super-blocks of 16 sub-blocks of 16 values.
//
// Q2_K, 84 bytes: { uint8 scales[16]; uint8 qs[64]; f16 d; f16 dmin; }
//   Sub-block i: x = (d * (scales[i] & 15)) * q - (dmin * (scales[i] >> 4)), q in 0..3: an affine
//   code per sub-block, its 4-bit scale in the low nibble and 4-bit min in the high nibble.
//   qs: two halves of 32 bytes; in half h, byte l holds the 2-bit codes of elements
//   128h + l, 128h + 32 + l, 128h + 64 + l, 128h + 96 + l at bits 0, 2, 4, 6.
//
// Q3_K, 110 bytes: { uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; f16 d; }
//   Sub-block i: x = (d * (sc[i] - 32)) * q, q in -4..3, sc[i] a 6-bit code (so the sub-block
//   scale is signed, -32..31 steps of d). q = (2 low bits) - (high bit clear ? 4 : 0): the low bits
//   sit in qs exactly as Q2_K's codes, the high bit of element k is bit k/32 of hmask[k % 32].
//   scales[12]: the low 4 bits of sc[i] are the low nibble of byte i (i < 8) or the high nibble of
//   byte i-8 (i >= 8); the top 2 bits are bits 2*(i/4)..2*(i/4)+1 of byte 8 + i%4.
//
// The quantizers are our own least-squares fits (see quant_k.cpp), not llama.cpp's iterative
// make_qkx2_quants / make_q3_quants searches; any 2-/3-bit codes and scales decode by the rules above.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/quant.h"
#include "model/quant_impl.h"

namespace ztvm::quant_detail {

namespace {

constexpr uint32_t QK_K = 256;
constexpr uint32_t kQ2KBytes = 84, kQ3KBytes = 110;

// Element k's byte in qs (the 64-byte 2-bit array shared by both layouts) and its shift.
inline uint32_t two_bit_byte(uint32_t k) { return 32 * (k / 128) + k % 32; }
inline uint32_t two_bit_shift(uint32_t k) { return 2 * ((k % 128) / 32); }

// The 6-bit code of Q3_K sub-block i (0..15) from the 12 packed bytes.
int q3k_scale_code(const uint8_t* scales, int i) {
  const int low = i < 8 ? (scales[i] & 0x0F) : (scales[i - 8] >> 4);
  const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
  return low | (high << 4);
}

void q3k_pack_scales(const uint8_t code[16], uint8_t scales[12]) {
  std::memset(scales, 0, 12);
  for (int i = 0; i < 16; ++i) {
    if (i < 8) scales[i] |= uint8_t(code[i] & 0x0F);
    else scales[i - 8] |= uint8_t((code[i] & 0x0F) << 4);
    scales[8 + i % 4] |= uint8_t((code[i] >> 4) << (2 * (i / 4)));
  }
}

// Squared error of a sub-block of 16 encoded with a signed effective scale, q in -4..3.
float q3k_sub_block_error(const float* x, float eff_scale) {
  float err = 0.f;
  const float inv = eff_scale != 0.f ? 1.f / eff_scale : 0.f;
  for (int l = 0; l < 16; ++l) {
    const float r = eff_scale * clamp_round(x[l] * inv, -4, 3) - x[l];
    err += r * r;
  }
  return err;
}

}  // namespace

void dequantize_row_q2_k(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += kQ2KBytes, dst += QK_K) {
    const uint8_t* scales = src;
    const uint8_t* qs = src + 16;
    const float d = f16_to_f32(load_u16(src + 80));
    const float dmin = f16_to_f32(load_u16(src + 82));
    for (uint32_t i = 0; i < 16; ++i) {
      const float dl = d * (scales[i] & 0x0F), ml = dmin * (scales[i] >> 4);
      for (uint32_t k = 16 * i; k < 16 * i + 16; ++k) {
        const int q = (qs[two_bit_byte(k)] >> two_bit_shift(k)) & 3;
        dst[k] = dl * q - ml;
      }
    }
  }
}

void dequantize_row_q3_k(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += kQ3KBytes, dst += QK_K) {
    const uint8_t* hmask = src;
    const uint8_t* qs = src + 32;
    const uint8_t* scales = src + 96;
    const float d = f16_to_f32(load_u16(src + 108));
    for (uint32_t i = 0; i < 16; ++i) {
      const float dl = d * (q3k_scale_code(scales, int(i)) - 32);
      for (uint32_t k = 16 * i; k < 16 * i + 16; ++k) {
        const int low = (qs[two_bit_byte(k)] >> two_bit_shift(k)) & 3;
        const bool high = (hmask[k % 32] >> (k / 32)) & 1;
        dst[k] = dl * (low - (high ? 0 : 4));
      }
    }
  }
}

void quantize_row_q2_k(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += QK_K, dst += kQ2KBytes) {
    // 1. Per sub-block affine fit (4 levels) in float; 2. 4-bit codes against f16 super-scales.
    float scale[16], min[16], max_scale = 0.f, max_min = 0.f;
    for (int i = 0; i < 16; ++i) {
      float offset;
      fit_affine(src + 16 * i, 16, 3, &scale[i], &offset);
      min[i] = -offset;
      max_scale = std::max(max_scale, scale[i]);
      max_min = std::max(max_min, min[i]);
    }
    const float d = through_f16(max_scale / 15.f), dmin = through_f16(max_min / 15.f);
    uint8_t sc[16], m[16];
    choose_affine_codes(src, 16, 16, 3, 15, scale, min, d, dmin, sc, m);
    for (int i = 0; i < 16; ++i) dst[i] = uint8_t(sc[i] | (m[i] << 4));
    store_u16(dst + 80, f32_to_f16(d));
    store_u16(dst + 82, f32_to_f16(dmin));
    // 3. Codes with the scales a decoder will see.
    uint8_t* qs = dst + 16;
    std::memset(qs, 0, 64);
    for (uint32_t k = 0; k < QK_K; ++k) {
      const float eff_scale = d * sc[k / 16], eff_min = dmin * m[k / 16];
      const float inv = eff_scale > 0.f ? 1.f / eff_scale : 0.f;
      const int q = clamp_round((src[k] + eff_min) * inv, 0, 3);
      qs[two_bit_byte(k)] |= uint8_t(q << two_bit_shift(k));
    }
  }
}

void quantize_row_q3_k(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += QK_K, dst += kQ3KBytes) {
    // 1. Per sub-block signed scale (q in -4..3); 2. 6-bit signed codes against one f16 super-scale,
    // the largest-magnitude sub-block scale mapping to code -32.
    float scale[16], smax = 0.f;
    for (int i = 0; i < 16; ++i) {
      scale[i] = fit_symmetric(src + 16 * i, 16, -4, 3, 8, 0.1f);
      if (std::fabs(scale[i]) > std::fabs(smax)) smax = scale[i];
    }
    const float d = through_f16(smax / -32.f);
    uint8_t code[16];
    for (int i = 0; i < 16; ++i) {  // nearest code, or a neighbour if it fits the values better
      const int c0 = d != 0.f ? clamp_round(scale[i] / d, -32, 31) : 0;
      float best = INFINITY;
      code[i] = uint8_t(c0 + 32);
      for (int c = std::max(-32, c0 - 1); c <= std::min(31, c0 + 1); ++c) {
        const float err = q3k_sub_block_error(src + 16 * i, d * c);
        if (err < best) {
          best = err;
          code[i] = uint8_t(c + 32);
        }
      }
    }
    uint8_t* hmask = dst;
    uint8_t* qs = dst + 32;
    std::memset(dst, 0, 96);
    q3k_pack_scales(code, dst + 96);
    store_u16(dst + 108, f32_to_f16(d));
    // 3. Codes q + 4 in 0..7: 2 low bits into qs, the third into hmask.
    for (uint32_t k = 0; k < QK_K; ++k) {
      const float eff = d * (int(code[k / 16]) - 32);
      const float inv = eff != 0.f ? 1.f / eff : 0.f;
      const int u = clamp_round(src[k] * inv, -4, 3) + 4;
      qs[two_bit_byte(k)] |= uint8_t((u & 3) << two_bit_shift(k));
      hmask[k % 32] |= uint8_t((u >> 2) << (k / 32));
    }
  }
}

}  // namespace ztvm::quant_detail
