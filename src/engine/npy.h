// Minimal NumPy .npy (format 1.0) for float32 and int32 arrays: logits out, fixtures in.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ztvm {

struct NpyArray {
  std::vector<uint64_t> shape;
  std::vector<float> data;  // int arrays are converted
};

void write_npy(const std::string& path, const float* data, const std::vector<uint64_t>& shape);
NpyArray read_npy(const std::string& path);  // '<f4', '<f8', '<i4', '<i8', C order

}  // namespace ztvm
