// ztvm embed: one embedding vector per text (as /v1/embeddings gives them): the model's final states
// pooled and of unit length. Vectors go to stdout, one JSON array a line (or one OpenAI-shaped object,
// or the texts' cosine similarities); what was done goes to stderr.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/engine_setup.h"
#include "engine/embedding.h"
#include "text/tokenizer.h"

namespace ztvm::cli {

namespace {

// The lines of a file that hold something (one text a line, as llama-embedding splits its prompt).
std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) out.push_back(line);
  }
  return out;
}

int run_embed(int argc, char** argv) {
  CLI::App app{"Print the embedding of each text", argv[0]};
  EngineOptions eo;
  eo.add_to(app, /*model_required=*/false);
  std::vector<std::string> texts;
  std::string file, pooling_arg, format = "jsonl";
  uint32_t dimensions = 0;
  bool quiet = false;
  app.add_option("-p,--prompt", texts, "a text to embed; repeatable");
  app.add_option("-f,--file", file, "embed each non-empty line of this file");
  app.add_option("--pooling", pooling_arg, "mean | cls | last (default: the model's, else mean)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  app.add_option("--dimensions", dimensions, "keep the first N dimensions, scaled back to unit length")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--format", format, "jsonl: a JSON array a line | json: an OpenAI embeddings response | "
                 "similarity: the texts' cosine similarity matrix")
      ->check(CLI::IsMember({"jsonl", "json", "similarity"}));
  app.add_flag("-q,--quiet", quiet, "nothing on stderr but errors");
  CLI11_PARSE(app, argc, argv);
  if (!file.empty()) {
    std::vector<std::string> lines = read_lines(file);
    texts.insert(texts.end(), lines.begin(), lines.end());
  }
  if (texts.empty()) throw std::runtime_error("nothing to embed: give -p TEXT (repeatable) or -f FILE");

  Engine e = load_engine(eo, quiet);
  const ModelConfig& c = e.model->config;
  const Pooling pooling = choose_pooling(c, pooling_arg.empty() ? Pooling::Unset : parse_pooling(pooling_arg));
  if (dimensions > c.hidden_size)
    throw std::runtime_error("--dimensions " + std::to_string(dimensions) + ": the model's embeddings have " +
                             std::to_string(c.hidden_size));
  auto tok = Tokenizer::from_model_path(e.model->path);
  std::vector<std::vector<int32_t>> ids;
  size_t n_tokens = 0;
  for (size_t i = 0; i < texts.size(); i++) {  // every text checked before any is run
    ids.push_back(tok->encode(texts[i], /*add_special=*/true, /*parse_special=*/true));  // as the server
    if (ids.back().empty()) throw std::runtime_error("text " + std::to_string(i + 1) + " tokenized to nothing");
    if (ids.back().size() > e.forward->max_context())
      throw std::runtime_error("text " + std::to_string(i + 1) + " is " + std::to_string(ids.back().size()) +
                               " tokens, more than the context of " + std::to_string(e.forward->max_context()) +
                               " (raise --ctx)");
    n_tokens += ids.back().size();
  }

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<float>> vecs;
  for (const auto& t : ids) {
    vecs.push_back(e.generator->embedding(t, pooling));
    if (dimensions) keep_dimensions(vecs.back(), dimensions);
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  if (format == "similarity") {
    for (size_t i = 0; i < vecs.size(); i++) {
      for (size_t j = 0; j < vecs.size(); j++) std::printf("%s%.4f", j ? " " : "", cosine(vecs[i], vecs[j]));
      std::printf("\n");
    }
  } else if (format == "json") {
    nlohmann::json data = nlohmann::json::array();
    for (size_t i = 0; i < vecs.size(); i++)
      data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", vecs[i]}});
    nlohmann::json out = {{"object", "list"}, {"data", data}, {"model", c.name},
                          {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    for (const auto& v : vecs) std::printf("%s\n", nlohmann::json(v).dump().c_str());
  }
  if (!quiet) {
    const char* whence = !pooling_arg.empty() ? "asked" : c.pooling != Pooling::Unset ? "the model's" : "the model names none";
    std::fprintf(stderr, "ztvm: %zu text%s, %zu tokens, pooling %s (%s), %zu dimensions, %.1f ms (%.0f tok/s)\n",
                 texts.size(), texts.size() == 1 ? "" : "s", n_tokens, pooling_name(pooling), whence,
                 vecs[0].size(), ms, n_tokens / (ms / 1000));
  }
  return 0;
}

}  // namespace

static Command reg("embed", "print the embedding vector of each text", run_embed);

}  // namespace ztvm::cli
