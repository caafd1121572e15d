// ztvm gpu: the adapter we would run on, its backend, features and limits.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/command.h"
#include "gpu/device.h"
#include "gpu/kernels.h"
#include "gpu/peak.h"

namespace ztvm::cli {

static int run_gpu(int argc, char** argv) {
  CLI::App app{"Show the GPU adapter, its features and limits", argv[0]};
  std::string adapter = "auto";
  bool peak = false, occupancy = false, robust = false;
  app.add_flag("--gpu-robust", robust, "keep WebGPU's bounds clamps and workgroup zeroing (as the engine's flag)");
  app.add_option("--gpu", adapter, "auto | discrete | cpu")->check(CLI::IsMember({"auto", "discrete", "cpu"}));
  app.add_flag("--peak", peak, "also measure int8 dot, f32 fma and memory read rates (kernels/peak.wgsl)");
  app.add_flag("--occupancy", occupancy,
               "also measure how the workgroups resident per SM fall as workgroup memory grows (kernels/occupancy.wgsl)");
  CLI11_PARSE(app, argc, argv);
  gpu::Device dev(gpu::Device::Options{adapter, false, robust});
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
  return 0;
}

static Command reg("gpu", "show the GPU adapter, backend, features and limits (--peak: measured rates)", run_gpu);

}  // namespace ztvm::cli
