// K-quants: 256-element super-blocks with quantized per-sub-block scales.
//
// Q4_K, 144 bytes: { f16 d; f16 dmin; uint8 scales[12]; uint8 qs[128]; }
//   8 sub-blocks of 32. Sub-block j: x = (d * sc[j]) * q - (dmin * m[j]), q in 0..15, sc/m 6-bit.
//   scales[12] packs 8 (sc, m) pairs of 6 bits: for j < 4, sc[j] = scales[j] & 63 and
//   m[j] = scales[j+4] & 63; for j >= 4 the low 4 bits sit in scales[j+4] (sc low nibble, m high
//   nibble) and the top 2 bits in bits 6..7 of scales[j-4] (sc) and scales[j] (m).
//   qs: 4 chunks of 32 bytes; chunk c holds sub-block 2c in low nibbles, 2c+1 in high nibbles.
//
// Q5_K, 176 bytes: { f16 d; f16 dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; }
//   Q4_K's layout with a fifth bit per value: x = (d * sc[j]) * q - (dmin * m[j]), q in 0..31.
//   scales[12] and the nibbles in qs exactly as Q4_K; element l (0..31) of sub-block j adds 16 to
//   its nibble when bit j of qh[l] is set (so qh byte l carries that lane of all 8 sub-blocks).
//
// Q6_K, 210 bytes: { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d; }
//   16 sub-blocks of 16. x = (d * scales[k]) * (q - 32), q in 0..63 = 4 low bits (ql) + 2 high (qh).
//   Each half of 128 elements uses 64 ql bytes and 32 qh bytes. For l < 32 in half h, with
//   y = the half's 128 elements: ql[l] = y[l] low | y[l+64] high nibble, ql[l+32] = y[l+32] low |
//   y[l+96] high nibble, qh[l] = top 2 bits of y[l], y[l+32], y[l+64], y[l+96] at bits 0,2,4,6.
//
// The quantizers are our own least-squares searches (not llama.cpp's make_qkx2/make_qx quants
// with their importance weights); they produce valid blocks whose decode is defined only by the
// layout above. The fitting helpers here are shared with quant_k2.cpp (Q2_K, Q3_K).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/quant.h"
#include "model/quant_impl.h"

namespace ztvm {

using namespace quant_detail;

namespace {

constexpr uint32_t QK_K = 256;
constexpr uint32_t kQ4KBytes = 144, kQ5KBytes = 176, kQ6KBytes = 210;

// The (scale, min) 6-bit pair of Q4_K sub-block j (0..7) from the 12 packed bytes.
void q4k_scale_min(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = uint8_t((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4));
    *m = uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Inverse of q4k_scale_min for all 8 pairs (each value < 64).
void q4k_pack_scales(const uint8_t sc[8], const uint8_t m[8], uint8_t scales[12]) {
  std::memset(scales, 0, 12);
  for (int j = 0; j < 4; ++j) {
    scales[j] = sc[j];
    scales[j + 4] = m[j];
  }
  for (int j = 4; j < 8; ++j) {
    scales[j + 4] = uint8_t((sc[j] & 0x0F) | ((m[j] & 0x0F) << 4));
    scales[j - 4] |= uint8_t((sc[j] >> 4) << 6);
    scales[j] |= uint8_t((m[j] >> 4) << 6);
  }
}
// Least-squares (scale, offset) for fixed codes q, with offset <= 0 (the stored min = -offset is
// non-negative). Returns false when the codes do not determine a positive scale.
bool refit_affine(const float* x, const int* q, int n, double* scale, double* offset) {
  double sq = 0, sqq = 0, sx = 0, sqx = 0;
  for (int i = 0; i < n; ++i) sq += q[i], sqq += double(q[i]) * q[i], sx += x[i], sqx += double(q[i]) * x[i];
  const double det = n * sqq - sq * sq;
  if (det <= 0) return false;
  *scale = (n * sqx - sq * sx) / det;
  *offset = (sqq * sx - sq * sqx) / det;
  if (*offset > 0) {  // the best line does not reach zero: pin offset to 0 and refit the slope
    *offset = 0;
    *scale = sqx / sqq;
  }
  return *scale > 0;
}

// Squared error of an affine sub-block of len values encoded with effective scale and min.
float affine_sub_block_error(const float* x, int len, int nmax, float eff_scale, float eff_min) {
  float err = 0.f;
  const float inv = eff_scale > 0.f ? 1.f / eff_scale : 0.f;
  for (int l = 0; l < len; ++l) {
    const int q = clamp_round((x[l] + eff_min) * inv, 0, nmax);
    const float r = eff_scale * q - eff_min - x[l];
    err += r * r;
  }
  return err;
}

// Squared error of a Q6_K sub-block of 16 encoded with effective (signed) scale.
float q6k_sub_block_error(const float* x, float eff_scale) {
  float err = 0.f;
  const float inv = eff_scale != 0.f ? 1.f / eff_scale : 0.f;
  for (int l = 0; l < 16; ++l) {
    const int q = clamp_round(x[l] * inv, -32, 31);
    const float r = eff_scale * q - x[l];
    err += r * r;
  }
  return err;
}

// Q4_K and Q5_K share everything but the value range: nmax 15 or 31. Returns the 8 codes per
// sub-block in q[256] after writing d, dmin and the packed scales at dst.
void encode_q4k_like(const float* src, int nmax, uint8_t* dst, uint8_t q[QK_K]) {
  // 1. Per sub-block affine fit, in float.
  float scale[8], min[8], max_scale = 0.f, max_min = 0.f;
  for (int j = 0; j < 8; ++j) {
    float offset;
    fit_affine(src + 32 * j, 32, nmax, &scale[j], &offset);
    min[j] = -offset;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  // 2. Quantize scales and mins to 6 bits against f16 super-scales.
  const float d = through_f16(max_scale / 63.f), dmin = through_f16(max_min / 63.f);
  uint8_t sc[8], m[8];
  choose_affine_codes(src, 8, 32, nmax, 63, scale, min, d, dmin, sc, m);
  store_u16(dst, f32_to_f16(d));
  store_u16(dst + 2, f32_to_f16(dmin));
  q4k_pack_scales(sc, m, dst + 4);
  // 3. Quantize values with the scales a decoder will actually see.
  for (int j = 0; j < 8; ++j) {
    const float eff_scale = d * sc[j], eff_min = dmin * m[j];
    const float inv = eff_scale > 0.f ? 1.f / eff_scale : 0.f;  // as in affine_sub_block_error
    for (int l = 0; l < 32; ++l) q[32 * j + l] = uint8_t(clamp_round((src[32 * j + l] + eff_min) * inv, 0, nmax));
  }
}

}  // namespace

namespace quant_detail {

// Starts from several grid spacings over [min(x, 0), max(x)], then alternates "nearest codes" and
// "least-squares line" a few times (Lloyd-style), keeping the fit with the smallest squared error.
void fit_affine(const float* x, int n, int nmax, float* scale_out, float* offset_out) {
  float lo = 0.f, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *scale_out = 0.f;
  *offset_out = lo;
  if (hi <= lo) return;
  *scale_out = (hi - lo) / nmax;  // plain min/max grid: the fallback when every refit degenerates
  float best_err = INFINITY;
  int q[32];
  for (int trial = -4; trial <= 8; trial += 2) {
    double scale = (hi - lo) / (nmax + 0.1 * trial), offset = lo;
    for (int iter = 0; iter < 4; ++iter) {
      bool changed = iter == 0;
      const float inv = float(1.0 / scale), off = float(offset);
      for (int i = 0; i < n; ++i) {
        const int qi = clamp_round((x[i] - off) * inv, 0, nmax);
        changed |= qi != q[i];
        q[i] = qi;
      }
      if (!changed || !refit_affine(x, q, n, &scale, &offset)) break;  // converged or degenerate
      float err = 0;
      const float s = float(scale), o = float(offset), inv2 = 1.f / s;
      for (int i = 0; i < n; ++i) {
        const float r = s * clamp_round((x[i] - o) * inv2, 0, nmax) + o - x[i];
        err += r * r;
      }
      if (err < best_err) {
        best_err = float(err);
        *scale_out = float(scale);
        *offset_out = float(offset);
      }
    }
  }
}

// Each candidate scale is refit by least squares for its codes; the best one is kept.
float fit_symmetric(const float* x, int n, int qmin, int qmax, int trials, float step) {
  float amax = 0.f, max = 0.f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.f) return 0.f;
  float best_scale = max / float(qmin), best_err = INFINITY;
  for (int trial = -trials; trial <= trials; ++trial) {
    const float iscale = (float(qmin) - step * trial) / max;
    double sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clamp_round(x[i] * iscale, qmin, qmax);
      sqq += double(q) * q, sqx += double(q) * x[i];
    }
    if (sqq == 0 || sqx == 0) continue;
    const double scale = sqx / sqq;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double r = scale * clamp_round(float(x[i] / scale), qmin, qmax) - x[i];
      err += r * r;
    }
    if (err < best_err) {
      best_err = float(err);
      best_scale = float(scale);
    }
  }
  return best_scale;
}

// Rounding each code alone can be off by half a step of a coarse grid when one outlier sub-block
// sets d, so the neighbours of the rounded codes are tried too.
float choose_affine_codes(const float* x, int nsub, int sub_len, int nmax, int code_max, const float* scale,
                          const float* min, float d, float dmin, uint8_t* sc, uint8_t* m) {
  float total = 0.f;
  for (int j = 0; j < nsub; ++j) {
    const int sc0 = d > 0.f ? clamp_round(scale[j] / d, 0, code_max) : 0;
    const int m0 = dmin > 0.f ? clamp_round(min[j] / dmin, 0, code_max) : 0;
    float best = INFINITY;
    for (int s_code = std::max(0, sc0 - 1); s_code <= std::min(code_max, sc0 + 1); ++s_code) {
      for (int m_code = std::max(0, m0 - 1); m_code <= std::min(code_max, m0 + 1); ++m_code) {
        const float err = affine_sub_block_error(x + sub_len * j, sub_len, nmax, d * s_code, dmin * m_code);
        if (err < best) {
          best = err;
          sc[j] = uint8_t(s_code);
          m[j] = uint8_t(m_code);
        }
      }
    }
    total += best;
  }
  return total;
}

}  // namespace quant_detail

void dequantize_row_q4_k(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += kQ4KBytes) {
    const float d = f16_to_f32(load_u16(src));
    const float dmin = f16_to_f32(load_u16(src + 2));
    const uint8_t* scales = src + 4;
    const uint8_t* qs = src + 16;
    for (int chunk = 0; chunk < 4; ++chunk, qs += 32) {  // 64 elements: two sub-blocks
      uint8_t sc, m;
      q4k_scale_min(scales, 2 * chunk, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      q4k_scale_min(scales, 2 * chunk + 1, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *dst++ = d1 * (qs[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * (qs[l] >> 4) - m2;
    }
  }
}

void dequantize_row_q6_k(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += kQ6KBytes) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    const float d = f16_to_f32(load_u16(src + 208));
    for (int half = 0; half < 2; ++half, dst += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;  // which 16-element sub-block within each 32-element quarter
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * sc[is + 0] * q1;
        dst[l + 32] = d * sc[is + 2] * q2;
        dst[l + 64] = d * sc[is + 4] * q3;
        dst[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}

void quantize_row_q4_k(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += QK_K, dst += kQ4KBytes) {
    uint8_t q[QK_K];
    encode_q4k_like(src, 15, dst, q);
    uint8_t* qs = dst + 16;
    for (int chunk = 0; chunk < 4; ++chunk)
      for (int l = 0; l < 32; ++l) qs[32 * chunk + l] = uint8_t(q[64 * chunk + l] | (q[64 * chunk + 32 + l] << 4));
  }
}

namespace quant_detail {

void dequantize_row_q5_k(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += kQ5KBytes) {
    const float d = f16_to_f32(load_u16(src));
    const float dmin = f16_to_f32(load_u16(src + 2));
    const uint8_t* scales = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* qs = src + 48;
    for (int j = 0; j < 8; ++j) {  // sub-block j: nibbles of chunk j/2 (low or high), bit j of qh
      uint8_t sc, m;
      q4k_scale_min(scales, j, &sc, &m);
      const float dl = d * sc, ml = dmin * m;
      const uint8_t* nib = qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) {
        const int q = ((nib[l] >> shift) & 0x0F) | (((qh[l] >> j) & 1) << 4);
        *dst++ = dl * q - ml;
      }
    }
  }
}

// Our Q4_K search with 32 levels (llama.cpp's make_qkx2_quants with its weights is not copied).
void quantize_row_q5_k(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += QK_K, dst += kQ5KBytes) {
    uint8_t q[QK_K];
    encode_q4k_like(src, 31, dst, q);
    uint8_t* qh = dst + 16;
    uint8_t* qs = dst + 48;
    std::memset(qh, 0, 32);
    for (int chunk = 0; chunk < 4; ++chunk) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = q[64 * chunk + l], hi = q[64 * chunk + 32 + l];
        qs[32 * chunk + l] = uint8_t((lo & 0x0F) | ((hi & 0x0F) << 4));
        qh[l] |= uint8_t(((lo >> 4) << (2 * chunk)) | ((hi >> 4) << (2 * chunk + 1)));
      }
    }
  }
}

}  // namespace quant_detail

void quantize_row_q6_k(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / QK_K; ++b, src += QK_K, dst += kQ6KBytes) {
    // 1. Per sub-block signed scale; 2. 8-bit scales against one f16 super-scale.
    float scale[16], max_abs = 0.f;
    for (int k = 0; k < 16; ++k) {
      scale[k] = fit_symmetric(src + 16 * k, 16, -32, 31, 6, 0.5f);
      max_abs = std::max(max_abs, std::fabs(scale[k]));
    }
    const float d = through_f16(max_abs / 127.f);
    int8_t* sc = reinterpret_cast<int8_t*>(dst + 192);
    for (int k = 0; k < 16; ++k) {  // nearest 8-bit code, or a neighbour if it fits the values better
      const int code0 = d > 0.f ? clamp_round(scale[k] / d, -128, 127) : 0;
      float best = INFINITY;
      for (int code = std::max(-128, code0 - 1); code <= std::min(127, code0 + 1); ++code) {
        const float err = q6k_sub_block_error(src + 16 * k, d * code);
        if (err < best) {
          best = err;
          sc[k] = int8_t(code);
        }
      }
    }
    store_u16(dst + 208, f32_to_f16(d));
    // 3. Values as unsigned 0..63 (q + 32) with the effective scales.
    uint8_t q[QK_K];
    for (int k = 0; k < 16; ++k) {
      const float eff = d * sc[k];
      const float inv = eff != 0.f ? 1.f / eff : 0.f;  // as in q6k_sub_block_error
      for (int l = 0; l < 16; ++l) q[16 * k + l] = uint8_t(clamp_round(src[16 * k + l] * inv, -32, 31) + 32);
    }
    // 4. Scatter into ql/qh per the layout at the top of this file.
    uint8_t* ql = dst;
    uint8_t* qh = dst + 128;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* y = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        ql[64 * half + l] = uint8_t((y[l] & 0x0F) | ((y[l + 64] & 0x0F) << 4));
        ql[64 * half + l + 32] = uint8_t((y[l + 32] & 0x0F) | ((y[l + 96] & 0x0F) << 4));
        qh[32 * half + l] = uint8_t((y[l] >> 4) | ((y[l + 32] >> 4) << 2) | ((y[l + 64] >> 4) << 4) | ((y[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace ztvm
