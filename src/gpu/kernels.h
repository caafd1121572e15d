// Kernel library and dispatch recorder. Kernels are the embedded kernels/<role>.wgsl files; a line
// `//!include NAME` pulls in a shared snippet file, and a placeholder NAME may be mapped to a concrete
// snippet per variant (e.g. WEIGHT -> weight_q4_0), so one matmul source serves every weight type.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.h"

namespace ztvm::gpu {

struct KernelKey {
  std::string kernel;                           // kernels/<kernel>.wgsl
  std::map<std::string, std::string> includes;  // placeholder -> snippet, e.g. {"WEIGHT", "weight_q8_0"}
  std::map<std::string, double> constants;      // WGSL override constants
  std::string label() const;                    // e.g. "matmul[weight_q8_0]{COLS=64,ROWS=512}"
  bool operator<(const KernelKey& o) const;
};

class Kernels {
 public:
  explicit Kernels(Device& dev) : dev_(dev) {}
  // Builds (once) and returns the pipeline for a kernel variant.
  const Pipeline& get(const KernelKey& key);
  // The WGSL text of a kernel variant with its includes expanded.
  static std::string compose(const std::string& kernel, const std::map<std::string, std::string>& includes);
  Device& device() { return dev_; }

 private:
  Device& dev_;
  std::map<KernelKey, std::unique_ptr<Pipeline>> cache_;
};

// Records dispatches into one compute pass (WebGPU orders dispatches within a pass), and copies between
// passes. Nothing is allocated per dispatch beyond Dawn's command recording.
class Recorder {
 public:
  Recorder(Device& dev, const char* label);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  // groups_x may exceed the per-dimension limit: it is folded into y, and kernels recover the flat index
  // as wid.x + wid.y * num_workgroups.x (see flat_group in kernels/common.wgsl).
  // role/bytes name the dispatch for the profiler, when one is set on the device.
  void dispatch(const Pipeline& p, const BindGroup& g, uint32_t groups_x, uint32_t groups_y = 1,
                const std::string& role = "", uint64_t bytes = 0);
  void copy(const Buffer& src, uint64_t src_off, const Buffer& dst, uint64_t dst_off, uint64_t size);
  void submit();  // finishes the encoder and submits it; the recorder is spent afterwards
  uint32_t dispatches() const { return n_dispatch_; }
  // While set, every dispatch and copy also appends a line to *lines (kernel variant, grid, bindings,
  // role, bytes): what a pass does, compared across refactors (tests/engine_graph_trace_test.cpp).
  void trace(std::vector<std::string>* lines) { trace_ = lines; }

 private:
  void begin_pass();
  void end_pass();
  Device& dev_;
  WGPUCommandEncoder enc_ = nullptr;
  WGPUComputePassEncoder pass_ = nullptr;
  uint32_t max_dim_;
  uint32_t n_dispatch_ = 0;
  std::vector<std::string>* trace_ = nullptr;
};

}  // namespace ztvm::gpu
