// Shared by the commands that run a model: the model/GPU options and the loading sequence.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "engine/forward.h"
#include "engine/generator.h"
#include "gpu/device.h"
#include "model/model_file.h"

namespace ztvm::cli {

struct EngineOptions {
  std::string model;          // .gguf file or Hugging Face directory; empty: the embedded default model
  uint32_t ctx = 0;           // KV capacity in tokens; 0: the model's training context, at most 4096
  std::string gpu = "auto";   // auto | discrete | cpu
  uint32_t chunk = 1024;      // prefill chunk, tokens per pass (H200: 1024-token prompts +9% in one pass than in two)
  bool timestamps = false;    // request GPU timestamp queries (for profiling)
  bool gpu_robust = false;    // Dawn's bounds clamps and workgroup zeroing kept (slower; for debugging kernels)
  uint32_t sequences = 1;     // sequences that may hold a full context at once (the server's slots)
  uint32_t kv_tokens = 0;     // KV cache size shared by all sequences; 0: ctx x sequences
  std::string quantize;       // Q8_0 | Q4_0 | Q4_K: float weights re-encoded on load; empty: as stored
  void add_to(CLI::App& app, bool model_required = true);
};

struct Engine {
  std::unique_ptr<ModelFile> model;
  std::unique_ptr<gpu::Device> device;
  std::unique_ptr<Forward> forward;
  std::unique_ptr<Generator> generator;
};

// Opens the model (e.model->path says which), the GPU, uploads weights and builds the passes;
// progress goes to stderr.
Engine load_engine(const EngineOptions& o, bool quiet = false);

}  // namespace ztvm::cli
