#include "cli/engine_setup.h"

#include "hub/pull.h"
#include "model/convert.h"
#include "model/quant.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

namespace ztvm::cli {

// The embedded default model: models/default.gguf, copied beside the binary by the build as
// ztvm-default.gguf; a build tree run from anywhere also finds it in the source tree.
static std::string default_model() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path beside = exe.parent_path() / "ztvm-default.gguf";
    if (std::filesystem::exists(beside)) return beside.string();
  }
  if (std::filesystem::exists(ZTVM_DEFAULT_MODEL)) return ZTVM_DEFAULT_MODEL;
  throw std::runtime_error("no -m MODEL given and the default model (ztvm-default.gguf beside ztvm) is missing");
}

// --quantize: the model's float matrices re-encoded in memory before they go to the GPU.
static void quantize_on_load(ModelFile& model, const std::string& name, bool quiet) {
  GgmlType type;
  if (name == "Q4_K_M") type = GgmlType::Q4_K;  // convert's Q4_K is llama.cpp's Q4_K_M mix: a Q6_K head
  else if (!type_from_name(name.c_str(), &type)) throw std::runtime_error("--quantize: unknown type " + name);
  const auto t0 = std::chrono::steady_clock::now();
  const bool tty = isatty(fileno(stderr));
  auto progress = [&](size_t i, size_t n, const std::string& tensor, GgmlType t) {
    if (quiet) return;
    std::fprintf(stderr, tty ? "\r\033[Kquantizing [%4zu/%4zu] %-28s %s" : "quantizing [%4zu/%4zu] %-28s %s\n", i + 1, n,
                 tensor.c_str(), type_name(t));
    std::fflush(stderr);
  };
  const size_t n = quantize_weights(model, type, progress);
  if (!quiet)
    std::fprintf(stderr, "%sztvm: %zu float matrices quantized to %s in %.1f s\n", tty ? "\r\033[K" : "", n, name.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void EngineOptions::add_to(CLI::App& app, bool model_required) {
  auto* m = app.add_option("-m,--model", model,
                           std::string("model: a .gguf file, a Hugging Face directory, or ORG/REPO[:TAG] on the Hugging "
                                       "Face Hub (pulled on first use, see `ztvm pull`)") +
                               (model_required ? "" : " (default: the embedded model)"));
  if (model_required) m->required();
  app.add_option("-c,--ctx", ctx, "context size in tokens (default: the model's, at most 4096)");
  app.add_option("--gpu", gpu, "adapter: auto (discrete GPU if present), discrete, cpu")
      ->check(CLI::IsMember({"auto", "discrete", "cpu"}));
  app.add_flag("--gpu-robust", gpu_robust,
               "keep WebGPU's bounds clamps on every buffer access and zeroed workgroup memory (slower; also "
               "ZTVM_GPU_ROBUST=1)");
  app.add_option("--chunk", chunk, "prefill chunk size in tokens")->check(CLI::Range(1, 4096));
  app.add_option("--quantize", quantize,
                 "re-encode float weights (F32/F16/BF16, as in Hugging Face directories) on load: Q8_0, Q4_0 or Q4_K "
                 "(Q4_K_M: with a Q6_K LM head, as convert writes it); quantized weights stay as they are")
      ->transform(CLI::IsMember({"Q8_0", "Q4_0", "Q4_K", "Q4_K_M"}, CLI::ignore_case));
}

Engine load_engine(const EngineOptions& o, bool quiet) {
  auto t0 = std::chrono::steady_clock::now();
  Engine e;
  e.model = open_model(o.model.empty() ? default_model() : hub::resolve_model(o.model));
  if (!o.quantize.empty()) quantize_on_load(*e.model, o.quantize, quiet);
  e.device = std::make_unique<gpu::Device>(gpu::Device::Options{o.gpu, o.timestamps, o.gpu_robust});
  uint32_t ctx = o.ctx ? o.ctx : std::min<uint32_t>(e.model->config.max_position_embeddings, 4096);
  const uint32_t kv_tokens = o.kv_tokens ? o.kv_tokens : ((ctx + Forward::kPage - 1) / Forward::kPage) * Forward::kPage * o.sequences;
  try {
    e.forward = std::make_unique<Forward>(*e.device, *e.model, ctx, std::min(o.chunk, ctx),
                                          (kv_tokens + Forward::kPage - 1) / Forward::kPage);
  } catch (const gpu::GpuError& err) {
    if (!o.ctx) throw;  // the default context: the model itself does not fit
    throw std::runtime_error("a context of " + std::to_string(ctx) + " tokens does not fit this GPU (" + err.what() +
                             "); try a smaller --ctx");
  }
  e.generator = std::make_unique<Generator>(*e.forward);
  if (!quiet) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "ztvm: %s (%s, %u layers) on %s [%s] — ctx %u, loaded in %.2f s\n", e.model->path.c_str(),
                 e.model->config.arch_name.c_str(), e.model->config.num_hidden_layers, e.device->info().device.c_str(),
                 e.device->info().backend.c_str(), ctx, s);
    if (e.model->config.has_recurrent_state()) {  // what prefix reuse costs such a model (state_ring.h)
      const uint64_t b = StateRing::snapshot_bytes(e.model->config);
      std::fprintf(stderr, "ztvm: recurrent state %llu bytes (%.1f MiB) a snapshot; up to %u + 1 a sequence\n",
                   (unsigned long long)b, b / 1048576.0, StateRing::kSnapshots);
    }
  }
  return e;
}

}  // namespace ztvm::cli
