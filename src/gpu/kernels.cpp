#include "gpu/kernels.h"

#include <regex>
#include <set>
#include <sstream>

#include "gpu/kernel_source.h"
#include "gpu/profiler.h"

namespace ztvm::gpu {

std::string KernelKey::label() const {
  std::string s = kernel;
  if (!includes.empty()) {
    s += "[";
    for (auto& [k, v] : includes) s += (s.back() == '[' ? "" : ",") + v;
    s += "]";
  }
  if (!constants.empty()) {
    s += "{";
    for (auto& [k, v] : constants) {
      std::ostringstream o;
      o << v;
      s += (s.back() == '{' ? "" : ",") + k + "=" + o.str();
    }
    s += "}";
  }
  return s;
}

bool KernelKey::operator<(const KernelKey& o) const {
  return std::tie(kernel, includes, constants) < std::tie(o.kernel, o.includes, o.constants);
}

static const char* find_source(const std::string& name) {
  for (const KernelSource& k : embedded_kernels())
    if (name == k.name) return k.source;
  throw GpuError("no kernel source named '" + name + "' (kernels/" + name + ".wgsl)");
}

// A second copy of a weight snippet, for a kernel that holds two weight types (matvec.wgsl on a
// two-type QKV): the names a weight snippet defines or reads, renamed so the copies do not collide.
static std::string second_copy(const std::string& line) {
  static const std::regex w_fn("\\bw_"), w_buf("\\bw\\["), unit("\\bWUnit\\b"), consts("\\bW_");
  std::string r = std::regex_replace(line, w_fn, "w2_");
  r = std::regex_replace(r, w_buf, "w2[");
  r = std::regex_replace(r, unit, "WUnit2");
  return std::regex_replace(r, consts, "W2_");
}

std::string Kernels::compose(const std::string& kernel, const std::map<std::string, std::string>& includes) {
  std::string out;
  std::set<std::string> done;
  // Expands `//!include NAME` lines depth-first, each snippet once. An include bound to `NAME:2` is
  // NAME's second copy (second_copy), with its own includes.
  auto expand = [&](auto&& self, const std::string& name, bool second) -> void {
    if (!done.insert(second ? name + ":2" : name).second) return;
    std::istringstream in(find_source(name));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("//!include ", 0) == 0) {
        std::string inc = line.substr(11);
        while (!inc.empty() && (inc.back() == ' ' || inc.back() == '\r')) inc.pop_back();
        std::string fallback = inc;  // `//!include NAME DEFAULT`: DEFAULT where the key binds no NAME
        if (const size_t sp = inc.find(' '); sp != std::string::npos) fallback = inc.substr(sp + 1), inc.resize(sp);
        auto it = includes.find(inc);
        std::string target = it != includes.end() ? it->second : fallback;
        const bool marked = target.size() > 2 && target.compare(target.size() - 2, 2, ":2") == 0;
        if (marked) target.resize(target.size() - 2);
        self(self, target, second || marked);
      } else {
        out += second ? second_copy(line) : line;
        out += '\n';
      }
    }
  };
  expand(expand, kernel, false);
  // WGSL wants `enable` directives before any declaration: a snippet's go to the top, once each.
  std::string head, body;
  std::set<std::string> enables;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("enable ", 0) == 0) {
      if (enables.insert(line).second) head += line + '\n';
    } else {
      body += line + '\n';
    }
  }
  return head + body;
}

const Pipeline& Kernels::get(const KernelKey& key) {
  auto it = cache_.find(key);
  if (it != cache_.end()) return *it->second;
  auto p = std::make_unique<Pipeline>(dev_.pipeline(key.label(), compose(key.kernel, key.includes), key.constants));
  return *cache_.emplace(key, std::move(p)).first->second;
}

Recorder::Recorder(Device& dev, const char* label) : dev_(dev) {
  WGPUCommandEncoderDescriptor d{};
  d.label = WGPUStringView{label, WGPU_STRLEN};
  enc_ = wgpuDeviceCreateCommandEncoder(dev_.get(), &d);
  max_dim_ = dev_.limits().maxComputeWorkgroupsPerDimension;
}

Recorder::~Recorder() {
  if (pass_) {
    wgpuComputePassEncoderEnd(pass_);
    wgpuComputePassEncoderRelease(pass_);
  }
  if (enc_) wgpuCommandEncoderRelease(enc_);
}

void Recorder::begin_pass() {
  if (!pass_) pass_ = wgpuCommandEncoderBeginComputePass(enc_, nullptr);
}

void Recorder::end_pass() {
  if (pass_) {
    wgpuComputePassEncoderEnd(pass_);
    wgpuComputePassEncoderRelease(pass_);
    pass_ = nullptr;
  }
}

void Recorder::dispatch(const Pipeline& p, const BindGroup& g, uint32_t groups_x, uint32_t groups_y,
                        const std::string& role, uint64_t bytes) {
  if (groups_x == 0 || groups_y == 0 || dev_.knock_out(role)) return;
  if (trace_)
    trace_->push_back(p.label() + " x" + std::to_string(groups_x) + (groups_y > 1 ? "x" + std::to_string(groups_y) : "") +
                      " [" + g.entries() + "] " + role + " " + std::to_string(bytes));
  if (groups_x > max_dim_) {  // fold into 2-D: the kernel reads the flat index back
    if (groups_y != 1) throw GpuError("dispatch of '" + p.label() + "' too large in both dimensions");
    groups_y = (groups_x + max_dim_ - 1) / max_dim_;
    groups_x = (groups_x + groups_y - 1) / groups_y;
  }
  if (Profiler* prof = dev_.profiler()) {  // its own pass, timed
    end_pass();
    WGPUPassTimestampWrites tw = prof->next(role.empty() || prof->by_pipeline() ? p.label() : role, bytes);
    WGPUComputePassDescriptor d{};
    d.timestampWrites = &tw;
    pass_ = wgpuCommandEncoderBeginComputePass(enc_, &d);
  }
  begin_pass();
  wgpuComputePassEncoderSetPipeline(pass_, p.get());
  wgpuComputePassEncoderSetBindGroup(pass_, 0, g.get(), 0, nullptr);
  wgpuComputePassEncoderDispatchWorkgroups(pass_, groups_x, groups_y, 1);
  n_dispatch_++;
}

void Recorder::copy(const Buffer& src, uint64_t src_off, const Buffer& dst, uint64_t dst_off, uint64_t size) {
  if (trace_)
    trace_->push_back("copy " + src.label() + "@" + std::to_string(src_off) + " -> " + dst.label() + "@" +
                      std::to_string(dst_off) + " +" + std::to_string(size));
  end_pass();
  wgpuCommandEncoderCopyBufferToBuffer(enc_, src.get(), src_off, dst.get(), dst_off, size);
}

void Recorder::submit() {
  end_pass();
  if (Profiler* prof = dev_.profiler()) prof->resolve(enc_);
  WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc_, nullptr);
  wgpuCommandEncoderRelease(enc_);
  enc_ = nullptr;
  dev_.submit(cb);
  if (Profiler* prof = dev_.profiler()) prof->collect();
}

}  // namespace ztvm::gpu
