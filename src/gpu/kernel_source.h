// The WGSL kernels embedded at build time (cmake/embed_wgsl.cmake): role name -> source.
#pragma once
#include <string>
#include <vector>

namespace ztvm {
struct KernelSource {
  const char* name;    // file name without .wgsl, e.g. "matvec_q4_0"
  const char* source;  // the WGSL text
};
const std::vector<KernelSource>& embedded_kernels();
}  // namespace ztvm
