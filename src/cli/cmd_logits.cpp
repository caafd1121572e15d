// ztvm logits: float32 logits [n_ids, vocab] for every position of a token sequence, as .npy.
// Needs no tokenizer: ids are given directly (the fixture format of the fidelity tests).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <sstream>

#include "cli/command.h"
#include "cli/engine_setup.h"
#include "engine/npy.h"

namespace ztvm::cli {

static std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream in(s);
  std::string tok;
  while (std::getline(in, tok, ',')) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(tok, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != tok.size()) throw std::runtime_error("--ids: '" + tok + "' is not an integer");
    ids.push_back((int32_t)v);
  }
  if (ids.empty()) throw std::runtime_error("--ids: no ids given");
  return ids;
}

static int run_logits(int argc, char** argv) {
  CLI::App app{"Write float32 logits [n_ids, vocab] for every position to a .npy file", argv[0]};
  EngineOptions eo;
  eo.add_to(app);
  std::string ids_text, out;
  app.add_option("--ids", ids_text, "comma-separated token ids, e.g. 1,2,3")->required();
  app.add_option("-o,--output", out, "output .npy path")->required();
  CLI11_PARSE(app, argc, argv);
  std::vector<int32_t> ids = parse_ids(ids_text);
  if (eo.ctx == 0) eo.ctx = (uint32_t)std::max<size_t>(ids.size(), 16);
  Engine e = load_engine(eo);
  std::vector<float> logits = e.generator->logits(ids);
  write_npy(out, logits.data(), {ids.size(), e.model->config.vocab_size});
  std::fprintf(stderr, "ztvm: wrote %s [%zu, %u]\n", out.c_str(), ids.size(), e.model->config.vocab_size);
  return 0;
}

static Command reg("logits", "write logits for every position of --ids to a .npy file", run_logits);

}  // namespace ztvm::cli
