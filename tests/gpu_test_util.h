// Shared by the GPU tests: one device per test process, and the error measure the bounds use.
#pragma once
#include <vector>

#include "gpu/device.h"

namespace ztvm::test {

inline gpu::Device& device() {
  static gpu::Device dev;
  return dev;
}

// Normalised mean squared error: sum (got - want)^2 / sum want^2.
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    num += (double)(got[i] - want[i]) * (got[i] - want[i]);
    den += (double)want[i] * want[i];
  }
  return den > 0 ? num / den : num;
}

}  // namespace ztvm::test
