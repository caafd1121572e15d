// Internal to the quant codecs (quant.cpp, quant_k.cpp, quant_k2.cpp, quant_more.cpp): the per-format
// row functions quant.cpp dispatches to, and the small helpers and fitting routines they share.
// Not part of the model layer's interface: include model/quant.h instead.
#pragma once
#include <cstdint>

#include "model/quant.h"

namespace ztvm::quant_detail {

inline uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline void store_u16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v & 0xff);
  p[1] = uint8_t(v >> 8);
}
// A float rounded to what an f16 field will hold.
inline float through_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

// round-half-away-from-zero of v, clamped to [lo, hi] (NaN -> lo). Clamping before the int
// conversion keeps huge values defined; this is the quantizers' hot path, so no libm call.
inline int clamp_round(float v, int lo, int hi) {
  if (!(v > float(lo))) return lo;
  if (v >= float(hi)) return hi;
  return int(v + (v >= 0.f ? 0.5f : -0.5f));
}

// Fits x ~= scale * q + offset with q in 0..nmax (n <= 32) and offset <= 0 (quant_k.cpp).
void fit_affine(const float* x, int n, int nmax, float* scale_out, float* offset_out);
// Fits x ~= scale * q with q in qmin..qmax (qmin < 0 < qmax, n <= 32), a signed scale; the extreme
// value is mapped near qmin, `trials` scales either side of that in steps of `step` (quant_k.cpp).
float fit_symmetric(const float* x, int n, int qmin, int qmax, int trials, float step);
// For sub-blocks of an affine K-quant (x = d*sc*q - dmin*m): the sc / m codes in 0..code_max for
// super-scales d, dmin, each the rounded code or a neighbour, whichever fits its sub-block's values
// best. scale[] / min[] are the float fits. Returns the block's squared error (quant_k.cpp).
float choose_affine_codes(const float* x, int nsub, int sub_len, int nmax, int code_max, const float* scale,
                          const float* min, float d, float dmin, uint8_t* sc, uint8_t* m);

// The per-format row functions (n a multiple of the block size; quant.cpp checks).
void dequantize_row_q4_1(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_q5_0(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_q5_1(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_iq4_nl(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_iq4_xs(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_mxfp4(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_q2_k(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_q3_k(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_q5_k(const uint8_t* src, float* dst, uint64_t n);
void quantize_row_q4_1(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_q5_0(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_q5_1(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_iq4_nl(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_iq4_xs(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_mxfp4(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_q2_k(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_q3_k(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_q5_k(const float* src, uint8_t* dst, uint64_t n);

}  // namespace ztvm::quant_detail
