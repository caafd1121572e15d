// ztvm gpu: the adapter we would run on, its backend, features and limits.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/command.h"
#include "gpu/device.h"

namespace ztvm::cli {

static int run_gpu(int argc, char** argv) {
  CLI::App app{"Show the GPU adapter, its features and limits", argv[0]};
  std::string adapter = "auto";
  app.add_option("--gpu", adapter, "auto | discrete | cpu")->check(CLI::IsMember({"auto", "discrete", "cpu"}));
  CLI11_PARSE(app, argc, argv);
  gpu::Device dev(gpu::Device::Options{adapter, false});
  const gpu::AdapterInfo& i = dev.info();
  std::printf("adapter      %s\n", i.device.c_str());
  std::printf("description  %s\n", i.description.c_str());
  std::printf("vendor       %s (0x%04x), device 0x%04x, architecture %s\n", i.vendor.c_str(), i.vendor_id, i.device_id,
              i.architecture.c_str());
  std::printf("backend      %s, %s\n", i.backend.c_str(), i.adapter_type.c_str());
  std::printf("subgroups    %s (size %u..%u)\n", i.subgroups ? "yes" : "no", i.subgroup_min, i.subgroup_max);
  std::printf("shader-f16   %s\n", i.shader_f16 ? "yes" : "no");
  std::printf("timestamps   %s\n", i.timestamps ? "yes" : "no");
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
  return 0;
}

static Command reg("gpu", "show the GPU adapter, backend, features and limits", run_gpu);

}  // namespace ztvm::cli
