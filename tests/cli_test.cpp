// `ztvm` as a user runs it: golden text on stories260K, logits against llama.cpp's on the same
// files, and one clear line + exit status 1 for every kind of bad input.
#include <gtest/gtest.h>

#include "cli_test_util.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "engine/npy.h"

namespace fs = std::filesystem;

using ztvm::test::CliRun;
using ztvm::test::run_ztvm;

namespace {

const std::string kSrc = ZTVM_SOURCE_DIR;
const std::string kStories = std::string(ZTVM_TESTDATA) + "/stories260K/";

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t common_prefix(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) i++;
  return i;
}

// Exit status 1, nothing on stdout, and one error line (the last on stderr, after any progress
// lines) naming the problem.
void expect_clean_error(const CliRun& r, const std::string& must_contain) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  std::string last = r.err.substr(0, r.err.size() - 1);
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  EXPECT_EQ(r.err.find("error:"), r.err.rfind("error:")) << "more than one error line: " << r.err;
  EXPECT_NE(last.find("error:"), std::string::npos) << "stderr: " << r.err;
  EXPECT_NE(last.find(must_contain), std::string::npos) << "stderr: " << r.err;
}

}  // namespace

// llama2.c's run.c counts the prompt inside its 64 steps and echoes it; `ztvm run` prints only the
// continuation, so prompt + our output must start with the reference text.
TEST(Cli, RunReproducesLlama2cGreedyText) {
  const std::string want = read_file(kStories + "expected_greedy_once_upon_64.txt");
  for (const char* f : {"stories260K-f32.gguf", "stories260K-Q8_0.gguf"}) {
    CliRun r = run_ztvm("run -m " + kStories + f + " -p 'Once upon a time' -n 60 --temp 0 -q");
    ASSERT_EQ(r.status, 0) << r.err;
    std::string got = "Once upon a time" + r.out;
    EXPECT_EQ(got.substr(0, want.size()), want) << f;
  }
  CliRun r = run_ztvm("run -m " + kStories + "stories260K-Q4_0.gguf -p 'Once upon a time' -n 60 -q");
  ASSERT_EQ(r.status, 0) << r.err;
  size_t same = common_prefix("Once upon a time" + r.out, want);
  std::printf("  Q4_0 agrees with the f32 reference text for %zu of %zu characters\n", same, want.size());
  EXPECT_GE(same, 60u);  // the first sentence; llama.cpp's Q4_0 run also diverges early
}

// -n -1, as in llama.cpp: generate until end of sequence or until the context is full.
TEST(Cli, RunWithMinusOneFillsTheContext) {
  CliRun r = run_ztvm("run -m " + kStories + "stories260K-Q8_0.gguf -p hi -n -1 --ctx 64 --ignore-eos");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("prompt 3 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("generated 61 tokens"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not "), std::string::npos) << r.err;  // no "generating N tokens, not M" note
}

// --json-schema (and --json): the output is JSON the schema allows, read here by nlohmann.
TEST(Cli, RunHoldsItsOutputToAJsonSchema) {
  const fs::path schema = fs::temp_directory_path() / "ztvm_cli_schema.json";
  std::ofstream(schema) << R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                              "additionalProperties": false})";
  for (int seed : {1, 2}) {
    CliRun r = run_ztvm("run -m " + kStories + "stories260K-Q8_0.gguf -p 'Once upon a time' -n 120 --temp 1 --seed " +
                        std::to_string(seed) + " -q --json-schema " + schema.string());
    ASSERT_EQ(r.status, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j.size(), 1u) << r.out;
    EXPECT_TRUE(j["ok"].is_boolean()) << r.out;
  }
  CliRun r = run_ztvm("run -m " + kStories + "stories260K-Q8_0.gguf -p 'Once upon a time' -n 30 --temp 0 -q --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find_first_not_of(" \n"), r.out.find('{')) << r.out;
  std::ofstream(schema) << R"({"type": "strange"})";
  expect_clean_error(run_ztvm("run -p hi --json-schema " + schema.string()), "unknown type 'strange'");
  fs::remove(schema);
}

// No -m: the embedded default model (models/default.gguf, beside the binary as ztvm-default.gguf).
TEST(Cli, RunWithoutModelUsesTheDefaultModel) {
  CliRun r = run_ztvm("run -p 'And God said' -n 24 -q");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(r.out.size(), 40u) << r.out;
  EXPECT_NE(r.out.find(' '), std::string::npos) << r.out;  // words, not a single piece
}

TEST(Cli, LogitsMatchLlamaCppOnTheSameFiles) {
  const std::string fx = kSrc + "/tests/fixtures/stories260K/";
  std::string ids = read_file(fx + "ids.txt");
  for (char& c : ids)
    if (c == ' ') c = ',';
  while (!ids.empty() && (ids.back() == '\n' || ids.back() == ',')) ids.pop_back();
  const std::pair<const char*, double> cases[] = {{"f32", 1e-5}, {"Q8_0", 1e-3}, {"Q4_0", 1e-3}};
  for (auto [type, bound] : cases) {
    fs::path out = fs::temp_directory_path() / ("ztvm_logits_" + std::string(type) + ".npy");
    CliRun r = run_ztvm("logits -m " + kStories + "stories260K-" + type + ".gguf --ids " + ids + " -o " + out.string());
    ASSERT_EQ(r.status, 0) << r.err;
    ztvm::NpyArray got = ztvm::read_npy(out.string()), want = ztvm::read_npy(fx + "logits_" + type + ".npy");
    ASSERT_EQ(got.shape, want.shape);
    double num = 0, den = 0;
    size_t top1 = 0, n = want.shape[0], v = want.shape[1];
    for (size_t i = 0; i < got.data.size(); i++) {
      num += (double)(got.data[i] - want.data[i]) * (got.data[i] - want.data[i]);
      den += (double)want.data[i] * want.data[i];
    }
    for (size_t t = 0; t < n; t++) {
      auto a = got.data.begin() + t * v, b = want.data.begin() + t * v;
      top1 += std::max_element(a, a + v) - a == std::max_element(b, b + v) - b;
    }
    std::printf("  stories260K %s: NMSE vs llama.cpp %.3g, top-1 agreement %zu/%zu\n", type, num / den, top1, n);
    EXPECT_LT(num / den, bound) << type;
    EXPECT_GE(top1 + 1, n) << type;
    fs::remove(out);
  }
}

// --quantize re-encodes a Hugging Face directory's float weights on load the way `convert --type`
// writes them to a file: the logits of the two agree (to rounding: the GGUF's llama Q/K rows are
// permuted for its RoPE), and differ from the float model's by a quantization's error. The cases
// cover permuted Q/K (llama), a tied Q6_K head (Q4_K), fused QKV and gate/up views (phi3), QK-norm.
TEST(Cli, QuantizeOnLoadMatchesConvertedFile) {
  auto nmse = [](const ztvm::NpyArray& a, const ztvm::NpyArray& b) {
    EXPECT_EQ(a.shape, b.shape);
    double num = 0, den = 0;
    for (size_t i = 0; i < a.data.size() && i < b.data.size(); i++) {
      num += (double)(a.data[i] - b.data[i]) * (a.data[i] - b.data[i]);
      den += (double)b.data[i] * b.data[i];
    }
    return num / den;
  };
  const std::pair<const char*, const char*> cases[] = {
      {"llama-gqa-f16", "Q8_0"}, {"llama-tied-f16", "Q4_K"}, {"phi3-f16", "Q4_K"}, {"qwen3-f16", "Q4_0"}};
  const fs::path tmp = fs::temp_directory_path() / "ztvm_cli_quantize";
  fs::create_directories(tmp);
  CliRun r;
  for (auto [model, type] : cases) {
    const std::string dir = kSrc + "/tests/fixtures/models/" + model;
    std::string ids = read_file(dir + "/ids.txt");
    for (char& c : ids) c = c == ' ' ? ',' : c;
    while (!ids.empty() && (ids.back() == '\n' || ids.back() == ',')) ids.pop_back();
    const std::string gguf = (tmp / "m.gguf").string(), a = (tmp / "a.npy").string(), b = (tmp / "b.npy").string(),
                      f = (tmp / "f.npy").string();
    ASSERT_EQ(run_ztvm("convert " + dir + " -o " + gguf + " --type " + type).status, 0) << model;
    ASSERT_EQ(run_ztvm("logits -m " + gguf + " --ids " + ids + " -o " + a).status, 0) << model;
    r = run_ztvm("logits -m " + dir + " --quantize " + type + " --ids " + ids + " -o " + b);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("float matrices quantized to " + std::string(type)), std::string::npos) << r.err;
    ASSERT_EQ(run_ztvm("logits -m " + dir + " --ids " + ids + " -o " + f).status, 0) << model;
    const double vs_file = nmse(ztvm::read_npy(b), ztvm::read_npy(a)), vs_float = nmse(ztvm::read_npy(b), ztvm::read_npy(f));
    std::printf("  %s %s: NMSE vs the converted file %.3g, vs the float weights %.3g\n", model, type, vs_file, vs_float);
    EXPECT_LT(vs_file, 1e-8) << model << " " << type;
    EXPECT_GT(vs_float, 1e-7) << model << " " << type;  // the weights did change
    EXPECT_LT(vs_float, 0.1) << model << " " << type;  // 4 bits of random N(0, 0.05) weights: ~0.03-0.06
  }
  r = run_ztvm("run -m " + kStories + "stories260K-f32.gguf --quantize Q5_1 -p hi -n 1");  // CLI11's check
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--quantize: Q5_1 not in"), std::string::npos) << r.err;
  fs::remove_all(tmp);
}

TEST(Cli, BadInputsGiveOneLineAndExit1) {
  fs::path tmp = fs::temp_directory_path() / "ztvm_cli_bad";
  fs::create_directories(tmp);
  const std::string good = read_file(kStories + "stories260K-f32.gguf");
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream((tmp / name).string(), std::ios::binary) << bytes;
    return (tmp / name).string();
  };
  expect_clean_error(run_ztvm("logits -m /nonexistent/model.gguf --ids 1 -o /dev/null"), "/nonexistent/model.gguf");
  expect_clean_error(run_ztvm("logits -m " + write("trunc.gguf", good.substr(0, 1000)) + " --ids 1 -o /dev/null"), "trunc.gguf");
  expect_clean_error(run_ztvm("logits -m " + write("trunc2.gguf", good.substr(0, good.size() - 100)) + " --ids 1 -o /dev/null"),
                     "trunc2.gguf");
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  expect_clean_error(run_ztvm("run -m " + write("magic.gguf", bad_magic) + " -p hi -n 1"), "magic.gguf");
  fs::create_directories(tmp / "neox");
  write("neox/config.json", R"({"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"]})");
  write("neox/model.safetensors", std::string("\x02\0\0\0\0\0\0\0{}", 10));  // a valid, empty file
  expect_clean_error(run_ztvm("logits -m " + (tmp / "neox").string() + " --ids 1 -o /dev/null"), "gpt_neox");
  expect_clean_error(run_ztvm("logits -m " + kStories + "stories260K-f32.gguf --ids 1,99999 -o /dev/null"), "99999");
  expect_clean_error(run_ztvm("logits -m " + kStories + "stories260K-f32.gguf --ids 1,x -o /dev/null"), "'x'");
  expect_clean_error(run_ztvm("run -m " + kStories + "stories260K-f32.gguf --ctx 8 -p 'Once upon a time there was a girl named Lily' -n 4"),
                     "context");
  // A context whose buffers exceed what the GPU allows: named as the context, with the option to change.
  expect_clean_error(run_ztvm("run -m " + kStories + "stories260K-f32.gguf --ctx 200000000 -p hi -n 1"), "--ctx");
  // Writing over a file the command reads is refused, and the file is left as it was.
  const std::string own = write("own.gguf", good);
  expect_clean_error(run_ztvm("convert " + own + " -o " + own + " --type Q8_0"), "is the input file itself");
  expect_clean_error(run_ztvm("synth --shape llama-3.2-1b --vocab " + own + " -o " + own), "is the --vocab file itself");
  EXPECT_EQ(read_file(own), good);
  fs::remove_all(tmp);
}

// By default the device runs without WebGPU's bounds clamps and workgroup zeroing; --gpu-robust keeps
// them. The kernels must give the same tokens either way: prefill through the GEMM and flash
// attention, decode past 512 positions (the split attention and its combine).
TEST(Cli, RobustGpuModeGivesTheSameTokens) {
  const std::string m = kStories + "stories260K-Q4_0.gguf";
  fs::path json = fs::temp_directory_path() / "ztvm_bench_robust.json";
  std::vector<std::vector<int>> tokens;
  for (const std::string flag : {"", " --gpu-robust"}) {
    CliRun r = run_ztvm("bench -m " + m + " --ctx 1024 -d 520 -p 100 -n 12 -r 1 --warmup 0 --json " + json.string() + flag);
    ASSERT_EQ(r.status, 0) << r.err;
    tokens.push_back(nlohmann::json::parse(read_file(json.string())).at("tokens").get<std::vector<int>>());
  }
  fs::remove(json);
  EXPECT_EQ(tokens[0].size(), 12u);
  EXPECT_EQ(tokens[0], tokens[1]);
  CliRun g = run_ztvm("gpu --gpu-robust");
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_NE(g.out.find("robust       yes"), std::string::npos) << g.out;
  g = run_ztvm("gpu");
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_NE(g.out.find("robust       no"), std::string::npos) << g.out;
}

// `ztvm bench`: runs, verifies and reports (JSON too); --knockout leaves a kernel role's dispatches
// out and says how many, and a role that matches nothing is an error rather than a silent no-op;
// --profile-pipelines times each pipeline.
TEST(Cli, BenchReportsAndKnocksOutRoles) {
  const std::string m = kStories + "stories260K-Q4_0.gguf";
  fs::path json = fs::temp_directory_path() / "ztvm_bench.json";
  CliRun r = run_ztvm("bench -m " + m + " -p 8 -n 8 -r 2 --warmup 0 --json " + json.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("TTFT"), std::string::npos) << r.out;
  nlohmann::json j = nlohmann::json::parse(read_file(json.string()));
  EXPECT_GT(j.at("ttft_ms").get<double>(), 0);
  EXPECT_GT(j.at("decode_tps").get<double>(), 0);
  EXPECT_EQ(j.at("tokens").size(), 8u);
  EXPECT_TRUE(j.at("knockout").empty());
  EXPECT_EQ(j.at("warmup_runs").get<uint32_t>(), 0u);  // --warmup 0: none, whatever --warmup-ms says

  // The warm-up: at least --warmup runs, more until --warmup-ms have passed, none of them measured.
  r = run_ztvm("bench -m " + m + " -p 4 -n 2 -r 1 --warmup 1 --warmup-ms 300 --json " + json.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("warm-up"), std::string::npos) << r.out;
  EXPECT_GE(nlohmann::json::parse(read_file(json.string())).at("warmup_runs").get<uint32_t>(), 1u);

  r = run_ztvm("bench -m " + m + " -p 8 -n 8 -r 2 --warmup 0 --knockout matvec_q8_q4_0_norm --json " + json.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("dispatches per run left out"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(read_file(json.string())).at("knockout")[0], "matvec_q8_q4_0_norm");
  fs::remove(json);

  expect_clean_error(run_ztvm("bench -m " + m + " -p 8 -n 8 -r 1 --knockout no_such_role"), "knocked-out role");

  // --profile-pipelines: a row per pipeline, named with its constants (each matrix shape apart).
  r = run_ztvm("bench -m " + m + " -p 8 -n 4 -r 1 --warmup 0 --profile-pipelines");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("pipeline\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matvec[dotq8_q4_0,"), std::string::npos) << r.out;  // the includes, by key
  EXPECT_NE(r.out.find(",weight_q4_0,"), std::string::npos) << r.out;

  // --profile: a row per role; argmax's last pass under its own name, not the embedding table's type.
  r = run_ztvm("bench -m " + m + " -p 8 -n 4 -r 1 --warmup 0 --profile");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("argmax_final"), std::string::npos) << r.out;
}

// -p, -n and -d as comma lists (llama-bench's way): a case per combination on one loaded model, depth
// outermost, each verified and reported, a table of them all, and a JSON array in that order. A case
// that does not fit --ctx is refused before anything runs.
TEST(Cli, BenchRunsEveryCombinationOfItsLists) {
  const std::string m = kStories + "stories260K-Q4_0.gguf";
  fs::path json = fs::temp_directory_path() / "ztvm_bench_cases.json";
  CliRun r = run_ztvm("bench -m " + m + " -p 8,16 -n 4,6 -d 0,24 -r 1 --warmup 0 --json " + json.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("case 8 of 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| depth | prompt | gen |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| 24 | 16 | 6 |"), std::string::npos) << r.out;
  nlohmann::json j = nlohmann::json::parse(read_file(json.string()));
  fs::remove(json);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 8u);
  size_t i = 0;
  for (uint32_t d : {0u, 24u})
    for (uint32_t p : {8u, 16u})
      for (uint32_t n : {4u, 6u}) {
        EXPECT_EQ(j[i].at("depth").get<uint32_t>(), d) << i;
        EXPECT_EQ(j[i].at("n_prompt").get<uint32_t>(), p) << i;
        EXPECT_EQ(j[i].at("tokens").size(), n) << i;
        EXPECT_GT(j[i].at("decode_tps").get<double>(), 0) << i;
        i++;
      }
  // Greedy decoding from the same cache: a case's tokens do not depend on the cases before it.
  r = run_ztvm("bench -m " + m + " -p 16 -n 6 -d 24 -r 1 --warmup 0 --json " + json.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(json.string())).at("tokens"), j[7].at("tokens"));
  fs::remove(json);
  expect_clean_error(run_ztvm("bench -m " + m + " --ctx 16 -p 8,16 -n 4 -r 1"), "need a context of 21 tokens");
}

// ztvm embed: -f takes a text a line (blank lines skipped); the similarity matrix is symmetric, 1 on
// the diagonal and for a repeated text, below 1 for another; bad input names what to change.
TEST(Cli, EmbedReadsLinesAndPrintsSimilarities) {
  const fs::path file = fs::temp_directory_path() / "ztvm_cli_embed.txt";
  std::ofstream(file) << "Once upon a time\n\nOnce upon a time\r\nThe dog ran to the park\n";
  const std::string m = "-m " + kStories + "stories260K-Q8_0.gguf";
  CliRun r = run_ztvm("embed " + m + " -f " + file.string() + " --format similarity");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  std::vector<std::vector<double>> s(3, std::vector<double>(3));
  for (auto& row : s)
    for (double& x : row) ASSERT_TRUE(in >> x) << r.out;
  EXPECT_DOUBLE_EQ(s[0][0], 1.0);
  EXPECT_DOUBLE_EQ(s[0][1], 1.0);  // the same text on another line
  EXPECT_LT(s[0][2], 0.99);
  EXPECT_DOUBLE_EQ(s[0][2], s[2][0]);
  EXPECT_NE(r.err.find("3 texts"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pooling mean (the model names none)"), std::string::npos) << r.err;
  expect_clean_error(run_ztvm("embed " + m + " --ctx 8 -p 'Once upon a time there was a girl named Lily'"), "raise --ctx");
  expect_clean_error(run_ztvm("embed " + m + " --dimensions 65 -p hi"), "have 64");
  expect_clean_error(run_ztvm("embed " + m), "nothing to embed");
  fs::remove(file);
}
