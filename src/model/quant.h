// GGUF tensor types and the CPU reference (de)quantizers. dequantize_row is the scalar twin every GPU
// dequant kernel is tested against, so it spells out each format's math exactly as ggml defines it.
#pragma once
#include <cstdint>

namespace ztvm {

// Numeric ids as stored in GGUF tensor infos (ggml's `enum ggml_type`).
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
};

// False for ids that are not a known ggml type (removed or future ones): GGUF readers reject them.
bool type_known(uint32_t id);
// "Q4_K", "F16", ... (llama.cpp's spelling, upper case); "type#99" for unknown ids.
const char* type_name(GgmlType t);
// Parses "q4_k" / "Q4_K" / "f16"...; returns false when the name is not a known type.
bool type_from_name(const char* name, GgmlType* out);
// The types with a CPU (de)quantizer here (dequantize_row and quantize_row work for exactly these):
// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4.
bool type_supported(GgmlType t);
// Elements per block and bytes per block (1 and sizeof(element) for plain float types).
uint32_t block_elems(GgmlType t);
uint32_t block_bytes(GgmlType t);
// Bytes of a row of n elements; n must be a multiple of block_elems(t) (throws ModelError if not).
uint64_t row_bytes(GgmlType t, uint64_t n);

// n elements of type t at src -> f32. Throws ModelError for types without a dequantizer.
void dequantize_row(GgmlType t, const void* src, float* dst, uint64_t n);
// n floats -> n elements of type t at dst (row_bytes(t, n) bytes). Supported: F32, F16, BF16, Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4. Q8_0, Q4_0, Q4_1,
// Q5_0 and Q5_1 follow ggml's reference rounding bit for bit; the K, IQ4 and MXFP4 quantizers are
// our own searches (valid blocks llama.cpp decodes, not llama-quantize's bytes).
void quantize_row(GgmlType t, const float* src, void* dst, uint64_t n);

// IEEE half <-> float; f32_to_f16 rounds to nearest even, overflows to inf, keeps NaN a NaN.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
// bfloat16 (the top 16 bits of an f32) <-> float; f32_to_bf16 rounds to nearest even.
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);

// The K-quant formats (256-element super-blocks); quant_k.cpp. Exposed for the tests. The other
// formats' row functions are in model/quant_impl.h (internal to the codecs).
void dequantize_row_q4_k(const uint8_t* src, float* dst, uint64_t n);
void dequantize_row_q6_k(const uint8_t* src, float* dst, uint64_t n);
void quantize_row_q4_k(const float* src, uint8_t* dst, uint64_t n);
void quantize_row_q6_k(const float* src, uint8_t* dst, uint64_t n);

}  // namespace ztvm
