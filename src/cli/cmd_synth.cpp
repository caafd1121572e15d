// ztvm synth --shape S --type T --vocab VOCAB.gguf -o OUT.gguf: a GGUF file with a real model's
// shapes and tensor types but random weights, for benchmarks both engines read byte for byte.
#include <algorithm>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/command.h"
#include "model/synth.h"

namespace ztvm::cli {
namespace {

int run_synth(int argc, char** argv) {
  CLI::App app{"Write a real-shaped GGUF model with random weights (for speed benchmarks only)"};
  std::string shape, type_str = "Q4_K_M", vocab_path, out_path, name;
  uint64_t seed = 1;
  unsigned threads = 0;
  app.add_option("--shape", shape, std::string("model shape: ") + synth_shape_names())->required();
  app.add_option("--type", type_str, "Q4_0, Q4_K_M, Q5_K_M, Q3_K_M, IQ4_XS, Q8_0 or F16 (per-tensor types as llama-quantize picks them)");
  app.add_option("--vocab", vocab_path, "GGUF file whose tokenizer.* metadata is copied (e.g. ggml-vocab-llama-bpe.gguf)");
  app.add_option("-o,--output", out_path, "output .gguf path")->required();
  app.add_option("--seed", seed, "random seed (same seed, same bytes)");
  app.add_option("--threads", threads, "threads (default: all cores)");
  app.add_option("--name", name, "general.name (default: '<shape> (random weights)')");
  uint32_t layers = 0;
  app.add_option("--layers", layers, "keep only the first N layers (tests: the shapes and types without the size)")
      ->check(CLI::Range(1, 1024));
  CLI11_PARSE(app, argc, argv);

  refuse_output_over_input(out_path, vocab_path, "--vocab");
  const QuantMix mix = parse_quant_mix(type_str);
  ModelConfig config = synth_shape(shape);
  if (layers) config.num_hidden_layers = std::min(layers, config.num_hidden_layers);
  std::unique_ptr<GgufFile> vocab;
  if (!vocab_path.empty()) vocab = GgufFile::open(vocab_path);
  else std::fprintf(stderr, "synth: no --vocab: the file gets tokenizer.ggml.model = \"no_vocab\"\n");

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  SynthOptions options;
  options.seed = seed;
  options.threads = threads;
  options.name = name;
  // One self-overwriting line on a terminal; one line per tensor when stderr is a log file.
  const bool tty = isatty(fileno(stderr));
  options.progress = [&](size_t i, size_t n, const std::string& tensor, GgmlType t) {
    std::fprintf(stderr, tty ? "\r\033[K[%4zu/%4zu] %5.1fs %-28s %s" : "[%4zu/%4zu] %5.1fs %-28s %s\n", i + 1, n,
                 elapsed(), tensor.c_str(), type_name(t));
    std::fflush(stderr);
  };
  synth_model(config, mix, vocab.get(), out_path, options);
  // The writer streams row chunks: the peak stays near the vocabulary plus a chunk per thread.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::fprintf(stderr, "%swrote %s (%s, %s, %llu bytes) in %.1f s, peak RSS %.0f MB\n", tty ? "\r\033[K" : "",
               out_path.c_str(), shape.c_str(), quant_mix_name(mix), (unsigned long long)std::filesystem::file_size(out_path),
               elapsed(), double(usage.ru_maxrss) / 1024.0);
  return 0;
}

Command reg("synth", "write a real-shaped GGUF with random weights (see --shape)", run_synth);

}  // namespace
}  // namespace ztvm::cli
