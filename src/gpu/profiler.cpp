#include "gpu/profiler.h"

#include <algorithm>
#include <cstdio>

namespace ztvm::gpu {

Profiler::Profiler(Device& dev, bool by_pipeline, uint32_t max_dispatches)
    : dev_(dev), by_pipeline_(by_pipeline), cap_(max_dispatches) {
  if (!dev.timestamps_enabled()) throw GpuError("profiling needs the timestamp-query feature, which this device lacks");
  WGPUQuerySetDescriptor d{};
  d.label = WGPUStringView{"profiler.queries", WGPU_STRLEN};
  d.type = WGPUQueryType_Timestamp;
  d.count = 2 * cap_;
  qs_ = wgpuDeviceCreateQuerySet(dev.get(), &d);
  resolve_buf_ = dev.buffer("profiler.resolve", 16ull * cap_, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc);
}

Profiler::~Profiler() {
  if (qs_) {
    wgpuQuerySetDestroy(qs_);
    wgpuQuerySetRelease(qs_);
  }
}

WGPUPassTimestampWrites Profiler::next(const std::string& role, uint64_t bytes) {
  if (pending_.size() >= cap_) throw GpuError("profiler: more than " + std::to_string(cap_) + " dispatches in one submit");
  uint32_t i = (uint32_t)pending_.size();
  pending_.push_back({role, bytes});
  WGPUPassTimestampWrites tw{};
  tw.querySet = qs_;
  tw.beginningOfPassWriteIndex = 2 * i;
  tw.endOfPassWriteIndex = 2 * i + 1;
  return tw;
}

void Profiler::resolve(WGPUCommandEncoder enc) {
  if (!pending_.empty()) wgpuCommandEncoderResolveQuerySet(enc, qs_, 0, 2 * (uint32_t)pending_.size(), resolve_buf_.get(), 0);
}

void Profiler::collect() {
  if (pending_.empty()) return;
  dev_.wait_idle();
  std::vector<uint64_t> t = dev_.read_as<uint64_t>(resolve_buf_, 2 * pending_.size());
  for (size_t i = 0; i < pending_.size(); i++) {
    Total& tot = totals_[pending_[i].role];
    tot.count++;
    tot.bytes += pending_[i].bytes;
    tot.ns += t[2 * i + 1] > t[2 * i] ? (double)(t[2 * i + 1] - t[2 * i]) : 0.0;
  }
  pending_.clear();
}

std::string Profiler::report(uint32_t steps) const {
  std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.ns > b.second.ns; });
  double all = 0;
  for (auto& r : rows) all += r.second.ns;
  // Pipeline names are long: last on their line.
  std::string out = by_pipeline_ ? "dispatches   us/step   share     GB/s  pipeline\n"
                                 : "role                         dispatches   us/step   share     GB/s\n";
  char line[256];
  for (auto& [role, t] : rows) {
    const double n = (double)t.count / steps, us = t.ns / 1e3 / steps, share = 100 * t.ns / all;
    const double gbps = t.ns > 0 ? t.bytes / t.ns : 0.0;
    if (by_pipeline_) {
      std::snprintf(line, sizeof line, "%10.1f %9.1f %6.1f%% %8.1f  ", n, us, share, gbps);
      out += line + role + "\n";
    } else {
      std::snprintf(line, sizeof line, "%-28s %10.1f %9.1f %6.1f%% %8.1f\n", role.c_str(), n, us, share, gbps);
      out += line;
    }
  }
  std::snprintf(line, sizeof line, "%-28s %10s %9.1f\n", "total (GPU time in kernels)", "", all / 1e3 / steps);
  return out + line;
}

}  // namespace ztvm::gpu
