// ztvm tokenize: text -> token ids with a model's tokenizer, one line of space-separated ids.
// Defaults follow the tokenizer test vectors: no BOS/EOS, special-token text left as text.
// --bench times encoding a file (e.g. build/testdata/corpora/kjv.txt) and prints MB/s.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "hub/pull.h"
#include "model/model_error.h"
#include "text/tokenizer.h"

namespace ztvm::cli {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Encodes `text` a few times: the first pass fills the word cache, the best pass shows steady state.
void run_bench(const Tokenizer& tok, const std::string& text, double load_s) {
  const double mb = (double)text.size() / 1e6;
  std::printf("load      %.3f s, vocab %zu\n", load_s, tok.vocab_size());
  std::vector<int32_t> ids;
  double best = 1e30;
  for (int pass = 0; pass < 4; pass++) {
    auto t0 = std::chrono::steady_clock::now();
    ids = tok.encode(text, false, false);
    double s = seconds_since(t0);
    if (pass == 0) std::printf("encode    %.2f MB in %.3f s cold: %.1f MB/s, %zu tokens\n", mb, s, mb / s, ids.size());
    best = std::min(best, s);
  }
  std::printf("encode    warm best %.3f s: %.1f MB/s, %.2f M tokens/s\n", best, mb / best, ids.size() / best / 1e6);
  auto t0 = std::chrono::steady_clock::now();
  std::string back = tok.decode(ids);
  double s = seconds_since(t0);
  std::printf("decode    %.3f s: %.1f MB/s, round trip %s\n", s, mb / s, back == text ? "exact" : "differs");
}

int run_tokenize(int argc, char** argv) {
  CLI::App app{"Print the token ids of a text (no BOS/EOS, special-token text not parsed)", argv[0]};
  std::string model, tokenizer_json, file, text;
  bool add_special = false, parse_special = false, bench = false, pieces = false;
  auto* m = app.add_option("-m,--model", model, "a .gguf file, a Hugging Face model directory or ORG/REPO[:TAG]");
  auto* t = app.add_option("--tokenizer", tokenizer_json, "a tokenizer.json file");
  auto* f = app.add_option("-f,--file", file, "read the text from this file");
  auto* p = app.add_option("text", text, "the text (when no -f)");
  app.add_flag("--add-special", add_special, "add BOS/EOS as the model does");
  app.add_flag("--parse-special", parse_special, "turn special-token text such as <|im_start|> into its token");
  app.add_flag("--pieces", pieces, "print id:piece pairs, one per line, instead of the ids");
  app.add_flag("--bench", bench, "time encoding of the -f file and print MB/s");
  m->excludes(t);
  f->excludes(p);
  CLI11_PARSE(app, argc, argv);
  if (model.empty() && tokenizer_json.empty()) throw ModelError("give -m MODEL or --tokenizer tokenizer.json");
  if (file.empty() && !p->count() && !bench) throw ModelError("give TEXT or -f FILE");

  auto t0 = std::chrono::steady_clock::now();
  auto tok = model.empty() ? Tokenizer::from_json(tokenizer_json) : Tokenizer::from_model_path(hub::resolve_model(model));
  double load_s = seconds_since(t0);
  if (!file.empty()) text = read_file(file);
  if (bench) {
    if (file.empty()) throw ModelError("--bench needs -f FILE (e.g. build/testdata/corpora/kjv.txt)");
    run_bench(*tok, text, load_s);
    return 0;
  }

  std::vector<int32_t> ids = tok->encode(text, add_special, parse_special);
  if (pieces) {
    for (int32_t id : ids) std::printf("%d:%s\n", id, tok->piece(id).c_str());
    return 0;
  }
  std::string line;
  for (size_t i = 0; i < ids.size(); i++) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

static Command reg("tokenize", "print the token ids of a text", run_tokenize);

}  // namespace ztvm::cli
