#include "engine/gpu_layout.h"

#include <cstring>

#include "model/model_error.h"
#include "model/quant.h"

namespace ztvm {

bool gpu_layout_differs(GgmlType type, uint64_t cols) {
  return (type == GgmlType::Q4_0 && cols % 256 == 0) || type == GgmlType::Q4_K || type == GgmlType::Q6_K;
}

namespace {

void q4_0_row(const uint8_t* s, uint8_t* d, uint64_t units) {
  for (uint64_t u = 0; u < units; u++) {
    std::memcpy(d + 16 * u, s + 18 * u + 2, 16);         // the nibbles
    std::memcpy(d + 16 * units + 2 * u, s + 18 * u, 2);  // the f16 scale
  }
}

void q4_k_block(const uint8_t* s, uint8_t* d) {
  std::memcpy(d, s, 4);  // d, dmin
  const uint8_t* sc = s + 4;
  uint8_t* out = d + 4;
  std::memset(out, 0, 12);
  for (int j = 0; j < 8; j++) {  // the 6-bit pairs as llama.cpp's get_scale_min_k4 reads them
    const int scale = j < 4 ? sc[j] & 63 : (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4);
    const int min = j < 4 ? sc[j + 4] & 63 : (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
    out[j] = (uint8_t)((scale & 15) | ((min & 15) << 4));
    out[8 + j / 2] |= (uint8_t)(((scale >> 4) | ((min >> 4) << 2)) << (4 * (j % 2)));
  }
  for (int j = 0; j < 8; j++) {
    const uint8_t* q = s + 16 + 32 * (j / 2);  // the pair's 32 bytes: j's codes in the low or high nibbles
    const int shift = 4 * (j % 2);
    for (int k = 0; k < 16; k++)
      d[16 + 16 * j + k] = (uint8_t)(((q[k] >> shift) & 15) | (((q[k + 16] >> shift) & 15) << 4));
  }
}

// at: the block's byte offset in its buffer.
void q6_k_block(const uint8_t* s, uint8_t* d, uint64_t at) {
  const uint8_t *ql = s, *qh = s + 128, *scales = s + 192, *dd = s + 208;
  const bool d_first = at % 4 == 2;
  uint8_t* out = d + (d_first ? 2 : 0);
  std::memset(out, 0, 192);
  for (int j = 0; j < 8; j++) {
    const int n = j / 4, k = j % 4;
    auto code = [&](int l) {  // element 128n + 32k + l, 0..63
      const int lo = (ql[64 * n + l + 32 * (k & 1)] >> (k < 2 ? 0 : 4)) & 15;
      const int hi = (qh[32 * n + l] >> (2 * k)) & 3;
      return lo | (hi << 4);
    };
    uint8_t* sb = out + 24 * j;
    for (int i = 0; i < 16; i++) sb[i] = (uint8_t)((code(i) & 15) | ((code(i + 16) & 15) << 4));
    for (int half = 0; half < 2; half++) {
      uint32_t word = 0;
      for (int m = 0; m < 4; m++)
        for (int b = 0; b < 4; b++) word |= (uint32_t)(code(16 * half + 4 * m + b) >> 4) << (8 * b + 2 * m);
      std::memcpy(sb + 16 + 4 * half, &word, 4);  // little-endian, as the GPU reads it
    }
  }
  std::memcpy(out + 192, scales, 16);
  std::memcpy(d_first ? d : d + 208, dd, 2);
}

}  // namespace

void gpu_row_layout(GgmlType type, uint64_t cols, const uint8_t* src, uint8_t* dst, uint64_t rows, uint64_t dst_offset) {
  if (!gpu_layout_differs(type, cols)) throw ModelError("gpu_row_layout: no GPU layout for this type");
  const uint64_t rb = row_bytes(type, cols);
  if (type == GgmlType::Q4_0) {
    for (uint64_t r = 0; r < rows; r++) q4_0_row(src + r * rb, dst + r * rb, cols / 32);
  } else if (type == GgmlType::Q4_K) {
    for (uint64_t b = 0; b < rows * (cols / 256); b++) q4_k_block(src + 144 * b, dst + 144 * b);
  } else {
    for (uint64_t b = 0; b < rows * (cols / 256); b++) q6_k_block(src + 210 * b, dst + 210 * b, dst_offset + 210 * b);
  }
}

}  // namespace ztvm
