// What each recorded forward pass dispatches, against a trace committed in tests/fixtures/graph_traces:
// for real-shaped models (ztvm synth's shapes and quant mixes, two layers), every head and a spread of
// pass lengths and positions, the kernel roles in order and a hash of the full detail (kernel variant
// with its constants, grid, bound buffers, bytes). A change to the graph builder that should not change
// the GPU's work (a refactor) must leave it equal; one that does shows what moved in the diff of the
// committed file. ZTVM_UPDATE_TRACES=1 rewrites the file; the full detail of a mismatch is written to
// graph_traces/<model>.actual.txt in the build folder for a diff.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/forward.h"
#include "gpu_test_util.h"
#include "model/model_file.h"
#include "model/quant_mix.h"
#include "model/synth.h"

namespace ztvm {
namespace {

namespace fs = std::filesystem;
using test::device;

struct TraceModel {
  const char* name;
  const char* shape;
  const char* mix;
};
// Each quant mix and head shape the tuned paths branch on: hd 64 (flash) and 128, QK-norm, Q4_K_M's
// two-type QKV, Q4_0, F16 (the f32 GEMM), an LM head in several bindings (lavapipe: 128 MiB).
const TraceModel kModels[] = {
    {"llama-3.2-1b-q4_k_m", "llama-3.2-1b", "Q4_K_M"},
    {"qwen3-4b-q4_0", "qwen3-4b", "Q4_0"},
    {"phi-3-mini-f16", "phi-3-mini", "F16"},
};
constexpr uint32_t kContext = 4608, kChunk = 1024;

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The device limits the graph builder reads: a trace holds for devices that agree on them.
std::string limits_line(gpu::Device& dev) {
  const auto& l = dev.limits();
  std::ostringstream o;
  o << "limits: binding " << dev.max_binding_size() << ", storage buffers " << l.maxStorageBuffersPerShaderStage
    << ", workgroup storage " << l.maxComputeWorkgroupStorageSize << ", subgroups "
    << (dev.info().subgroups ? "yes" : "no");
  return o.str();
}

std::string head_name(Head h) {
  switch (h) {
    case Head::None: return "none";
    case Head::LastSample: return "sample";
    case Head::LastRandom: return "random";
    case Head::AllLogits: return "logits";
  }
  return "?";
}

class GraphTrace : public ::testing::TestWithParam<TraceModel> {};

TEST_P(GraphTrace, PassesDispatchAsRecorded) {
  const TraceModel& m = GetParam();
  const fs::path dir = fs::temp_directory_path() / ("ztvm_trace_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string gguf = (dir / (std::string(m.name) + ".gguf")).string();
  ModelConfig c = synth_shape(m.shape);
  c.num_hidden_layers = 2;
  SynthOptions opt;
  opt.threads = 2;
  synth_model(c, parse_quant_mix(m.mix), nullptr, gguf, opt);
  auto model = open_model(gguf);
  Forward fwd(device(), *model, kContext, kChunk);

  std::string brief = limits_line(device()) + "\n", detail;
  const uint32_t positions[] = {0, 100, 511, 2000, 2100, 4000};
  const uint32_t lengths[] = {1, 2, 5, 35, 64, 65, 128, 129, 256, 512, 1024};
  for (Head h : {Head::None, Head::LastSample, Head::LastRandom, Head::AllLogits}) {
    const Graph& g = fwd.graph(h);
    for (uint32_t pos0 : positions)
      for (uint32_t n : lengths)
        for (bool embedded : {false, true}) {
          if (pos0 + n > kContext || (embedded && n != 1) || (h == Head::AllLogits && n > fwd.logits_rows())) continue;
          std::vector<std::string> lines;
          {
            gpu::Recorder rec(device(), "trace");
            rec.trace(&lines);
            g.encode(rec, pos0, n, embedded);
          }
          std::string roles, all;
          for (const std::string& l : lines) {
            all += l + "\n";
            const size_t end = l.rfind(' '), start = l.rfind(' ', end - 1);
            roles += (roles.empty() ? "" : " ") + l.substr(start + 1, end - start - 1);
          }
          char head[96];
          std::snprintf(head, sizeof head, "%s pos %u n %u%s: %zu %016llx ", head_name(h).c_str(), pos0, n,
                        embedded ? " embedded" : "", lines.size(), (unsigned long long)fnv1a(all));
          brief += head + roles + "\n";
          detail += std::string(head) + "\n" + all;
        }
  }
  fs::remove_all(dir);

  const fs::path want_path = fs::path(ZTVM_SOURCE_DIR) / "tests/fixtures/graph_traces" / (std::string(m.name) + ".txt");
  if (std::getenv("ZTVM_UPDATE_TRACES")) {
    fs::create_directories(want_path.parent_path());
    std::ofstream(want_path) << brief;
    GTEST_SKIP() << "rewrote " << want_path;
  }
  std::ifstream in(want_path);
  ASSERT_TRUE(in) << want_path << " is missing: run with ZTVM_UPDATE_TRACES=1";
  std::stringstream want;
  want << in.rdbuf();
  const std::string want_limits = want.str().substr(0, want.str().find('\n') + 1);
  if (want_limits != brief.substr(0, brief.find('\n') + 1))
    GTEST_SKIP() << "the trace was recorded on a device with other " << want_limits << "this one has "
                 << brief.substr(0, brief.find('\n'));
  if (want.str() != brief) {
    const fs::path out = fs::path(ZTVM_TESTDATA).parent_path() / "graph_traces";
    fs::create_directories(out);
    std::ofstream(out / (std::string(m.name) + ".actual.txt")) << detail;
    std::ofstream(out / (std::string(m.name) + ".brief.txt")) << brief;
    ADD_FAILURE() << "the passes of " << m.name << " dispatch otherwise than " << want_path << ": diff it with "
                  << (out / (std::string(m.name) + ".brief.txt")) << " (detail in .actual.txt)";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GraphTrace, ::testing::ValuesIn(kModels),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!isalnum((unsigned char)ch)) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace ztvm
