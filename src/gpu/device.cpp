#include "gpu/device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace ztvm::gpu {

std::string to_string(WGPUStringView v) {
  if (!v.data) return "";
  return v.length == WGPU_STRLEN ? std::string(v.data) : std::string(v.data, v.length);
}
static WGPUStringView sv(const std::string& s) { return WGPUStringView{s.data(), s.size()}; }
static WGPUStringView sv(const char* s) { return WGPUStringView{s, WGPU_STRLEN}; }  // literals: no temporary

// ---------------------------------------------------------------- RAII handles
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (h_) wgpuBufferRelease(h_);
    h_ = o.h_, size_ = o.size_, label_ = std::move(o.label_);
    o.h_ = nullptr, o.size_ = 0;
  }
  return *this;
}
Buffer::~Buffer() {
  if (h_) wgpuBufferRelease(h_);
}

Pipeline::Pipeline(WGPUComputePipeline p, std::string label) : p_(p), label_(std::move(label)) {
  layout_ = wgpuComputePipelineGetBindGroupLayout(p_, 0);
}
Pipeline& Pipeline::operator=(Pipeline&& o) noexcept {
  if (this != &o) {
    this->~Pipeline();
    p_ = o.p_, layout_ = o.layout_, label_ = std::move(o.label_);
    o.p_ = nullptr, o.layout_ = nullptr;
  }
  return *this;
}
Pipeline::~Pipeline() {
  if (layout_) wgpuBindGroupLayoutRelease(layout_);
  if (p_) wgpuComputePipelineRelease(p_);
  layout_ = nullptr, p_ = nullptr;
}

BindGroup& BindGroup::operator=(BindGroup&& o) noexcept {
  if (this != &o) {
    if (g_) wgpuBindGroupRelease(g_);
    g_ = o.g_, o.g_ = nullptr;
    entries_ = std::move(o.entries_);
  }
  return *this;
}
BindGroup::~BindGroup() {
  if (g_) wgpuBindGroupRelease(g_);
}

// ---------------------------------------------------------------- names of enum values
static const char* backend_name(uint32_t b) {
  static const char* n[] = {"Undefined", "Null", "WebGPU", "D3D11", "D3D12", "Metal", "Vulkan", "OpenGL", "OpenGLES"};
  return b < 9 ? n[b] : "?";
}
static const char* adapter_type_name(uint32_t t) {
  static const char* n[] = {"?", "DiscreteGPU", "IntegratedGPU", "CPU", "Unknown"};
  return t < 5 ? n[t] : "?";
}
static const char* error_type_name(uint32_t t) {
  static const char* n[] = {"?", "NoError", "Validation", "OutOfMemory", "Internal", "Unknown"};
  return t < 6 ? n[t] : "?";
}
static std::string feature_name(uint32_t f) {
  switch (f) {
    case WGPUFeatureName_TimestampQuery: return "timestamp-query";
    case WGPUFeatureName_ShaderF16: return "shader-f16";
    case WGPUFeatureName_Subgroups: return "subgroups";
    case WGPUFeatureName_CoreFeaturesAndLimits: return "core-features-and-limits";
    case WGPUFeatureName_ChromiumExperimentalTimestampQueryInsidePasses: return "timestamp-query-inside-passes";
    case WGPUFeatureName_ImplicitDeviceSynchronization: return "implicit-device-synchronization";
    case WGPUFeatureName_HostMappedPointer: return "host-mapped-pointer";
    case WGPUFeatureName_ChromiumExperimentalSubgroupMatrix: return "subgroup-matrix";
    default: {
      char b[32];
      std::snprintf(b, sizeof b, "0x%x", f);
      return b;
    }
  }
}
static const char* wgsl_feature_name(uint32_t v) {
  static const char* n[] = {"?", "readonly_and_readwrite_storage_textures", "packed_4x8_integer_dot_product",
                            "unrestricted_pointer_parameters", "pointer_composite_access", "sized_binding_array"};
  return v < 6 ? n[v] : "other";
}

// ---------------------------------------------------------------- device set-up
void Device::record_error(const std::string& what) {
  std::lock_guard<std::mutex> lock(err_mu_);
  errors_.push_back(what);
  has_error_ = true;
}
void Device::on_uncaptured_error(const WGPUDevice*, uint32_t type, WGPUStringView msg, void* self, void*) {
  static_cast<Device*>(self)->record_error(std::string("WebGPU ") + error_type_name(type) + " error: " + to_string(msg));
}
void Device::on_log(uint32_t, WGPUStringView msg, void* self, void*) {
  auto* d = static_cast<Device*>(self);
  const std::string text = to_string(msg);
  if (d->dump_dir_.empty() || text.find("SPIRV disassembly") == std::string::npos) return;
  char name[16];
  std::snprintf(name, sizeof name, "%03d", d->dump_seq_++);
  std::ofstream(d->dump_dir_ + "/" + name + ".spvasm") << text;
  std::ofstream(d->dump_dir_ + "/index.tsv", std::ios::app) << name << "\t" << d->dump_label_ << "\n";
}
void Device::on_device_lost(const WGPUDevice*, uint32_t reason, WGPUStringView msg, void* self, void*) {
  if (reason == 2 /*Destroyed*/ || reason == 3 /*CallbackCancelled*/) return;
  auto* d = static_cast<Device*>(self);
  const std::string what = "the GPU device was lost (reason " + std::to_string(reason) + "): " + to_string(msg);
  {
    std::lock_guard<std::mutex> lock(d->err_mu_);
    d->lost_msg_ = what;
  }
  d->lost_ = true;
  d->record_error(what);
}

void Device::force_loss(const std::string& why) {
  wgpuDeviceForceLoss(device_, 1 /*Unknown*/, sv(why));
  wgpuInstanceProcessEvents(instance_);
}

void Device::wait(WGPUFuture f, const char* what, double timeout_s) {
  WGPUFutureWaitInfo wi{f, 0};
  uint32_t st = wgpuInstanceWaitAny(instance_, 1, &wi, (uint64_t)(timeout_s * 1e9));
  if (st == WGPUWaitStatus_TimedOut) throw GpuError(std::string("timed out after ") + std::to_string((int)timeout_s) + " s waiting for " + what);
  if (st != WGPUWaitStatus_Success || !wi.completed) throw GpuError(std::string("waiting for ") + what + " failed (status " + std::to_string(st) + ")");
}

static bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}
// "a,b,-c": toggles a and b on, c off.
static void add_toggles(const std::string& list, std::vector<std::string>& enable, std::vector<std::string>& disable) {
  for (size_t at = 0; at <= list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    std::string name = list.substr(at, comma - at);
    if (name.size() > 1 && name[0] == '-') disable.push_back(name.substr(1));
    else if (!name.empty()) enable.push_back(name);
    at = comma + 1;
  }
}

Device::Device(const Options& opts) {
  // allow_unsafe_apis exposes experimental features; timedWaitAnyEnable makes every wait take a timeout.
  const char* inst_toggles[] = {"allow_unsafe_apis"};
  WGPUDawnTogglesDescriptor tog{};
  tog.chain.sType = WGPUSType_DawnTogglesDescriptor;
  tog.enabledToggleCount = 1;
  tog.enabledToggles = inst_toggles;
  WGPUInstanceDescriptor idesc{};
  idesc.nextInChain = &tog.chain;
  idesc.capabilities.timedWaitAnyEnable = 1;
  instance_ = wgpuCreateInstance(&idesc);
  if (!instance_) throw GpuError("could not create a WebGPU instance");

  WGPURequestAdapterOptions ao{};
  ao.featureLevel = WGPUFeatureLevel_Core;
  ao.backendType = WGPUBackendType_Vulkan;
  ao.powerPreference = opts.adapter == "cpu" ? WGPUPowerPreference_LowPower : WGPUPowerPreference_HighPerformance;
  struct AdapterResult { WGPUAdapter a = nullptr; std::string msg; } ar;
  WGPURequestAdapterCallbackInfo aci{};
  aci.mode = WGPUCallbackMode_WaitAnyOnly;
  aci.userdata1 = &ar;
  aci.callback = [](uint32_t status, WGPUAdapter a, WGPUStringView msg, void* ud, void*) {
    auto* r = static_cast<AdapterResult*>(ud);
    if (status == WGPURequestAdapterStatus_Success) r->a = a;
    else r->msg = to_string(msg);
  };
  wait(wgpuInstanceRequestAdapter(instance_, &ao, aci), "a GPU adapter", 60);
  if (!ar.a) throw GpuError("no WebGPU adapter (is a Vulkan driver installed? lavapipe: mesa-vulkan-drivers >= 25): " + ar.msg);
  adapter_ = ar.a;

  WGPUAdapterInfo ai{};
  wgpuAdapterGetInfo(adapter_, &ai);
  info_.device = to_string(ai.device), info_.vendor = to_string(ai.vendor);
  info_.architecture = to_string(ai.architecture), info_.description = to_string(ai.description);
  info_.backend = backend_name(ai.backendType), info_.adapter_type = adapter_type_name(ai.adapterType);
  info_.vendor_id = ai.vendorID, info_.device_id = ai.deviceID;
  info_.subgroup_min = ai.subgroupMinSize, info_.subgroup_max = ai.subgroupMaxSize;
  uint32_t backend = ai.backendType, type = ai.adapterType;
  wgpuAdapterInfoFreeMembers(ai);
  if (backend == WGPUBackendType_Null) throw GpuError("Dawn returned its Null adapter: no usable Vulkan device");
  if (opts.adapter == "discrete" && type != WGPUAdapterType_DiscreteGPU)
    throw GpuError("asked for a discrete GPU but the adapter is " + info_.device + " (" + info_.adapter_type + ")");
  if (opts.adapter == "cpu" && type != WGPUAdapterType_CPU)
    throw GpuError("asked for the CPU adapter but got " + info_.device + " (" + info_.adapter_type + ")");

  WGPUSupportedFeatures sf{};
  wgpuAdapterGetFeatures(adapter_, &sf);
  std::vector<uint32_t> feats(sf.features, sf.features + sf.featureCount);
  wgpuSupportedFeaturesFreeMembers(sf);
  for (uint32_t f : feats) info_.features.push_back(feature_name(f));
  auto has = [&](uint32_t f) { return std::find(feats.begin(), feats.end(), f) != feats.end(); };
  info_.shader_f16 = has(WGPUFeatureName_ShaderF16);
  info_.subgroups = has(WGPUFeatureName_Subgroups);
  info_.timestamps = has(WGPUFeatureName_TimestampQuery);
  WGPUSupportedWGSLLanguageFeatures wl{};
  if (wgpuInstanceGetWGSLLanguageFeatures(instance_, &wl) == WGPUStatus_Success) {
    for (size_t i = 0; i < wl.featureCount; i++) info_.wgsl_features.push_back(wgsl_feature_name(wl.features[i]));
    wgpuSupportedWGSLLanguageFeaturesFreeMembers(wl);
  }
  wgpuAdapterGetLimits(adapter_, &info_.limits);
  info_.limits.nextInChain = nullptr;

  std::vector<uint32_t> req;
  if (info_.subgroups) req.push_back(WGPUFeatureName_Subgroups);
  timestamps_ = opts.timestamps && info_.timestamps;
  if (timestamps_) req.push_back(WGPUFeatureName_TimestampQuery);
  // Dawn toggles. Timestamps in real nanoseconds (Dawn quantizes them by default). Unless asked to be
  // robust, no bounds clamp on every buffer access and no zeroing of workgroup memory at every
  // dispatch's start: our kernels index in bounds and write workgroup memory before reading it (the
  // suite runs this way), and on the H200 this gave decode +2.5..+6.7% (bench/EXPERIMENTS.md).
  // Kernels that load a word past a block's end read into slack_ bytes allocated past every buffer.
  std::vector<std::string> enable, disable = {"timestamp_quantization"};
  robust_ = opts.robust || env_flag("ZTVM_GPU_ROBUST");
  if (!robust_) enable.insert(enable.end(), {"disable_robustness", "disable_workgroup_init"});
  if (const char* t = std::getenv("ZTVM_GPU_TOGGLES")) add_toggles(t, enable, disable);  // for A/Bs: "a,b,-c"
  if (const char* dir = std::getenv("ZTVM_DUMP_SPIRV"); dir && *dir) {
    dump_dir_ = dir;
    std::error_code ec;
    std::filesystem::create_directories(dump_dir_, ec);
    if (!std::ofstream(dump_dir_ + "/index.tsv", std::ios::trunc))
      throw GpuError("ZTVM_DUMP_SPIRV: cannot write into " + dump_dir_);
    enable.push_back("dump_shaders");
  }
  if (std::find(enable.begin(), enable.end(), "disable_robustness") != enable.end()) slack_ = 16;
  std::vector<const char*> en_toggles, dis_toggles;
  for (const auto& n : enable) en_toggles.push_back(n.c_str());
  for (const auto& n : disable) dis_toggles.push_back(n.c_str());
  WGPUDawnTogglesDescriptor dtog{};
  dtog.chain.sType = WGPUSType_DawnTogglesDescriptor;
  dtog.enabledToggleCount = en_toggles.size();
  dtog.enabledToggles = en_toggles.data();
  dtog.disabledToggleCount = dis_toggles.size();
  dtog.disabledToggles = dis_toggles.data();
  WGPULimits want = info_.limits;  // everything the adapter offers (large bindings matter)
  WGPUDeviceDescriptor dd{};
  dd.nextInChain = &dtog.chain;
  dd.label = sv("ztvm");
  dd.requiredFeatureCount = req.size();
  dd.requiredFeatures = req.data();
  dd.requiredLimits = &want;
  dd.defaultQueue.label = sv("ztvm.queue");
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_device_lost;
  dd.deviceLostCallbackInfo.userdata1 = this;
  dd.uncapturedErrorCallbackInfo.callback = on_uncaptured_error;
  dd.uncapturedErrorCallbackInfo.userdata1 = this;
  struct DeviceResult { WGPUDevice d = nullptr; std::string msg; } dr;
  WGPURequestDeviceCallbackInfo dci{};
  dci.mode = WGPUCallbackMode_WaitAnyOnly;
  dci.userdata1 = &dr;
  dci.callback = [](uint32_t status, WGPUDevice d, WGPUStringView msg, void* ud, void*) {
    auto* r = static_cast<DeviceResult*>(ud);
    if (status == WGPURequestDeviceStatus_Success) r->d = d;
    else r->msg = to_string(msg);
  };
  wait(wgpuAdapterRequestDevice(adapter_, &dd, dci), "the GPU device", 60);
  if (!dr.d) throw GpuError("could not create the WebGPU device on " + info_.device + ": " + dr.msg);
  device_ = dr.d;
  queue_ = wgpuDeviceGetQueue(device_);
  if (!dump_dir_.empty()) wgpuDeviceSetLoggingCallback(device_, WGPULoggingCallbackInfo{nullptr, on_log, this, nullptr});
}

Device::~Device() {
  staging_ = Buffer();
  if (queue_) wgpuQueueRelease(queue_);
  if (device_) {
    wgpuDeviceDestroy(device_);
    wgpuDeviceRelease(device_);
  }
  if (adapter_) wgpuAdapterRelease(adapter_);
  if (instance_) wgpuInstanceRelease(instance_);
}

void Device::check() {
  wgpuInstanceProcessEvents(instance_);
  if (!has_error_ && !lost_) return;
  std::lock_guard<std::mutex> lock(err_mu_);
  if (lost_) {
    errors_.clear();
    has_error_ = false;
    throw GpuError(lost_msg_);
  }
  std::string msg = errors_.empty() ? "unknown GPU error" : errors_.front();
  if (errors_.size() > 1) msg += " (+" + std::to_string(errors_.size() - 1) + " more)";
  errors_.clear();
  has_error_ = false;
  throw GpuError(msg);
}

// ---------------------------------------------------------------- buffers
Buffer Device::buffer(const std::string& label, uint64_t size, WGPUBufferUsage usage) {
  size = (size + 15) & ~uint64_t(15);  // copies work in 4-byte units; weights are bound as 16-byte words
  if (size == 0) size = 16;
  if (size + slack_ > info_.limits.maxBufferSize)
    throw GpuError("buffer '" + label + "' needs " + std::to_string(size) + " bytes; this GPU allows " +
                   std::to_string(info_.limits.maxBufferSize));
  WGPUBufferDescriptor d{};
  d.label = sv(label);
  d.usage = usage;
  d.size = size + slack_;  // bound and checked as `size`
  wgpuDevicePushErrorScope(device_, WGPUErrorFilter_OutOfMemory);
  WGPUBuffer b = wgpuDeviceCreateBuffer(device_, &d);
  const std::optional<std::string> err = pop_error_scope("buffer allocation", 60);
  if (!b || err)
    throw GpuError("out of GPU memory allocating '" + label + "' (" + std::to_string(size >> 20) + " MiB): " + err.value_or(""));
  return Buffer(b, size, label);
}

void Device::write(const Buffer& b, const void* data, uint64_t size, uint64_t offset) {
  if (offset + size > b.size())
    throw GpuError("write of " + std::to_string(size) + " bytes at " + std::to_string(offset) + " overruns '" + b.label() + "'");
  if (size % 4 == 0) {
    wgpuQueueWriteBuffer(queue_, b.get(), offset, data, size);
  } else {  // WebGPU writes whole 4-byte words
    std::vector<uint8_t> padded((size + 3) & ~uint64_t(3), 0);
    std::memcpy(padded.data(), data, size);
    wgpuQueueWriteBuffer(queue_, b.get(), offset, padded.data(), padded.size());
  }
}

std::vector<uint8_t> Device::read(const Buffer& b, uint64_t offset, uint64_t size) {
  uint64_t aligned = (size + 3) & ~uint64_t(3);
  if (offset + aligned > b.size()) throw GpuError("read past the end of '" + b.label() + "'");
  if (staging_.size() < aligned) staging_ = buffer("readback.staging", std::max<uint64_t>(aligned, 1 << 16), kReadback);
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(device_, nullptr);
  wgpuCommandEncoderCopyBufferToBuffer(enc, b.get(), offset, staging_.get(), 0, aligned);
  WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, nullptr);
  wgpuCommandEncoderRelease(enc);
  submit(cb);
  struct R { uint32_t status = 0; std::string msg; } r;
  WGPUBufferMapCallbackInfo mi{};
  mi.mode = WGPUCallbackMode_WaitAnyOnly;
  mi.userdata1 = &r;
  mi.callback = [](uint32_t status, WGPUStringView msg, void* ud, void*) {
    static_cast<R*>(ud)->status = status;
    static_cast<R*>(ud)->msg = to_string(msg);
  };
  wait(wgpuBufferMapAsync(staging_.get(), WGPUMapMode_Read, 0, aligned, mi), ("reading '" + b.label() + "'").c_str());
  check();
  if (r.status != WGPUMapAsyncStatus_Success) throw GpuError("mapping the readback of '" + b.label() + "' failed: " + r.msg);
  std::vector<uint8_t> out(size);
  std::memcpy(out.data(), wgpuBufferGetConstMappedRange(staging_.get(), 0, aligned), size);
  wgpuBufferUnmap(staging_.get());
  return out;
}

void Device::submit(WGPUCommandBuffer cb) {
  wgpuQueueSubmit(queue_, 1, &cb);
  wgpuCommandBufferRelease(cb);
}

void Device::wait_idle(double timeout_s) {
  WGPUQueueWorkDoneCallbackInfo ci{};
  ci.mode = WGPUCallbackMode_WaitAnyOnly;
  ci.callback = [](uint32_t, void*, void*) {};
  wait(wgpuQueueOnSubmittedWorkDone(queue_, ci), "the GPU queue", timeout_s);
  check();
}

std::optional<std::string> Device::pop_error_scope(const char* what, double timeout_s) {
  struct R { uint32_t type = 0; std::string msg; } r;
  WGPUPopErrorScopeCallbackInfo ci{};
  ci.mode = WGPUCallbackMode_WaitAnyOnly;
  ci.userdata1 = &r;
  ci.callback = [](uint32_t, uint32_t type, WGPUStringView msg, void* ud, void*) {
    static_cast<R*>(ud)->type = type;
    static_cast<R*>(ud)->msg = to_string(msg);
  };
  wait(wgpuDevicePopErrorScope(device_, ci), what, timeout_s);
  if (r.type == 0 || r.type == WGPUErrorType_NoError) return std::nullopt;
  return r.msg;
}

// ---------------------------------------------------------------- pipelines
Pipeline Device::pipeline(const std::string& label, const std::string& wgsl, const std::map<std::string, double>& constants) {
  wgpuDevicePushErrorScope(device_, WGPUErrorFilter_Validation);
  WGPUShaderSourceWGSL src{};
  src.chain.sType = WGPUSType_ShaderSourceWGSL;
  src.code = WGPUStringView{wgsl.data(), wgsl.size()};
  WGPUShaderModuleDescriptor md{};
  md.nextInChain = &src.chain;
  md.label = sv(label);
  WGPUShaderModule mod = wgpuDeviceCreateShaderModule(device_, &md);
  std::string diagnostics;
  WGPUCompilationInfoCallbackInfo ci{};
  ci.mode = WGPUCallbackMode_WaitAnyOnly;
  ci.userdata1 = &diagnostics;
  ci.callback = [](uint32_t status, const WGPUCompilationInfo* info, void* ud, void*) {
    if (status != WGPUCompilationInfoRequestStatus_Success || !info) return;
    for (size_t i = 0; i < info->messageCount; i++) {
      const WGPUCompilationMessage& m = info->messages[i];
      if (m.type != 1) continue;  // errors only
      *static_cast<std::string*>(ud) += "\n  line " + std::to_string(m.lineNum) + ":" + std::to_string(m.linePos) + ": " + to_string(m.message);
    }
  };
  wait(wgpuShaderModuleGetCompilationInfo(mod, ci), "shader compilation", 120);

  std::vector<WGPUConstantEntry> consts;
  for (auto& [k, v] : constants) consts.push_back(WGPUConstantEntry{nullptr, sv(k), v});
  WGPUComputePipelineDescriptor pd{};
  pd.label = sv(label);
  pd.compute.module = mod;
  pd.compute.entryPoint = sv("main");
  pd.compute.constantCount = consts.size();
  pd.compute.constants = consts.data();
  dump_label_ = label;  // Dawn generates the SPIR-V (and logs it when dumping) in this call
  WGPUComputePipeline p = wgpuDeviceCreateComputePipeline(device_, &pd);
  wgpuShaderModuleRelease(mod);

  const std::optional<std::string> err = pop_error_scope("pipeline creation", 120);
  if (!diagnostics.empty() || err || !p) {
    if (p) wgpuComputePipelineRelease(p);
    throw GpuError("kernel '" + label + "' failed to build:" + (diagnostics.empty() ? " " + err.value_or("") : diagnostics));
  }
  return Pipeline(p, label);
}

BindGroup Device::bind(const Pipeline& p, const std::vector<Binding>& bindings, const std::string& label) {
  std::vector<WGPUBindGroupEntry> e;
  std::string entries;
  for (size_t i = 0; i < bindings.size(); i++) {
    const Binding& b = bindings[i];
    if (!b.buffer) continue;
    entries += (entries.empty() ? "" : " ") + std::to_string(i) + "=" + b.buffer->label();
    if (b.offset || b.size) entries += "@" + std::to_string(b.offset) + "+" + std::to_string(b.size);
    WGPUBindGroupEntry& x = e.emplace_back();
    x = {};
    x.binding = (uint32_t)i;
    x.buffer = b.buffer->get();
    x.offset = b.offset;
    x.size = b.size ? b.size : b.buffer->size() - b.offset;
  }
  WGPUBindGroupDescriptor d{};
  d.label = sv(label);
  d.layout = p.layout();
  d.entryCount = e.size();
  d.entries = e.data();
  wgpuDevicePushErrorScope(device_, WGPUErrorFilter_Validation);
  WGPUBindGroup g = wgpuDeviceCreateBindGroup(device_, &d);
  const std::optional<std::string> err = pop_error_scope("bind group creation", 60);
  if (err) {
    if (g) wgpuBindGroupRelease(g);
    throw GpuError("bind group '" + label + "' for kernel '" + p.label() + "': " + *err);
  }
  return BindGroup(g, std::move(entries));
}

}  // namespace ztvm::gpu
