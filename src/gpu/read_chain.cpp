#include "gpu/read_chain.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "gpu/peak.h"

namespace ztvm::gpu {

// A workgroup's step: 256 threads x 16 bytes.
static constexpr uint64_t kStepBytes = (uint64_t)kPeakThreads * 16;
// Steps a thread takes at most; the aim sets fewer where a dispatch has bytes for enough workgroups.
static constexpr uint32_t kMaxIters = 256;

std::vector<uint64_t> parse_read_chain(const std::string& spec) {
  size_t i = 0;
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("read chain '" + spec + "' at character " + std::to_string(i + 1) + ": " + why);
  };
  auto number = [&]() {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(spec.substr(i), &used);
    } catch (const std::exception&) {
      fail("expected a size in MB");
    }
    if (!std::isfinite(v) || v < 0 || v > 1e6) fail("a size must be 0..1000000 MB");
    i += used;
    return v;
  };
  std::vector<uint64_t> out;
  while (true) {
    uint64_t times = 1;
    const size_t x = spec.find_first_not_of("0123456789", i);
    if (x != std::string::npos && x > i && spec[x] == 'x') {  // a repeat count
      if (x - i > 6) fail("a repeat count must be 1..100000");
      times = std::stoull(spec.substr(i, x - i));
      if (times == 0 || times > 100000) fail("a repeat count must be 1..100000");
      i = x + 1;
    }
    std::vector<uint64_t> group;
    if (i < spec.size() && spec[i] == '[') {
      i++;
      while (true) {
        group.push_back((uint64_t)std::llround(number() * 1e6));
        if (i < spec.size() && spec[i] == ',') { i++; continue; }
        if (i < spec.size() && spec[i] == ']') { i++; break; }
        fail("expected ',' or ']'");
      }
    } else {
      if (i < spec.size() && !std::isdigit((unsigned char)spec[i]) && spec[i] != '.') fail("expected a size in MB");
      group.push_back((uint64_t)std::llround(number() * 1e6));
    }
    for (uint64_t t = 0; t < times; t++) out.insert(out.end(), group.begin(), group.end());
    if (out.size() > 100000) fail("more than 100000 dispatches");
    if (i == spec.size()) break;
    if (spec[i] != '+') fail("expected '+'");
    i++;
  }
  return out;
}

// A dispatch of `size` bytes aiming at `aim` workgroups: steps per thread, then workgroups (the grid
// stays within one dimension, so the probe's stride is the real thread count).
struct Shape {
  uint32_t iters, groups;
};
static Shape shape_of(uint64_t size, uint32_t aim, uint32_t max_dim) {
  const uint64_t steps = std::max<uint64_t>(1, (size + kStepBytes - 1) / kStepBytes);
  uint64_t iters = std::clamp<uint64_t>(steps / std::max<uint32_t>(aim, 1), 1, kMaxIters);
  iters = std::max<uint64_t>(iters, (steps + max_dim - 1) / max_dim);
  return {(uint32_t)iters, (uint32_t)((steps + iters - 1) / iters)};
}

ReadChain::ReadChain(Kernels& k, const std::vector<uint64_t>& sizes) : k_(k), sizes_(sizes) {
  if (sizes.empty()) throw std::invalid_argument("read chain: no dispatches");
  Device& dev = k.device();
  const uint32_t max_dim = dev.info().limits.maxComputeWorkgroupsPerDimension;
  uint64_t most_threads = 0;
  for (size_t i = 0; i < sizes.size(); i++) {
    // Room for the largest rounding any aim makes: up to a step of every thread beyond the size.
    const Shape s = shape_of(sizes[i], 1, max_dim);
    const uint64_t bytes = (uint64_t)s.groups * s.iters * kStepBytes + kMaxIters * kStepBytes;
    if (bytes > dev.max_binding_size())
      throw std::invalid_argument("read chain: a dispatch of " + std::to_string(sizes[i]) +
                                  " bytes is over this device's binding limit");
    bufs_.push_back(dev.buffer("read_chain." + std::to_string(i), bytes));
    fill_read_pattern(dev, bufs_.back());
    most_threads = std::max<uint64_t>(most_threads, (uint64_t)(bytes / kStepBytes) * kPeakThreads);
  }
  out_ = dev.buffer("read_chain.out", most_threads * 4);
  inp_ = dev.buffer("read_chain.inp", 64);
  const std::vector<uint32_t> inp = peak_inputs();
  dev.write(inp_, inp.data(), 64);
  if (dev.timestamps_enabled()) {
    WGPUQuerySetDescriptor d{};
    d.label = WGPUStringView{"read_chain.stamps", WGPU_STRLEN};
    d.type = WGPUQueryType_Timestamp;
    d.count = 2;
    qs_ = wgpuDeviceCreateQuerySet(dev.get(), &d);
    stamps_ = dev.buffer("read_chain.stamps", 16, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc);
  }
}

ReadChain::~ReadChain() {
  if (qs_) {
    wgpuQuerySetDestroy(qs_);
    wgpuQuerySetRelease(qs_);
  }
}

ReadChainRun ReadChain::run(uint32_t aim, int repeats, int tries, int per_submit) {
  std::vector<size_t> all(sizes_.size());
  for (size_t i = 0; i < all.size(); i++) all[i] = i;
  return run_of(all, aim, repeats, tries, per_submit);
}

ReadChainRun ReadChain::run_size(uint64_t size, uint32_t aim, int repeats, int tries) {
  std::vector<size_t> which;
  for (size_t i = 0; i < sizes_.size(); i++)
    if (sizes_[i] == size) which.push_back(i);
  if (which.empty()) throw std::invalid_argument("read chain: no dispatch of " + std::to_string(size) + " bytes");
  return run_of(which, aim, repeats, tries);
}

ReadChainRun ReadChain::run_of(const std::vector<size_t>& which, uint32_t aim, int repeats, int tries, int per_submit) {
  Device& dev = k_.device();
  const uint32_t max_dim = dev.info().limits.maxComputeWorkgroupsPerDimension;
  struct Step {
    const Pipeline* p;
    BindGroup bg;
    Shape s;
  };
  std::vector<Step> steps;
  ReadChainRun r;
  r.aim = aim;
  r.dispatches = (uint32_t)which.size();
  for (size_t i : which) {
    const Shape s = shape_of(sizes_[i], aim, max_dim);
    const Pipeline& p = k_.get({"peak", {}, {{"OP", (double)PeakOp::Read}, {"ITERS", (double)s.iters}}});
    steps.push_back({&p, dev.bind(p, {out_, inp_, bufs_[i]}, "read_chain"), s});
    r.bytes += (uint64_t)s.groups * s.iters * kStepBytes;
  }
  for (int t = 0; t < tries; t++) {
    dev.wait_idle();
    const auto t0 = std::chrono::steady_clock::now();
    const int chunk = per_submit > 0 ? per_submit : repeats;
    for (int rep = 0; rep < repeats; rep += chunk) {
      // One compute pass a submission (Dawn still puts its barriers between the dispatches); the first
      // pass's beginning and the last one's end are timestamped, so queued submissions are timed by
      // the GPU too, their boundaries included.
      const bool first = rep == 0, last_submit = rep + chunk >= repeats;
      WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(dev.get(), nullptr);
      WGPUPassTimestampWrites tw{};
      tw.querySet = qs_;
      tw.beginningOfPassWriteIndex = first ? 0 : WGPU_QUERY_SET_INDEX_UNDEFINED;
      tw.endOfPassWriteIndex = last_submit ? 1 : WGPU_QUERY_SET_INDEX_UNDEFINED;
      WGPUComputePassDescriptor pd{};
      pd.label = WGPUStringView{"read_chain", WGPU_STRLEN};
      if (qs_ && (first || last_submit)) pd.timestampWrites = &tw;
      WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(enc, &pd);
      for (int c = rep; c < std::min(repeats, rep + chunk); c++)
        for (const Step& st : steps) {
          wgpuComputePassEncoderSetPipeline(pass, st.p->get());
          wgpuComputePassEncoderSetBindGroup(pass, 0, st.bg.get(), 0, nullptr);
          wgpuComputePassEncoderDispatchWorkgroups(pass, st.s.groups, 1, 1);
        }
      wgpuComputePassEncoderEnd(pass);
      wgpuComputePassEncoderRelease(pass);
      if (qs_ && last_submit) wgpuCommandEncoderResolveQuerySet(enc, qs_, 0, 2, stamps_.get(), 0);
      WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, nullptr);
      wgpuCommandEncoderRelease(enc);
      dev.submit(cb);
    }
    dev.wait_idle();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / repeats;
    // No time without the work: the last dispatch's first and last threads against the CPU.
    const Shape& last = steps.back().s;
    const uint32_t threads = last.groups * kPeakThreads;
    const std::vector<uint32_t> words = dev.read_as<uint32_t>(out_, threads);
    for (uint32_t th : {0u, threads - 1})
      if (words[th] != peak_read_reference(th, threads, last.iters))
        throw GpuError("read chain: thread " + std::to_string(th) + " of the last dispatch read wrong words");
    if (r.seconds == 0 || sec < r.seconds) r.seconds = sec;
    if (qs_) {
      const std::vector<uint64_t> ns = dev.read_as<uint64_t>(stamps_, 2);
      const double g = ns[1] > ns[0] ? (double)(ns[1] - ns[0]) * 1e-9 / repeats : 0;
      if (g > 0 && (r.gpu_seconds == 0 || g < r.gpu_seconds)) r.gpu_seconds = g;
    }
  }
  return r;
}

}  // namespace ztvm::gpu
