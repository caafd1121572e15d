// ztvm convert MODEL -o OUT.gguf [--type T] [--vocab VOCAB.gguf]: re-encode a GGUF file or a
// Hugging Face directory as a GGUF file llama.cpp can load.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <unistd.h>

#include "cli/command.h"
#include "hub/pull.h"
#include "model/convert.h"
#include "model/model_error.h"

namespace ztvm::cli {
namespace {

int run_convert(int argc, char** argv) {
  CLI::App app{"Convert a model (.gguf or Hugging Face directory) to GGUF"};
  std::string model_path, out_path, type_str = "F16", vocab_path;
  app.add_option("model", model_path, "input: a .gguf file or a directory with config.json + *.safetensors")->required();
  app.add_option("-o,--output", out_path, "output .gguf path")->required();
  app.add_option("--type", type_str,
                 std::string("element type: ") + convert_type_list() +
                     " (default F16), or a llama-quantize mix with per-tensor types: Q4_K_M, Q5_K_M, Q3_K_M");
  std::string name;
  app.add_option("--name", name, "general.name to write (default: the source's name)");
  app.add_option("--vocab", vocab_path, "GGUF file whose tokenizer.* metadata is copied into the output");
  CLI11_PARSE(app, argc, argv);

  // An element type first (IQ4_XS, Q4_0, Q8_0, F16 are also mix names: they keep convert's meaning);
  // else a mix, whose types vary per tensor as llama-quantize's do.
  GgmlType type = GgmlType::F16;
  std::optional<QuantMix> mix;
  if (!type_from_name(type_str.c_str(), &type)) {
    try {
      mix = parse_quant_mix(type_str);
    } catch (const ModelError&) {
      throw ModelError("--type: unknown type '" + type_str + "' (expected one of " + convert_type_list() +
                       ", Q4_K_M, Q5_K_M, Q3_K_M)");
    }
  }
  model_path = hub::resolve_model(model_path);
  refuse_output_over_input(out_path, model_path, "input");
  refuse_output_over_input(out_path, vocab_path, "--vocab");
  std::unique_ptr<ModelFile> model = open_model(model_path);
  std::unique_ptr<GgufFile> vocab;
  if (!vocab_path.empty()) vocab = GgufFile::open(vocab_path);

  const auto start = std::chrono::steady_clock::now();
  ConvertOptions options;
  options.name = name;
  // One self-overwriting line on a terminal; one line per tensor when stderr is a log file.
  const bool tty = isatty(fileno(stderr));
  options.progress = [tty](size_t i, size_t n, const std::string& name, GgmlType t) {
    std::fprintf(stderr, tty ? "\r\033[K[%4zu/%4zu] %-32s %s" : "[%4zu/%4zu] %-32s %s\n", i + 1, n, name.c_str(),
                 type_name(t));
    std::fflush(stderr);
  };
  if (mix) convert_model(*model, out_path, *mix, vocab.get(), options);
  else convert_model(*model, out_path, type, vocab.get(), options);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%swrote %s (%s, %s, %.1f MiB) in %.1f s\n", tty ? "\r\033[K" : "", out_path.c_str(), model->config.arch_name.c_str(),
               mix ? quant_mix_name(*mix) : type_name(type), double(std::filesystem::file_size(out_path)) / (1 << 20), secs);
  return 0;
}

Command reg("convert", "convert a model to GGUF (F32/F16/BF16/Q8_0/Q4_0/Q4_K/Q5_K/Q6_K/Q4_K_M/...)", run_convert);

}  // namespace
}  // namespace ztvm::cli
