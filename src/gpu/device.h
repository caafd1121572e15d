// The WebGPU device: adapter choice, RAII buffers, labelled pipelines, blocking helpers with timeouts.
// Every GPU object carries a label equal to its name in code, so Dawn's errors point at it; errors
// reported by Dawn (uncaptured, device lost, pipeline compilation) become GpuError exceptions.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/webgpu_abi.h"

namespace ztvm::gpu {

struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AdapterInfo {
  std::string device, vendor, architecture, description;
  std::string backend;       // "Vulkan", "Metal", ...
  std::string adapter_type;  // "DiscreteGPU", "IntegratedGPU", "CPU"
  uint32_t vendor_id = 0, device_id = 0;
  uint32_t subgroup_min = 0, subgroup_max = 0;
  std::vector<std::string> features;       // adapter features, by name
  std::vector<std::string> wgsl_features;  // WGSL language features
  WGPULimits limits{};
  bool shader_f16 = false, subgroups = false, timestamps = false;
};

// A storage buffer (or staging / uniform buffer). Move-only; released on destruction.
class Buffer {
 public:
  Buffer() = default;
  Buffer(WGPUBuffer h, uint64_t size, std::string label) : h_(h), size_(size), label_(std::move(label)) {}
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  WGPUBuffer get() const { return h_; }
  uint64_t size() const { return size_; }
  const std::string& label() const { return label_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  WGPUBuffer h_ = nullptr;
  uint64_t size_ = 0;
  std::string label_;
};

// A compute pipeline with its (auto-derived) bind group layout 0.
class Pipeline {
 public:
  Pipeline() = default;
  Pipeline(WGPUComputePipeline p, std::string label);
  Pipeline(Pipeline&& o) noexcept { *this = std::move(o); }
  Pipeline& operator=(Pipeline&& o) noexcept;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline();
  WGPUComputePipeline get() const { return p_; }
  WGPUBindGroupLayout layout() const { return layout_; }
  const std::string& label() const { return label_; }

 private:
  WGPUComputePipeline p_ = nullptr;
  WGPUBindGroupLayout layout_ = nullptr;
  std::string label_;
};

// One binding: a buffer, or a byte range of one (size 0 = to the end).
struct Binding {
  const Buffer* buffer;
  uint64_t offset = 0;
  uint64_t size = 0;
  Binding(const Buffer& b) : buffer(&b) {}  // NOLINT: implicit by design, so {a, b, c} reads well
  Binding(const Buffer& b, uint64_t off, uint64_t sz) : buffer(&b), offset(off), size(sz) {}
  // A binding number the kernel leaves undeclared (a snippet variant that binds less): not bound.
  Binding(std::nullptr_t) : buffer(nullptr) {}  // NOLINT: implicit, as above
};

class BindGroup {
 public:
  BindGroup() = default;
  explicit BindGroup(WGPUBindGroup g, std::string entries = {}) : g_(g), entries_(std::move(entries)) {}
  BindGroup(BindGroup&& o) noexcept : g_(o.g_), entries_(std::move(o.entries_)) { o.g_ = nullptr; }
  BindGroup& operator=(BindGroup&& o) noexcept;
  BindGroup(const BindGroup&) = delete;
  BindGroup& operator=(const BindGroup&) = delete;
  ~BindGroup();
  WGPUBindGroup get() const { return g_; }
  // What it binds, "0=state.x_a 2=blk.0.attn_qkv@0+4096 ...", for dispatch traces (Recorder::trace).
  const std::string& entries() const { return entries_; }

 private:
  WGPUBindGroup g_ = nullptr;
  std::string entries_;
};

constexpr WGPUBufferUsage kStorage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc;
constexpr WGPUBufferUsage kUniform = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
constexpr WGPUBufferUsage kReadback = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;

class Device {
 public:
  struct Options {
    std::string adapter = "auto";  // auto (discrete GPU if present, else any), discrete, cpu
    bool timestamps = false;       // request timestamp queries (can cost speed on some drivers)
    bool robust = false;           // keep Dawn's bounds clamps and workgroup zeroing (also ZTVM_GPU_ROBUST=1)
  };
  Device() : Device(Options{}) {}
  explicit Device(const Options& opts);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const AdapterInfo& info() const { return info_; }
  const WGPULimits& limits() const { return info_.limits; }
  uint64_t max_binding_size() const { return info_.limits.maxStorageBufferBindingSize; }
  WGPUDevice get() const { return device_; }
  WGPUQueue queue() const { return queue_; }
  WGPUInstance instance() const { return instance_; }

  Buffer buffer(const std::string& label, uint64_t size, WGPUBufferUsage usage = kStorage);
  void write(const Buffer& b, const void* data, uint64_t size, uint64_t offset = 0);
  // Blocking read of [offset, offset+size) through a reused staging buffer (tests, logits; not the token loop).
  std::vector<uint8_t> read(const Buffer& b, uint64_t offset, uint64_t size);
  template <class T>
  std::vector<T> read_as(const Buffer& b, uint64_t count, uint64_t offset = 0) {
    auto bytes = read(b, offset, count * sizeof(T));
    std::vector<T> out(count);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  // Compiles WGSL into a pipeline labelled `label`; compile errors throw GpuError with the messages.
  Pipeline pipeline(const std::string& label, const std::string& wgsl,
                    const std::map<std::string, double>& constants = {});
  BindGroup bind(const Pipeline& p, const std::vector<Binding>& bindings, const std::string& label);

  void submit(WGPUCommandBuffer cb);
  // Waits for all submitted work; throws GpuError on timeout, device loss or a captured Dawn error.
  void wait_idle(double timeout_s = 120);
  // Waits for one future (map, queue done, ...), throwing on timeout.
  void wait(WGPUFuture f, const char* what, double timeout_s = 120);
  // Throws if Dawn reported an uncaptured error since the last check, or the device is lost (every
  // check after a loss throws: nothing the GPU returns can be trusted again).
  void check();
  bool lost() const { return lost_; }
  // Fault injection for tests: Dawn loses the device as a driver reset would (wgpuDeviceForceLoss).
  void force_loss(const std::string& why);
  bool timestamps_enabled() const { return timestamps_; }
  bool robust() const { return robust_; }
  // While set, Recorders time every dispatch (see profiler.h).
  void set_profiler(class Profiler* p) { profiler_ = p; }
  class Profiler* profiler() const { return profiler_; }
  // Knockouts (`ztvm bench --knockout`): Recorders leave out every dispatch of these kernel roles, so
  // the output is wrong and the time saved is what the role costs in the stream; counts those left out.
  void set_knockout(std::set<std::string> roles) { knockout_ = std::move(roles), knocked_out_ = 0; }
  bool knock_out(const std::string& role) {
    if (knockout_.empty() || !knockout_.count(role)) return false;
    knocked_out_++;
    return true;
  }
  uint64_t knocked_out() const { return knocked_out_; }

 private:
  static void on_uncaptured_error(const WGPUDevice*, uint32_t type, WGPUStringView msg, void* self, void*);
  static void on_device_lost(const WGPUDevice*, uint32_t reason, WGPUStringView msg, void* self, void*);
  void record_error(const std::string& what);
  // Pops the error scope pushed before a call: the error's message, or nothing where the call passed.
  std::optional<std::string> pop_error_scope(const char* what, double timeout_s);
  static void on_log(uint32_t type, WGPUStringView msg, void* self, void*);

  WGPUInstance instance_ = nullptr;
  WGPUAdapter adapter_ = nullptr;
  WGPUDevice device_ = nullptr;
  WGPUQueue queue_ = nullptr;
  AdapterInfo info_;
  Buffer staging_;  // grows to the largest read
  std::mutex err_mu_;
  std::vector<std::string> errors_;
  std::atomic<bool> has_error_{false};
  std::atomic<bool> lost_{false};
  std::string lost_msg_;  // under err_mu_
  bool timestamps_ = false;
  bool robust_ = false;
  uint64_t slack_ = 0;  // bytes allocated past each buffer's size when bounds are not clamped
  class Profiler* profiler_ = nullptr;
  std::set<std::string> knockout_;
  uint64_t knocked_out_ = 0;
  // ZTVM_DUMP_SPIRV=DIR: each pipeline's SPIR-V as Dawn generated it, DIR/NNN.spvasm, listed with its
  // kernel's label in DIR/index.tsv (for tools/shader-stats).
  std::string dump_dir_, dump_label_;
  int dump_seq_ = 0;
};

std::string to_string(WGPUStringView v);

}  // namespace ztvm::gpu
