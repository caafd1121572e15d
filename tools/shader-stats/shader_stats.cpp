// shader_stats — what the Vulkan driver made of each kernel: registers, shared memory, instruction
// counts, as the driver reports them through VK_KHR_pipeline_executable_properties.
//
//   ZTVM_DUMP_SPIRV=/tmp/spv ztvm bench -m model.gguf -p 1024 -n 4 -r 1   # Dawn's SPIR-V, one file per pipeline
//   shader_stats /tmp/spv                                                # one line per pipeline
//   shader_stats /tmp/spv --ir gemm_q8        # and the driver's internal representations (its
//                                              # assembly, where it gives one) of the pipelines so labelled
//
// Dawn keeps this from us: it compiles WGSL to SPIR-V and hands that to the driver, which decides how
// many registers a thread takes, and so how many workgroups share an SM. This program takes the SPIR-V
// Dawn generated (its dump_shaders toggle, written out by gpu::Device), builds each as a compute pipeline
// of its own with statistics capture on, and prints what the driver says. Buffer robustness is off, as
// Dawn runs our kernels (bounds checks would change the code). The pipelines are never run.
// SHADER_STATS_DEVICE=substring picks the GPU by name (default: the first that is not a CPU).
#include <vulkan/vulkan.h>

#include <spirv-tools/libspirv.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed (VkResult " + std::to_string(r) + ")");
}

// The descriptor bindings a module declares: (set, binding) -> descriptor type.
struct Interface {
  std::map<std::pair<uint32_t, uint32_t>, VkDescriptorType> bindings;
  bool push_constants = false;
};

// Reads OpDecorate (Binding, DescriptorSet) and OpVariable (storage class) from the binary.
Interface interface_of(const std::vector<uint32_t>& words) {
  std::map<uint32_t, uint32_t> set, binding, storage;
  for (size_t i = 5; i < words.size();) {
    const uint32_t op = words[i] & 0xFFFF, n = words[i] >> 16;
    if (n == 0 || i + n > words.size()) throw std::runtime_error("malformed SPIR-V");
    if (op == 71 && n >= 4 && words[i + 2] == 34) set[words[i + 1]] = words[i + 3];      // OpDecorate DescriptorSet
    if (op == 71 && n >= 4 && words[i + 2] == 33) binding[words[i + 1]] = words[i + 3];  // OpDecorate Binding
    if (op == 59 && n >= 4) storage[words[i + 2]] = words[i + 3];                        // OpVariable
    i += n;
  }
  Interface it;
  for (auto& [id, sc] : storage) {
    if (sc == 9) it.push_constants = true;  // PushConstant
    if (!binding.count(id)) continue;
    // StorageBuffer (12) or Uniform (2) blocks: our kernels bind nothing else.
    it.bindings[{set.count(id) ? set[id] : 0, binding[id]}] =
        sc == 2 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  }
  return it;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  std::stringstream s;
  s << f.rdbuf();
  std::string text = s.str();
  // Dawn's dump starts with a C comment line, which the assembler does not take.
  if (text.rfind("/*", 0) == 0) text = text.substr(std::min(text.size(), text.find('\n') + 1));
  return text;
}

class Driver {
 public:
  Driver() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "shader_stats";
    app.apiVersion = VK_API_VERSION_1_3;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    check(vkCreateInstance(&ici, nullptr, &instance_), "vkCreateInstance");
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance_, &n, nullptr);
    std::vector<VkPhysicalDevice> all(n);
    vkEnumeratePhysicalDevices(instance_, &n, all.data());
    if (all.empty()) throw std::runtime_error("no Vulkan device");
    const char* want = std::getenv("SHADER_STATS_DEVICE");
    for (VkPhysicalDevice d : all) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(d, &p);
      const bool match = want ? std::string(p.deviceName).find(want) != std::string::npos : p.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
      if (match && !gpu_) gpu_ = d, name_ = p.deviceName;
    }
    if (!gpu_) {
      if (want) throw std::runtime_error(std::string("no Vulkan device named like '") + want + "'");
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(all[0], &p);
      gpu_ = all[0], name_ = p.deviceName;
    }
    vkEnumerateDeviceExtensionProperties(gpu_, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateDeviceExtensionProperties(gpu_, nullptr, &n, exts.data());
    for (auto& e : exts) stats_ |= std::string(e.extensionName) == VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;

    // Every feature the device has (integer dot products, subgroups, ...), robustness excepted.
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, stats_ ? &pe : nullptr};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &f13};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
    VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
    vkGetPhysicalDeviceFeatures2(gpu_, &f);
    f.features.robustBufferAccess = VK_FALSE;
    f13.robustImageAccess = VK_FALSE;
    stats_ = stats_ && pe.pipelineExecutableInfo;

    vkGetPhysicalDeviceQueueFamilyProperties(gpu_, &n, nullptr);
    std::vector<VkQueueFamilyProperties> fams(n);
    vkGetPhysicalDeviceQueueFamilyProperties(gpu_, &n, fams.data());
    uint32_t family = 0;
    while (family < n && !(fams[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) family++;
    if (family == n) throw std::runtime_error("no compute queue on " + name_);
    const float priority = 1.f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family, q.queueCount = 1, q.pQueuePriorities = &priority;
    const char* ext = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f};
    dci.queueCreateInfoCount = 1, dci.pQueueCreateInfos = &q;
    dci.enabledExtensionCount = stats_ ? 1 : 0, dci.ppEnabledExtensionNames = &ext;
    check(vkCreateDevice(gpu_, &dci, nullptr, &device_), "vkCreateDevice");
    if (stats_) {
      props_ = (PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(device_, "vkGetPipelineExecutablePropertiesKHR");
      statistics_ = (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(device_, "vkGetPipelineExecutableStatisticsKHR");
      irs_ = (PFN_vkGetPipelineExecutableInternalRepresentationsKHR)vkGetDeviceProcAddr(device_, "vkGetPipelineExecutableInternalRepresentationsKHR");
      stats_ = props_ && statistics_;
    }
  }
  ~Driver() {
    if (device_) vkDestroyDevice(device_, nullptr);
    if (instance_) vkDestroyInstance(instance_, nullptr);
  }
  const std::string& name() const { return name_; }
  bool has_statistics() const { return stats_; }

  // Builds the module as a compute pipeline and returns the driver's statistics, "name=value; ...",
  // with ir its internal representations after them, a line each prefixed "  | ".
  std::string statistics(const std::vector<uint32_t>& spirv, const std::string& entry, bool ir = false) {
    const Interface it = interface_of(spirv);
    VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mci.codeSize = spirv.size() * 4, mci.pCode = spirv.data();
    VkShaderModule mod;
    check(vkCreateShaderModule(device_, &mci, nullptr, &mod), "vkCreateShaderModule");
    uint32_t sets = 0;
    for (auto& [sb, t] : it.bindings) sets = std::max(sets, sb.first + 1);
    std::vector<VkDescriptorSetLayout> layouts(sets);
    for (uint32_t s = 0; s < sets; s++) {
      std::vector<VkDescriptorSetLayoutBinding> b;
      for (auto& [sb, t] : it.bindings)
        if (sb.first == s) b.push_back({sb.second, t, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
      VkDescriptorSetLayoutCreateInfo lci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
      lci.bindingCount = b.size(), lci.pBindings = b.data();
      check(vkCreateDescriptorSetLayout(device_, &lci, nullptr, &layouts[s]), "vkCreateDescriptorSetLayout");
    }
    VkPushConstantRange pc{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};  // the size every device allows
    VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    plci.setLayoutCount = sets, plci.pSetLayouts = layouts.data();
    plci.pushConstantRangeCount = it.push_constants ? 1 : 0, plci.pPushConstantRanges = &pc;
    VkPipelineLayout layout;
    check(vkCreatePipelineLayout(device_, &plci, nullptr, &layout), "vkCreatePipelineLayout");
    VkComputePipelineCreateInfo cci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cci.flags = stats_ ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0;
    if (stats_ && ir && irs_) cci.flags |= VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR;
    cci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, mod, entry.c_str(), nullptr};
    cci.layout = layout;
    VkPipeline pipeline;
    const VkResult r = vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cci, nullptr, &pipeline);
    std::string out;
    if (r == VK_SUCCESS && stats_) out = read_statistics(pipeline);
    if (r == VK_SUCCESS && stats_ && ir && irs_) out += read_representations(pipeline);
    else if (r == VK_SUCCESS) out = "(built; the driver reports no statistics)";
    if (r == VK_SUCCESS) vkDestroyPipeline(device_, pipeline, nullptr);
    vkDestroyPipelineLayout(device_, layout, nullptr);
    for (auto l : layouts) vkDestroyDescriptorSetLayout(device_, l, nullptr);
    vkDestroyShaderModule(device_, mod, nullptr);
    check(r, "vkCreateComputePipelines");
    return out;
  }

 private:
  // The pipeline's executables (a compute pipeline has one), each as the info the queries take.
  std::vector<VkPipelineExecutableInfoKHR> executables(VkPipeline pipeline) {
    VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, nullptr, pipeline};
    uint32_t n = 0;
    check(props_(device_, &pi, &n, nullptr), "vkGetPipelineExecutablePropertiesKHR");
    std::vector<VkPipelineExecutableInfoKHR> out;
    for (uint32_t e = 0; e < n; e++) out.push_back({VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, nullptr, pipeline, e});
    return out;
  }

  std::string read_statistics(VkPipeline pipeline) {
    std::string out;
    for (const VkPipelineExecutableInfoKHR& ei : executables(pipeline)) {
      uint32_t m = 0;
      check(statistics_(device_, &ei, &m, nullptr), "vkGetPipelineExecutableStatisticsKHR");
      std::vector<VkPipelineExecutableStatisticKHR> st(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
      check(statistics_(device_, &ei, &m, st.data()), "vkGetPipelineExecutableStatisticsKHR");
      for (auto& s : st) {
        std::string v;
        switch (s.format) {
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: v = s.value.b32 ? "true" : "false"; break;
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: v = std::to_string(s.value.i64); break;
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: v = std::to_string(s.value.u64); break;
          default: v = std::to_string(s.value.f64); break;
        }
        out += (out.empty() ? "" : "; ") + std::string(s.name) + "=" + v;
      }
    }
    return out;
  }

  // Each executable's internal representations: text ones line by line, binary ones by size.
  std::string read_representations(VkPipeline pipeline) {
    std::string out;
    for (const VkPipelineExecutableInfoKHR& ei : executables(pipeline)) {
      uint32_t m = 0;
      check(irs_(device_, &ei, &m, nullptr), "vkGetPipelineExecutableInternalRepresentationsKHR");
      std::vector<VkPipelineExecutableInternalRepresentationKHR> rep(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR});
      check(irs_(device_, &ei, &m, rep.data()), "vkGetPipelineExecutableInternalRepresentationsKHR");  // sizes
      std::vector<std::string> data(m);
      for (uint32_t i = 0; i < m; i++) data[i].resize(rep[i].dataSize), rep[i].pData = data[i].data();
      check(irs_(device_, &ei, &m, rep.data()), "vkGetPipelineExecutableInternalRepresentationsKHR");
      if (m == 0) out += "\n  | (no internal representations)";
      for (uint32_t i = 0; i < m; i++) {
        out += "\n  | == " + std::string(rep[i].name) + ": " + rep[i].description;
        if (!rep[i].isText) {
          out += " (" + std::to_string(rep[i].dataSize) + " bytes, binary)";
          continue;
        }
        std::istringstream lines(std::string(data[i].c_str()));
        for (std::string line; std::getline(lines, line);) out += "\n  | " + line;
      }
    }
    return out;
  }

  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice gpu_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  std::string name_;
  bool stats_ = false;
  PFN_vkGetPipelineExecutablePropertiesKHR props_ = nullptr;
  PFN_vkGetPipelineExecutableStatisticsKHR statistics_ = nullptr;
  PFN_vkGetPipelineExecutableInternalRepresentationsKHR irs_ = nullptr;
};

// The entry point's name (Dawn renames it) from OpEntryPoint.
std::string entry_point(const std::vector<uint32_t>& w) {
  for (size_t i = 5; i < w.size() && (w[i] >> 16);) {
    if ((w[i] & 0xFFFF) == 15 && (w[i] >> 16) > 3) return std::string(reinterpret_cast<const char*>(&w[i + 3]));
    i += w[i] >> 16;
  }
  throw std::runtime_error("no entry point");
}

}  // namespace

int main(int argc, char** argv) {
  const bool ir = argc == 4 && std::string(argv[2]) == "--ir";
  if (argc != 2 && !ir) {
    std::fprintf(stderr, "usage: shader_stats DIR [--ir LABEL_PART]   (DIR from ZTVM_DUMP_SPIRV=DIR ztvm ...)\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::ifstream index(dir / "index.tsv");
  if (!index) {
    std::fprintf(stderr, "shader_stats: no %s (run ztvm with ZTVM_DUMP_SPIRV=%s first)\n", (dir / "index.tsv").c_str(), argv[1]);
    return 1;
  }
  try {
    Driver drv;
    std::printf("# %s%s\n", drv.name().c_str(), drv.has_statistics() ? "" : " (no VK_KHR_pipeline_executable_properties)");
    spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
    std::string line;
    int failed = 0;
    while (std::getline(index, line)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      const std::string file = line.substr(0, tab), label = line.substr(tab + 1);
      std::vector<uint32_t> spirv;
      std::string stats;
      try {
        if (!tools.Assemble(read_text(dir / (file + ".spvasm")), &spirv)) throw std::runtime_error("SPIR-V does not assemble");
        stats = drv.statistics(spirv, entry_point(spirv), ir && label.find(argv[3]) != std::string::npos);
      } catch (const std::exception& e) {
        stats = std::string("ERROR ") + e.what();
        failed++;
      }
      std::printf("%s\t%s\t%s\n", file.c_str(), label.c_str(), stats.c_str());
    }
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shader_stats: %s\n", e.what());
    return 1;
  }
}
