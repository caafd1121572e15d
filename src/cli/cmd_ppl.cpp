// ztvm ppl: perplexity of a model over a text file, measured the way llama.cpp's llama-perplexity
// does by default (windows of --ctx tokens, BOS first, second half scored), so the two compare.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "cli/engine_setup.h"
#include "engine/perplexity.h"
#include "hub/pull.h"
#include "text/tokenizer.h"

namespace ztvm::cli {

static std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open the text file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

static int run_ppl(int argc, char** argv) {
  CLI::App app{"Perplexity of a model over a text file (llama.cpp's method: windows of --ctx tokens, "
               "second half of each scored)",
               argv[0]};
  EngineOptions eo;
  eo.add_to(app);  // its -c,--ctx is the window length here
  std::string text_path;
  uint32_t stride = 0, chunks = 0;
  app.add_option("-f,--file", text_path, "text file to score")->required();
  app.add_option("--stride", stride,
                 "window advance in tokens (default: --ctx, llama.cpp's non-overlapping windows; a stride "
                 "below ctx/2 scores only the last `stride` positions of each window)");
  app.add_option("--chunks", chunks, "score at most this many windows (default: all)");
  CLI11_PARSE(app, argc, argv);

  // The window defaults to 512 tokens (llama.cpp's default) but never exceeds what the model was
  // trained on; the model file is mapped, so opening it once more just to read the limit is cheap.
  eo.model = hub::resolve_model(eo.model);  // ORG/REPO[:TAG]: pulled once, here
  uint32_t model_ctx = open_model(eo.model)->config.max_position_embeddings;
  uint32_t ctx = eo.ctx ? eo.ctx : 512;
  if (model_ctx && ctx > model_ctx) {
    if (eo.ctx) std::fprintf(stderr, "ztvm: --ctx %u exceeds the model's context, using %u\n", ctx, model_ctx);
    ctx = model_ctx;
  }
  eo.ctx = ctx;

  auto tokenizer = Tokenizer::from_model_path(eo.model);
  std::string text = read_text_file(text_path);
  // As llama.cpp: the whole file in one call, BOS/EOS as the vocabulary asks, special-token text
  // left as plain text.
  std::vector<int32_t> tokens = tokenizer->encode(text, true, false);
  std::fprintf(stderr, "ztvm: %s: %zu bytes, %zu tokens\n", text_path.c_str(), text.size(), tokens.size());

  PerplexityOptions po;
  po.ctx = ctx;
  po.stride = stride;
  po.max_windows = chunks;
  po.bos = tokenizer->add_bos() ? tokenizer->bos_id() : -1;
  plan_perplexity_windows(tokens.size(), po);  // a text too short fails here, before the GPU starts

  Engine e = load_engine(eo);
  const size_t vocab = e.model->config.vocab_size;
  PerplexityResult r = compute_perplexity(
      tokens, vocab, po, [&](const std::vector<int32_t>& ids) { return e.generator->logits(ids); },
      [](size_t done, size_t total, double ppl) { std::fprintf(stderr, "[%zu/%zu] ppl %.4f\n", done, total, ppl); });
  std::printf("ppl %.4f +/- %.4f (95%% interval %.4f..%.4f), %zu tokens scored in %zu chunks\n", r.ppl, r.error,
              r.low, r.high, r.count, r.windows);
  return 0;
}

static Command reg("ppl", "perplexity of a model over a text file (llama.cpp's method)", run_ppl);

}  // namespace ztvm::cli
