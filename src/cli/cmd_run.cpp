// ztvm run: one-shot generation. Only the generated text goes to stdout, streamed as produced;
// load and speed figures go to stderr.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "cli/engine_setup.h"
#include "server/json_rule.h"
#include "text/stop_strings.h"
#include "text/tokenizer.h"

namespace ztvm::cli {

static int run_run(int argc, char** argv) {
  CLI::App app{"Generate text from a prompt", argv[0]};
  EngineOptions eo;
  eo.add_to(app, /*model_required=*/false);
  std::string prompt, prompt_file;
  int64_t n_arg = 128;
  SamplingParams sp;
  bool ignore_eos = false, quiet = false;
  uint64_t seed = 0;
  std::vector<std::string> stops;
  bool json = false;
  std::string schema_file;
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("-f,--file", prompt_file, "read the prompt from a file");
  app.add_option("-n,--n-predict", n_arg, "tokens to generate (-1: until end of sequence or the context is full)")
      ->check(CLI::Range(-1, 1 << 20));
  app.add_option("--temp", sp.temperature, "sampling temperature (0: greedy, the default)")->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", sp.top_k, "keep the k most likely tokens (0: all)")->check(CLI::Range(0, 1 << 24));
  app.add_option("--top-p", sp.top_p, "keep the most likely tokens covering this probability mass")->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", sp.min_p, "drop tokens below min-p times the top probability")->check(CLI::Range(0.0, 1.0));
  app.add_option("--repeat-penalty", sp.repeat_penalty, "penalise the last --repeat-last-n tokens (1: off)")->check(CLI::Range(0.0, 10.0));
  app.add_option("--repeat-last-n", sp.repeat_last_n, "window of the penalties")->check(CLI::Range(0, 1 << 20));
  app.add_option("--presence-penalty", sp.presence_penalty, "subtract from tokens already generated");
  app.add_option("--frequency-penalty", sp.frequency_penalty, "subtract per occurrence");
  app.add_option("--stop", stops, "stop when this text is generated (not printed); repeatable");
  auto* seed_opt = app.add_option("--seed", seed, "random seed (same seed, same output; default: from the clock)");
  app.add_flag("--ignore-eos", ignore_eos, "keep generating past end-of-sequence tokens");
  app.add_flag("--json", json, "hold the output to one JSON object, token by token (ends when it closes)");
  app.add_option("--json-schema", schema_file, "hold the output to JSON this schema file allows (as response_format)");
  app.add_flag("-q,--quiet", quiet, "no timings on stderr");
  CLI11_PARSE(app, argc, argv);
  sp.seed = seed_opt->count() ? seed : (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  if (!prompt_file.empty()) {
    std::ifstream f(prompt_file, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read prompt file " + prompt_file);
    std::stringstream ss;
    ss << f.rdbuf();
    prompt = ss.str();
  }

  // --json / --json-schema: tokens picked on the host among those the schema allows (server/json_rule.h);
  // the schema is read before the model loads, so a bad one fails at once.
  std::shared_ptr<JsonSchema> schema;
  if (json || !schema_file.empty()) {
    schema = std::make_shared<JsonSchema>();
    if (!schema_file.empty()) {
      std::ifstream f(schema_file);
      nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
      if (!f.is_open() || j.is_discarded()) throw std::runtime_error("--json-schema: cannot read JSON from " + schema_file);
      try {
        *schema = JsonSchema::compile(j);
      } catch (const std::invalid_argument& err) {
        const std::string what = err.what();  // "response_format.json_schema.schema: ..." names the API field
        throw std::runtime_error(schema_file + what.substr(what.find(':')));
      }
    }
  }
  Engine e = load_engine(eo, quiet);
  auto tok = Tokenizer::from_model_path(e.model->path);
  std::vector<int32_t> ids = tok->encode(prompt, /*add_special=*/true, /*parse_special=*/false);
  if (ids.empty()) throw std::runtime_error("the prompt tokenized to nothing and the model adds no BOS token");
  const std::vector<int32_t> eog = tok->eog_ids();
  uint32_t room = e.forward->max_context() - (uint32_t)ids.size();
  if (ids.size() >= e.forward->max_context())
    throw std::runtime_error("prompt of " + std::to_string(ids.size()) + " tokens does not fit the context of " +
                             std::to_string(e.forward->max_context()) + " (use --ctx)");
  uint32_t n = n_arg < 0 ? room : (uint32_t)n_arg;  // llama.cpp's -n -1
  if (n > room) {
    if (!quiet) std::fprintf(stderr, "ztvm: generating %u tokens, not %u: the context ends there\n", room, n);
    n = room;
  }
  std::unique_ptr<server::JsonRule> rule;
  if (schema) rule = std::make_unique<server::JsonRule>(*tok, schema);
  StreamDecoder dec(*tok);
  StopStrings stop(stops);
  GenerateStats st = e.generator->generate(ids, n, [&](int32_t id) {
    if (!ignore_eos && std::find(eog.begin(), eog.end(), id) != eog.end()) return false;
    std::string piece = stop.push(dec.push(id));
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return !stop.stopped();
  }, sp, rule.get());
  std::string rest = stop.stopped() ? "" : stop.push(dec.flush()) + stop.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);  // before the timings on stderr, also when stdout is a pipe
  if (!quiet) {
    double decode_tps = st.n_generated > 1 ? (st.n_generated - 1) / (st.decode_ms / 1e3) : 0;
    double total_tps = st.n_generated ? st.n_generated / ((st.ttft_ms + st.decode_ms) / 1e3) : 0;
    std::fprintf(stderr, "ztvm: prompt %u tokens, TTFT %.1f ms; generated %u tokens, decode %.1f tok/s, total %.1f tok/s\n",
                 st.n_prompt, st.ttft_ms, st.n_generated, decode_tps, total_tps);
  }
  return 0;
}

static Command reg("run", "generate text from a prompt ([-m MODEL] -p TEXT -n N; default: the embedded model)", run_run);

}  // namespace ztvm::cli
