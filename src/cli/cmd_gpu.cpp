// ztvm gpu: the adapter we would run on, its backend, features and limits.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "cli/command.h"
#include "gpu/device.h"
#include "gpu/kernels.h"
#include "gpu/peak.h"
#include "gpu/read_chain.h"

namespace ztvm::cli {

// --read-chain: the chain at several workgroup aims, timed by the GPU's timestamps around one pass of
// many chains (the best aim is the floor), then queued a submission a chain as the decode loop queues
// its steps, then each size alone at the best aim, so a step can be read dispatch by dispatch.
static void read_chain(gpu::Device& dev, const std::string& spec, const std::vector<uint64_t>& sizes) {
  gpu::Kernels k(dev);
  std::printf("read chain %s: %zu dispatches (filling their buffers)\n", spec.c_str(), sizes.size());
  std::fflush(stdout);
  gpu::ReadChain rc(k, sizes);
  // The time to read: the GPU's where the device has timestamps, else the host's (which then
  // includes Dawn's translation of the command buffer at submit).
  auto t = [](const gpu::ReadChainRun& r) { return r.gpu_seconds > 0 ? r.gpu_seconds : r.seconds; };
  // Repeats so that a submission takes ~20 ms: its own start is then a small part of the time.
  auto repeats_for = [](double sec) { return (int)std::clamp(0.02 / std::max(sec, 1e-7), 8.0, 1000.0); };
  rc.run(1024, 1, 1);  // compiles the pipelines
  const int reps = repeats_for(t(rc.run(1024, 1, 1)));
  std::printf("  %10s %12s %12s %10s %12s   (best of 3, %d chains a submission, words checked)\n", "aim (WGs)",
              "us GPU", "us host", "GB/s", "us/dispatch", reps);
  gpu::ReadChainRun best;
  for (uint32_t aim : {128u, 256u, 512u, 1024u, 2048u, 4096u}) {
    const gpu::ReadChainRun r = rc.run(aim, reps, 3);
    std::printf("  %10u %12.1f %12.1f %10.1f %12.2f\n", aim, r.gpu_seconds * 1e6, r.seconds * 1e6, r.bytes / t(r) / 1e9,
                t(r) * 1e6 / r.dispatches);
    std::fflush(stdout);
    if (best.seconds == 0 || t(r) < t(best)) best = r;
  }
  std::printf("  floor: %.1f us a chain (%s), %.1f MB read at %.1f GB/s (aim %u)\n", t(best) * 1e6,
              best.gpu_seconds > 0 ? "GPU timestamps" : "host time", best.bytes / 1e6, best.bytes / t(best) / 1e9, best.aim);
  const gpu::ReadChainRun one = rc.run(best.aim, reps, 3, 1);
  std::printf("  queued a submission a chain, as decode steps are: %.1f us a chain on the GPU, %.1f on the host "
              "(%d chains)\n", one.gpu_seconds * 1e6, one.seconds * 1e6, reps);
  std::vector<uint64_t> distinct = sizes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::printf("  each size alone at aim %u:\n  %10s %6s %12s %10s\n", best.aim, "MB", "count", "us/dispatch", "GB/s");
  for (uint64_t sz : distinct) {
    const gpu::ReadChainRun r = rc.run_size(sz, best.aim, repeats_for(t(rc.run_size(sz, best.aim, 1, 1))), 3);
    std::printf("  %10.2f %6u %12.2f %10.1f\n", sz / 1e6, r.dispatches, t(r) * 1e6 / r.dispatches, r.bytes / t(r) / 1e9);
  }
}

static int run_gpu(int argc, char** argv) {
  CLI::App app{"Show the GPU adapter, its features and limits", argv[0]};
  std::string adapter = "auto";
  bool peak = false, occupancy = false, robust = false;
  app.add_flag("--gpu-robust", robust, "keep WebGPU's bounds clamps and workgroup zeroing (as the engine's flag)");
  app.add_option("--gpu", adapter, "auto | discrete | cpu")->check(CLI::IsMember({"auto", "discrete", "cpu"}));
  app.add_flag("--peak", peak, "also measure int8 dot, f32 fma and memory read rates (kernels/peak.wgsl)");
  app.add_flag("--occupancy", occupancy,
               "also measure how the workgroups resident per SM fall as workgroup memory grows (kernels/occupancy.wgsl)");
  std::string chain;
  app.add_option("--read-chain", chain,
                 "also time a chain of dispatches that only read, sizes in MB: e.g. 36x[8.85,0.4,5.9,28,14]+319 "
                 "(the floor under a decode step of those matrices)");
  CLI11_PARSE(app, argc, argv);
  std::vector<uint64_t> chain_sizes;
  if (!chain.empty()) {
    try {
      chain_sizes = gpu::parse_read_chain(chain);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "ztvm gpu: %s\n", e.what());
      return 2;
    }
  }
  gpu::Device dev(gpu::Device::Options{adapter, !chain_sizes.empty(), robust});  // --read-chain: GPU timestamps
  const gpu::AdapterInfo& i = dev.info();
  std::printf("adapter      %s\n", i.device.c_str());
  std::printf("description  %s\n", i.description.c_str());
  std::printf("vendor       %s (0x%04x), device 0x%04x, architecture %s\n", i.vendor.c_str(), i.vendor_id, i.device_id,
              i.architecture.c_str());
  std::printf("backend      %s, %s\n", i.backend.c_str(), i.adapter_type.c_str());
  std::printf("subgroups    %s (size %u..%u)\n", i.subgroups ? "yes" : "no", i.subgroup_min, i.subgroup_max);
  std::printf("shader-f16   %s\n", i.shader_f16 ? "yes" : "no");
  std::printf("timestamps   %s\n", i.timestamps ? "yes" : "no");
  std::printf("robust       %s\n", dev.robust() ? "yes (bounds clamped, workgroup memory zeroed)"
                                                 : "no (--gpu-robust or ZTVM_GPU_ROBUST=1 turns it on)");
  std::printf("features    ");
  for (auto& f : i.features) std::printf(" %s", f.c_str());
  std::printf("\nWGSL        ");
  for (auto& f : i.wgsl_features) std::printf(" %s", f.c_str());
  const WGPULimits& l = i.limits;
  std::printf("\nlimits\n");
  std::printf("  maxBufferSize                      %llu\n", (unsigned long long)l.maxBufferSize);
  std::printf("  maxStorageBufferBindingSize        %llu\n", (unsigned long long)l.maxStorageBufferBindingSize);
  std::printf("  maxStorageBuffersPerShaderStage    %u\n", l.maxStorageBuffersPerShaderStage);
  std::printf("  maxComputeWorkgroupStorageSize     %u\n", l.maxComputeWorkgroupStorageSize);
  std::printf("  maxComputeInvocationsPerWorkgroup  %u\n", l.maxComputeInvocationsPerWorkgroup);
  std::printf("  maxComputeWorkgroupSizeX           %u\n", l.maxComputeWorkgroupSizeX);
  std::printf("  maxComputeWorkgroupsPerDimension   %u\n", l.maxComputeWorkgroupsPerDimension);
  std::printf("  minStorageBufferOffsetAlignment    %u\n", l.minStorageBufferOffsetAlignment);
  std::printf("  maxUniformBufferBindingSize        %llu\n", (unsigned long long)l.maxUniformBufferBindingSize);
  if (peak) {
    // What kernels are read against: an int8 GEMM's ops/s beside the dot rate, a matvec's bytes/s
    // beside the read rate. Each number is the best of three runs whose results were checked.
    gpu::Kernels k(dev);
    std::printf("peak rates (best of 3, results checked)\n");
    std::fflush(stdout);
    const gpu::PeakRate d = gpu::measure_peak(k, gpu::PeakOp::Dot4I8);
    std::printf("  int8 dot (dot4I8Packed)   %9.2f T int8 ops/s  (%.1f ms run)\n", d.per_second / 1e12, d.seconds * 1e3);
    std::fflush(stdout);
    const gpu::PeakRate f = gpu::measure_peak(k, gpu::PeakOp::Fma);
    std::printf("  f32 fma                   %9.2f TFLOPS        (%.1f ms run)\n", f.per_second / 1e12, f.seconds * 1e3);
    std::fflush(stdout);
    const gpu::PeakRate r = gpu::measure_peak(k, gpu::PeakOp::Read);
    std::printf("  memory read               %9.1f GB/s          (%.1f ms run)\n", r.per_second / 1e9, r.seconds * 1e3);
  }
  if (occupancy) {
    // Chains of dependent loads run at a rate proportional to the resident workgroups; where the
    // rate steps down, fewer workgroups of that workgroup-memory size fit on an SM at once.
    gpu::Kernels k(dev);
    std::printf("workgroup memory occupancy (256 threads a workgroup, best of 3, results checked)\n");
    std::printf("  %8s %14s %10s\n", "KB", "G steps/s", "relative");
    const std::vector<gpu::OccupancyPoint> pts = gpu::measure_occupancy(k);
    for (const gpu::OccupancyPoint& p : pts)
      std::printf("  %8.1f %14.2f %10.3f\n", p.bytes / 1024.0, p.per_second / 1e9, p.per_second / pts.front().per_second);
  }
  if (!chain_sizes.empty()) read_chain(dev, chain, chain_sizes);
  return 0;
}

static Command reg("gpu", "show the GPU adapter, backend, features and limits (--peak: measured rates)", run_gpu);

}  // namespace ztvm::cli
