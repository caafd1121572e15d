// Type table, half/bfloat16 conversions, the row (de)quantizer dispatch and the first 32-element
// block formats (Q8_0, Q4_0). The other formats: quant_k.cpp (Q4_K, Q5_K, Q6_K), quant_k2.cpp
// (Q2_K, Q3_K), quant_more.cpp (Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, MXFP4).
// Block layouts (little-endian, packed) as ggml defines them:
//   Q8_0: { f16 d; int8 qs[32]; }            x[i] = d * qs[i]
//   Q4_0: { f16 d; uint8 qs[16]; }           x[i] = d * ((qs[i] & 15) - 8), x[i+16] = d * ((qs[i] >> 4) - 8)
#include "model/quant.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>

#include "model/model_error.h"
#include "model/quant_impl.h"
#include "model/tensor.h"

namespace ztvm {

namespace {

struct TypeInfo {
  GgmlType type;
  const char* name;
  uint32_t block_elems;
  uint32_t block_bytes;
};

// Every type a GGUF file may name, with its block geometry (from ggml's block structs), so files
// holding types we do not compute with still parse and list correctly in `ztvm info`.
constexpr TypeInfo kTypes[] = {
    {GgmlType::F32, "F32", 1, 4},         {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", 32, 18},     {GgmlType::Q4_1, "Q4_1", 32, 20},
    {GgmlType::Q5_0, "Q5_0", 32, 22},     {GgmlType::Q5_1, "Q5_1", 32, 24},
    {GgmlType::Q8_0, "Q8_0", 32, 34},     {GgmlType::Q8_1, "Q8_1", 32, 36},
    {GgmlType::Q2_K, "Q2_K", 256, 84},    {GgmlType::Q3_K, "Q3_K", 256, 110},
    {GgmlType::Q4_K, "Q4_K", 256, 144},   {GgmlType::Q5_K, "Q5_K", 256, 176},
    {GgmlType::Q6_K, "Q6_K", 256, 210},   {GgmlType::Q8_K, "Q8_K", 256, 292},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66}, {GgmlType::IQ2_XS, "IQ2_XS", 256, 74},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98}, {GgmlType::IQ1_S, "IQ1_S", 256, 50},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 18}, {GgmlType::IQ3_S, "IQ3_S", 256, 110},
    {GgmlType::IQ2_S, "IQ2_S", 256, 82},  {GgmlType::IQ4_XS, "IQ4_XS", 256, 136},
    {GgmlType::I8, "I8", 1, 1},           {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},         {GgmlType::I64, "I64", 1, 8},
    {GgmlType::F64, "F64", 1, 8},         {GgmlType::IQ1_M, "IQ1_M", 256, 56},
    {GgmlType::BF16, "BF16", 1, 2},       {GgmlType::TQ1_0, "TQ1_0", 256, 54},
    {GgmlType::TQ2_0, "TQ2_0", 256, 66},  {GgmlType::MXFP4, "MXFP4", 32, 17},
    {GgmlType::NVFP4, "NVFP4", 64, 36},   {GgmlType::Q1_0, "Q1_0", 128, 18},
    {GgmlType::Q2_0, "Q2_0", 64, 18},
};

const TypeInfo* find_info(GgmlType t) {
  for (const TypeInfo& info : kTypes)
    if (info.type == t) return &info;
  return nullptr;
}

const TypeInfo& info_or_throw(GgmlType t) {
  const TypeInfo* info = find_info(t);
  if (!info) throw ModelError("unknown ggml type id " + std::to_string(uint32_t(t)));
  return *info;
}

using quant_detail::load_u16;
using quant_detail::store_u16;

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

constexpr uint32_t kQ8_0Bytes = 34, kQ4_0Bytes = 18, kQBlock = 32;

void dequantize_row_q8_0(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kQBlock; ++b, src += kQ8_0Bytes) {
    const float d = f16_to_f32(load_u16(src));
    const int8_t* qs = reinterpret_cast<const int8_t*>(src + 2);
    for (uint32_t j = 0; j < kQBlock; ++j) *dst++ = qs[j] * d;
  }
}

void dequantize_row_q4_0(const uint8_t* src, float* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kQBlock; ++b, src += kQ4_0Bytes, dst += kQBlock) {
    const float d = f16_to_f32(load_u16(src));
    const uint8_t* qs = src + 2;
    // Low nibbles hold elements 0..15, high nibbles 16..31; stored unsigned with offset 8.
    for (uint32_t j = 0; j < kQBlock / 2; ++j) {
      dst[j] = ((qs[j] & 0x0F) - 8) * d;
      dst[j + kQBlock / 2] = ((qs[j] >> 4) - 8) * d;
    }
  }
}

// Scale = amax / 127, q = round-half-away(x / scale): ggml's reference, so files we write match
// llama-quantize's bytes exactly (the scale is rounded to f16 only when stored).
void quantize_row_q8_0(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kQBlock; ++b, src += kQBlock, dst += kQ8_0Bytes) {
    float amax = 0.f;
    for (uint32_t j = 0; j < kQBlock; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_u16(dst, f32_to_f16(d));
    int8_t* qs = reinterpret_cast<int8_t*>(dst + 2);
    for (uint32_t j = 0; j < kQBlock; ++j) qs[j] = int8_t(std::round(src[j] * id));
  }
}

// Scale = (the value of largest magnitude, with its sign) / -8, so that value maps exactly to
// level 0 (i.e. -8) and the other side gets 7 levels; q = min(15, trunc(x / scale + 8.5)).
void quantize_row_q4_0(const float* src, uint8_t* dst, uint64_t n) {
  for (uint64_t b = 0; b < n / kQBlock; ++b, src += kQBlock, dst += kQ4_0Bytes) {
    float amax = 0.f, max = 0.f;
    for (uint32_t j = 0; j < kQBlock; ++j) {
      if (amax < std::fabs(src[j])) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    const float d = max / -8.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    store_u16(dst, f32_to_f16(d));
    for (uint32_t j = 0; j < kQBlock / 2; ++j) {
      const int lo = std::min(15, int(src[j] * id + 8.5f));
      const int hi = std::min(15, int(src[j + kQBlock / 2] * id + 8.5f));
      dst[2 + j] = uint8_t(lo | (hi << 4));
    }
  }
}

}  // namespace

bool type_known(uint32_t id) { return find_info(GgmlType(id)) != nullptr; }

const char* type_name(GgmlType t) {
  if (const TypeInfo* info = find_info(t)) return info->name;
  static thread_local std::string unknown;
  unknown = "type#" + std::to_string(uint32_t(t));
  return unknown.c_str();
}

bool type_from_name(const char* name, GgmlType* out) {
  std::string upper(name);
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  for (const TypeInfo& info : kTypes) {
    if (upper == info.name) {
      *out = info.type;
      return true;
    }
  }
  return false;
}

bool type_supported(GgmlType t) {
  switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4:
      return true;
    default:
      return false;
  }
}

uint32_t block_elems(GgmlType t) { return info_or_throw(t).block_elems; }
uint32_t block_bytes(GgmlType t) { return info_or_throw(t).block_bytes; }

uint64_t row_bytes(GgmlType t, uint64_t n) {
  const TypeInfo& info = info_or_throw(t);
  if (n % info.block_elems != 0)
    throw ModelError(std::string("row of ") + std::to_string(n) + " elements is not a multiple of the " +
                     info.name + " block size " + std::to_string(info.block_elems));
  return n / info.block_elems * info.block_bytes;
}

void dequantize_row(GgmlType t, const void* src, float* dst, uint64_t n) {
  row_bytes(t, n);  // validates n against the block size
  const uint8_t* p = static_cast<const uint8_t*>(src);
  switch (t) {
    case GgmlType::F32: std::memcpy(dst, p, n * 4); return;
    case GgmlType::F16: for (uint64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load_u16(p + 2 * i)); return;
    case GgmlType::BF16: for (uint64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(p + 2 * i)); return;
    case GgmlType::Q8_0: dequantize_row_q8_0(p, dst, n); return;
    case GgmlType::Q4_0: dequantize_row_q4_0(p, dst, n); return;
    case GgmlType::Q4_K: dequantize_row_q4_k(p, dst, n); return;
    case GgmlType::Q6_K: dequantize_row_q6_k(p, dst, n); return;
    case GgmlType::Q4_1: quant_detail::dequantize_row_q4_1(p, dst, n); return;
    case GgmlType::Q5_0: quant_detail::dequantize_row_q5_0(p, dst, n); return;
    case GgmlType::Q5_1: quant_detail::dequantize_row_q5_1(p, dst, n); return;
    case GgmlType::Q2_K: quant_detail::dequantize_row_q2_k(p, dst, n); return;
    case GgmlType::Q3_K: quant_detail::dequantize_row_q3_k(p, dst, n); return;
    case GgmlType::Q5_K: quant_detail::dequantize_row_q5_k(p, dst, n); return;
    case GgmlType::IQ4_NL: quant_detail::dequantize_row_iq4_nl(p, dst, n); return;
    case GgmlType::IQ4_XS: quant_detail::dequantize_row_iq4_xs(p, dst, n); return;
    case GgmlType::MXFP4: quant_detail::dequantize_row_mxfp4(p, dst, n); return;
    default: throw ModelError(std::string("no dequantizer for type ") + type_name(t));
  }
}

void quantize_row(GgmlType t, const float* src, void* dst, uint64_t n) {
  row_bytes(t, n);
  uint8_t* p = static_cast<uint8_t*>(dst);
  switch (t) {
    case GgmlType::F32: std::memcpy(p, src, n * 4); return;
    case GgmlType::F16: for (uint64_t i = 0; i < n; ++i) store_u16(p + 2 * i, f32_to_f16(src[i])); return;
    case GgmlType::BF16: for (uint64_t i = 0; i < n; ++i) store_u16(p + 2 * i, f32_to_bf16(src[i])); return;
    case GgmlType::Q8_0: quantize_row_q8_0(src, p, n); return;
    case GgmlType::Q4_0: quantize_row_q4_0(src, p, n); return;
    case GgmlType::Q4_K: quantize_row_q4_k(src, p, n); return;
    case GgmlType::Q6_K: quantize_row_q6_k(src, p, n); return;
    case GgmlType::Q4_1: quant_detail::quantize_row_q4_1(src, p, n); return;
    case GgmlType::Q5_0: quant_detail::quantize_row_q5_0(src, p, n); return;
    case GgmlType::Q5_1: quant_detail::quantize_row_q5_1(src, p, n); return;
    case GgmlType::Q2_K: quant_detail::quantize_row_q2_k(src, p, n); return;
    case GgmlType::Q3_K: quant_detail::quantize_row_q3_k(src, p, n); return;
    case GgmlType::Q5_K: quant_detail::quantize_row_q5_k(src, p, n); return;
    case GgmlType::IQ4_NL: quant_detail::quantize_row_iq4_nl(src, p, n); return;
    case GgmlType::IQ4_XS: quant_detail::quantize_row_iq4_xs(src, p, n); return;
    case GgmlType::MXFP4: quant_detail::quantize_row_mxfp4(src, p, n); return;
    default: throw ModelError(std::string("no quantizer for type ") + type_name(t));
  }
}

// Half: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Subnormals are mant * 2^-24.
float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    const float mag = std::ldexp(float(mant), -24);  // exact: mant < 2^10
    return sign ? -mag : mag;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / NaN (payload kept)
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));        // rebias 15 -> 127
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00;      // NaN -> quiet NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;     // >= 65520 rounds past 65504: inf
  if (abs < 0x38800000u) {                          // below 2^-14: a half subnormal (or zero)
    // |f| * 2^24 is exact in f32; rint rounds half to even in the default mode. 1024 encodes 2^-14.
    return sign | uint16_t(std::rint(bits_float(abs) * 16777216.f));
  }
  // Normal: rebias the exponent, then round the 13 dropped mantissa bits to nearest even.
  const uint32_t r = abs - 0x38000000u;
  return sign | uint16_t((r + 0x0fffu + ((r >> 13) & 1u)) >> 13);
}

float bf16_to_f32(uint16_t h) { return bits_float(uint32_t(h) << 16); }

uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x0040);  // quiet the NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

std::string shape_to_string(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

std::string TensorView::shape_str() const { return shape_to_string(ne); }

}  // namespace ztvm
