// Weight blocks the GPU reads rearranged: same bytes, same row size, so nothing else about a matrix
// changes, but a lane reads a 32-element unit in a few aligned words instead of realigning pairs or
// loading bytes that belong to its neighbour's unit (DESIGN.md allows a layout transform at load that
// is measured to pay; bench/EXPERIMENTS.md has the measurements).
// - Q4_0 rows of 256k columns: every block's 16 bytes of nibbles (16-byte aligned: such a row is a
//   multiple of 16 bytes), then every block's f16 scale. Other widths stay as they are; the kernels
//   take the layout from COLS (weight_q4_0.wgsl).
// - Q4_K blocks: d, dmin; the 6-bit scale and min of sub-block j as byte j (their low 4 bits) and
//   nibble j of bytes 8..11 (their top 2 bits); then each sub-block's 32 codes in 16 bytes of its own,
//   byte k holding codes k and k + 16 (GGUF interleaves two sub-blocks in 32 bytes).
// - Q6_K blocks: each sub-block's 24 bytes (16 of low nibbles as Q4_K's, then 4 + 4 of high bit pairs
//   for codes 0..15 and 16..31: code 4m + b's pair at bits 8b + 2m of its word), the 16 int8 scales,
//   and d first instead of last when the block starts 2 bytes past a word (blocks are 210 bytes), so
//   that the codes and scales always start on a word.
// The other quantized types are read as stored (their weight_*.wgsl say how).
#pragma once
#include <cstdint>

#include "model/quant.h"

namespace ztvm {

// Whether the GPU's matvecs and GEMM on this type read x as int8 units (a dotq8_*.wgsl for it): every
// quantized type but Q2_K, whose per-16 mins want per-16 sums of x. The CPU twins follow it.
inline bool int8_dot_type(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
    case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4:
      return true;
    default:
      return false;
  }
}
// Whether rows of this type and width go to the GPU rearranged.
bool gpu_layout_differs(GgmlType type, uint64_t cols);
// `rows` rows of GGUF blocks at src into the GPU layout at dst; dst_offset: where the first row lands
// in its buffer (a Q6_K block's arrangement depends on its alignment).
void gpu_row_layout(GgmlType type, uint64_t cols, const uint8_t* src, uint8_t* dst, uint64_t rows, uint64_t dst_offset);

}  // namespace ztvm
