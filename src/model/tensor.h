// A view of one weight tensor inside a memory-mapped model file: no copy, no ownership.
// The file object (GgufFile, SafetensorsDir, ModelFile) that produced it must outlive it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/quant.h"

namespace ztvm {

struct TensorView {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> ne;     // ggml order: ne[0] is the contiguous row length, ne[1] the row count, ...
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;          // row_bytes(type, ne[0]) * rows()

  uint64_t cols() const { return ne.empty() ? 1 : ne[0]; }
  uint64_t rows() const {  // product of ne[1..]: a 1-D tensor is one row
    uint64_t r = 1;
    for (size_t i = 1; i < ne.size(); ++i) r *= ne[i];
    return r;
  }
  uint64_t elements() const { return cols() * rows(); }
  // "[64, 512]" in ggml order, as llama.cpp prints shapes.
  std::string shape_str() const;
};

// "[a, b, c]" for any ggml-order shape (used in error messages).
std::string shape_to_string(const std::vector<uint64_t>& ne);

}  // namespace ztvm
