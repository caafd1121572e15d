// ztvm bench: TTFT, decode and total tok/s (and decode GB/s) as the median of N runs after a
// warm-up of at least --warmup runs and --warmup-ms of wall time. Every run starts from an empty KV cache (full prefill), decodes greedily ignoring EOS,
// and must produce the same tokens as the first run with no GPU error — or no number is reported.
// -p, -n and -d take comma lists, as llama-bench's do: every combination is a case of its own (its
// own warm-up and runs) on one loaded model, with a table of them all at the end.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/engine_setup.h"
#include "gpu/profiler.h"

namespace ztvm::cli {

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

namespace {

struct BenchCase {
  uint32_t depth, n_prompt, n_gen;
};

struct BenchFlags {
  uint32_t runs = 5, warmup = 1, warmup_ms = 500, steps_per_submit = 0;
  bool profile = false, by_pipeline = false;
  std::vector<std::string> knockout;
};

// A fixed pseudo-random prompt (speed does not depend on which ids), avoiding the first 16 ids.
std::vector<int32_t> bench_ids(uint32_t n, uint32_t seed, uint32_t vocab) {
  std::vector<int32_t> ids(n);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& id : ids) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    id = 16 + (int32_t)((s >> 33) % (vocab - 16));
  }
  return ids;
}

// One case: its warm-up, its runs (each checked), its report on stdout; its JSON record.
nlohmann::json bench_case(Engine& e, const BenchCase& bc, const BenchFlags& f) {
  const uint32_t depth = bc.depth, n_prompt = bc.n_prompt, n_gen = bc.n_gen;
  std::vector<int32_t> context = bench_ids(depth, 7, e.model->config.vocab_size);
  std::vector<int32_t> prompt = bench_ids(n_prompt, 11, e.model->config.vocab_size);
  std::vector<int32_t> full = context;
  full.insert(full.end(), prompt.begin(), prompt.end());
  e.generator->set_steps_per_submit(f.steps_per_submit);
  const uint64_t knocked_before = e.device->knocked_out();
  // One run: a full prefill (after the depth's, untimed) and n_gen greedy tokens, checked.
  std::vector<int32_t> first_tokens;
  uint32_t n_done = 0;
  auto run_once = [&]() {
    Generator& gen = *e.generator;
    gen.reset();
    if (depth) gen.generate(context, 0, [](int32_t) { return true; });  // fill the cache (not timed)
    std::vector<int32_t> toks;
    GenerateStats st = gen.generate(full, n_gen, [&](int32_t t) {
      toks.push_back(t);
      return true;
    });
    e.device->check();
    if (st.n_prefilled != n_prompt)
      throw std::runtime_error("bench: expected a prefill of " + std::to_string(n_prompt) + " tokens, did " + std::to_string(st.n_prefilled));
    if (toks.size() != n_gen) throw std::runtime_error("bench: generated " + std::to_string(toks.size()) + " tokens, expected " + std::to_string(n_gen));
    if (n_done == 0) first_tokens = toks;
    else if (toks != first_tokens) throw std::runtime_error("bench: run " + std::to_string(n_done) + " generated different tokens than run 0");
    n_done++;
    return st;
  };
  // Warm-up by count and by time: an idle GPU clocks down (the H200 to 345 MHz after ~2 s, as while the
  // model loads) and takes longer than a short run to clock up again; with one warm-up run a 22 ms
  // prefill once read 3x slow in every measured run (bench/EXPERIMENTS.md, nineteenth paired run).
  using Clock = std::chrono::steady_clock;
  const Clock::time_point warm_t0 = Clock::now();
  auto warm_ms = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - warm_t0).count(); };
  uint32_t warm_runs = 0;
  while (warm_runs < f.warmup || (f.warmup > 0 && warm_ms() < f.warmup_ms)) {
    run_once();
    warm_runs++;
  }
  const double warm_total_ms = warm_ms();
  std::vector<double> ttft, decode_tps, total_tps, prefill_tps, encode_us, wait_us;
  uint32_t submissions = 0;  // the last run's decode submissions
  for (uint32_t r = 0; r < f.runs; r++) {
    const GenerateStats st = run_once();
    ttft.push_back(st.ttft_ms);
    prefill_tps.push_back(n_prompt / (st.ttft_ms / 1e3));
    decode_tps.push_back(n_gen > 1 ? (n_gen - 1) / (st.decode_ms / 1e3) : 0);
    total_tps.push_back(n_gen / ((st.ttft_ms + st.decode_ms) / 1e3));
    encode_us.push_back(st.encode_ms * 1e3 / n_gen);
    wait_us.push_back(st.wait_ms * 1e3 / n_gen);
    submissions = st.submissions;
  }
  const double bytes = (double)e.forward->weights().bytes_per_token();
  const double dec = median(decode_tps);
  if (!f.knockout.empty()) {
    const uint64_t knocked = e.device->knocked_out() - knocked_before;
    if (knocked == 0) throw std::runtime_error("bench: no dispatch has a knocked-out role (see --profile for the roles)");
    std::printf("knockout: %.1f dispatches per run left out; the output is not the model's\n",
                (double)knocked / (warm_runs + f.runs));
  }
  std::printf("model %s | prompt %u (depth %u) | gen %u | runs %u | warm-up %u runs, %.0f ms\n", e.model->path.c_str(),
              n_prompt, depth, n_gen, f.runs, warm_runs, warm_total_ms);
  std::printf("TTFT %.2f ms | prefill %.1f tok/s | decode %.1f tok/s | total %.1f tok/s | decode %.1f GB/s (%.1f MB/token)\n",
              median(ttft), median(prefill_tps), dec, median(total_tps), bytes * dec / 1e9, bytes / 1e6);
  // Decode is host-bound when recording a step takes longer than the GPU runs one (then the wait is ~0).
  std::printf("decode host time per token: %.1f us recording and submitting, %.1f us waiting for the GPU | "
              "%u steps in %u submissions (%s)\n",
              median(encode_us), median(wait_us), n_gen > 0 ? n_gen - 1 : 0, submissions,
              f.steps_per_submit ? "--steps-per-submit" : "automatic");
  // The tokens' fingerprint (FNV-1a over their ids): two builds' runs on one file can be checked for
  // the same output without the JSON (bench/ab_h200.sh flags a side whose tokens differ).
  uint32_t fingerprint = 2166136261u;
  for (int32_t t : first_tokens) fingerprint = (fingerprint ^ (uint32_t)t) * 16777619u;
  std::printf("tokens %zu | fingerprint %08x\n", first_tokens.size(), fingerprint);
  if (f.profile) {
    Generator& gen = *e.generator;
    gen.reset();
    gen.set_steps_per_submit(1);  // a kernel's time, not the boundaries'
    gpu::Profiler prefill(*e.device, f.by_pipeline);
    e.device->set_profiler(&prefill);
    gen.generate(full, 1, [](int32_t) { return true; });
    gpu::Profiler decode(*e.device, f.by_pipeline);
    e.device->set_profiler(&decode);
    gen.generate(full, n_gen, [](int32_t) { return true; });  // the cache holds the prompt: decode steps only
    e.device->set_profiler(nullptr);
    std::printf("\nprefill of %u tokens, GPU time per kernel role:\n%s", (uint32_t)full.size(), prefill.report(1).c_str());
    std::printf("\ndecode, GPU time per kernel role per token:\n%s", decode.report(n_gen).c_str());
  }
  return {{"model", e.model->path},
          {"adapter", e.device->info().device},
          {"backend", e.device->info().backend},
          {"n_prompt", n_prompt},
          {"n_gen", n_gen},
          {"depth", depth},
          {"runs", f.runs},
          {"warmup_runs", warm_runs},
          {"weight_bytes_per_token", bytes},
          {"ttft_ms", median(ttft)},
          {"prefill_tps", median(prefill_tps)},
          {"decode_tps", dec},
          {"total_tps", median(total_tps)},
          {"decode_gbps", bytes * dec / 1e9},
          {"host_encode_us_per_token", median(encode_us)},
          {"host_wait_us_per_token", median(wait_us)},
          {"decode_submissions", submissions},
          {"raw", {{"ttft_ms", ttft}, {"decode_tps", decode_tps}, {"total_tps", total_tps}}},
          {"knockout", f.knockout},  // non-empty: timing only, the tokens are not the model's
          {"tokens", first_tokens}};
}

}  // namespace

static int run_bench(int argc, char** argv) {
  CLI::App app{"Measure TTFT, decode and total tok/s (median of runs, tokens verified)", argv[0]};
  EngineOptions eo;
  eo.add_to(app, /*model_required=*/false);
  std::vector<uint32_t> n_prompts = {35}, n_gens = {128}, depths = {0};
  BenchFlags f;
  std::string json_out;
  app.add_option("-p,--n-prompt", n_prompts, "prompt tokens (a comma list: a case each)")
      ->delimiter(',')->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  app.add_option("-n,--n-gen", n_gens, "tokens to generate (a comma list: a case each)")
      ->delimiter(',')->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  std::vector<std::string> case_specs;
  app.add_option("--case", case_specs,
                 "DEPTH:PROMPT:GEN, a case; repeat it for several in one model load, instead of the -d x -p x -n product");
  app.add_option("-r,--runs", f.runs, "measured runs")->check(CLI::Range(1u, 1000u));
  app.add_option("--warmup", f.warmup, "unmeasured runs first (0: none, whatever --warmup-ms says)");
  app.add_option("--warmup-ms", f.warmup_ms, "and more unmeasured runs until this much wall time has passed");
  app.add_option("-d,--depth", depths, "tokens already in the KV cache before the prompt (long-context decode; a comma list)")
      ->delimiter(',')->capture_default_str()->check(CLI::Range(0u, 1u << 20));
  app.add_option("--json", json_out, "write results as JSON to this file (an array when there are several cases)");
  app.add_flag("--profile", f.profile, "after the runs, time every kernel with GPU timestamps (prefill, then decode)");
  app.add_flag("--profile-pipelines", f.by_pipeline, "--profile with a row per pipeline (each matrix shape) instead of per role");
  app.add_option("--knockout", f.knockout,
                 "leave every dispatch of this kernel role (a --profile row) out: the output is wrong, the time "
                 "saved is what the role costs in the stream");
  app.add_option("--steps-per-submit", f.steps_per_submit,
                 "decode steps recorded into one submission (0: automatic, as ztvm runs them)")
      ->check(CLI::Range(0u, 16u));
  CLI11_PARSE(app, argc, argv);
  f.profile = f.profile || f.by_pipeline;
  eo.timestamps = f.profile;
  std::vector<BenchCase> cases;
  for (uint32_t d : depths)
    for (uint32_t p : n_prompts)
      for (uint32_t n : n_gens) cases.push_back({d, p, n});
  if (!case_specs.empty()) cases.clear();
  for (const std::string& spec : case_specs) {  // a big model loads once for all of them (bench/run_h200.sh)
    unsigned d, p, n;
    char end;
    if (std::sscanf(spec.c_str(), "%u:%u:%u%c", &d, &p, &n, &end) != 3 || p == 0 || n == 0 || p > (1u << 20) ||
        n > (1u << 20) || d > (1u << 24))
      throw std::runtime_error("bench: --case '" + spec + "' is not DEPTH:PROMPT:GEN (prompt and gen at least 1)");
    cases.push_back({d, p, n});
  }
  auto need = [](const BenchCase& c) { return c.depth + c.n_prompt + c.n_gen + 1; };
  uint32_t ctx_needed = 0;
  for (const BenchCase& c : cases) ctx_needed = std::max(ctx_needed, need(c));
  if (eo.ctx == 0) eo.ctx = ctx_needed;
  for (const BenchCase& c : cases)  // before the model loads: nothing measured is thrown away
    if (need(c) > eo.ctx)
      throw std::runtime_error("bench: depth " + std::to_string(c.depth) + " + prompt " + std::to_string(c.n_prompt) +
                               " + " + std::to_string(c.n_gen) + " generated tokens need a context of " +
                               std::to_string(need(c)) + " tokens; --ctx is " + std::to_string(eo.ctx));
  Engine e = load_engine(eo);
  e.device->set_knockout({f.knockout.begin(), f.knockout.end()});
  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); i++) {
    if (cases.size() > 1) std::printf("%s== case %zu of %zu\n", i ? "\n" : "", i + 1, cases.size());
    results.push_back(bench_case(e, cases[i], f));
    std::fflush(stdout);
  }
  if (cases.size() > 1) {  // the cases side by side, as llama-bench's table
    std::printf("\n| depth | prompt | gen | TTFT ms | prefill tok/s | decode tok/s | total tok/s | decode GB/s |\n"
                "|---|---|---|---|---|---|---|---|\n");
    for (const nlohmann::json& r : results)
      std::printf("| %u | %u | %u | %.2f | %.1f | %.1f | %.1f | %.1f |\n", r["depth"].get<uint32_t>(),
                  r["n_prompt"].get<uint32_t>(), r["n_gen"].get<uint32_t>(), r["ttft_ms"].get<double>(),
                  r["prefill_tps"].get<double>(), r["decode_tps"].get<double>(), r["total_tps"].get<double>(),
                  r["decode_gbps"].get<double>());
  }
  if (!json_out.empty()) std::ofstream(json_out) << (cases.size() == 1 ? results[0] : results).dump(2) << "\n";
  return 0;
}

static Command reg("bench", "measure TTFT, decode and total tok/s (and GB/s) on a model", run_bench);

}  // namespace ztvm::cli
