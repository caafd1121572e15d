// `ztvm pull` and `-m ORG/REPO[:TAG]` against a stand-in for the Hugging Face Hub on this machine:
// its tree listing (in pages), /resolve/ URLs that redirect to a CDN on another host name (which must
// not see the token), Range requests, and a CDN that can drop connections or corrupt a byte. The
// files are the real test models, so what was pulled is run and compared with the originals.
#include <gtest/gtest.h>
#include <httplib.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli_test_util.h"
#include "model_test_util.h"
#include "hub/hub.h"

namespace fs = std::filesystem;
using ztvm::test::CliRun;
using ztvm::test::run_ztvm;
using namespace ztvm::hub;

namespace {

const std::string kStories = std::string(ZTVM_TESTDATA) + "/stories260K/";
const std::string kGqa = std::string(ZTVM_SOURCE_DIR) + "/tests/fixtures/models/llama-gqa-f16/";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string hex_digest(const std::string& data, const EVP_MD* md) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(data.data(), data.size(), out, &n, md, nullptr);
  std::string s;
  for (unsigned i = 0; i < n; i++) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", out[i]);
    s += b;
  }
  return s;
}

// The hub: repositories of (path, bytes, stored with LFS or not).
struct FakeHub {
  struct File {
    std::string data;
    bool lfs;
  };
  std::map<std::string, std::map<std::string, File>> repos;
  std::set<std::string> gated;           // repositories that answer 401 without the token
  std::set<std::string> unserved;        // files listed that /resolve/ answers 404 for
  std::atomic<int> drop_after{-1};       // the CDN closes a response after this many bytes...
  std::atomic<int> drops_left{0};        // ...this many times
  std::atomic<bool> corrupt{false};      // the CDN flips a byte of every file
  std::atomic<int> errors_left{0};       // the CDN answers 503 this many times
  std::mutex mu;
  std::vector<std::string> api_auth, cdn_auth, cdn_ranges;
  httplib::Server srv;
  std::thread thread;
  int port = 0;

  FakeHub() {
    srv.Get(R"(/api/models/([^/]+)/([^/]+)/tree/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
      {
        std::lock_guard<std::mutex> l(mu);
        api_auth.push_back(req.get_header_value("Authorization"));
      }
      if (!repos.count(repo)) return void(res.status = 404);
      if (gated.count(repo) && req.get_header_value("Authorization") != "Bearer secret") return void(res.status = 401);
      // Two entries a page, the next page named by a Link header, as the hub's cursor pagination.
      const size_t from = req.has_param("cursor") ? std::stoul(req.get_param_value("cursor")) : 0;
      nlohmann::json page = nlohmann::json::array();
      size_t i = 0;
      for (const auto& [path, f] : repos[repo]) {
        if (i++ < from || page.size() == 2) continue;
        nlohmann::json e = {{"type", "file"}, {"path", path}, {"size", f.data.size()}};
        if (f.lfs) {
          e["oid"] = "0123456789abcdef0123456789abcdef01234567";  // the pointer's blob: not the content
          e["lfs"] = {{"oid", hex_digest(f.data, EVP_sha256())}, {"size", f.data.size()}, {"pointerSize", 134}};
        } else {
          e["oid"] = hex_digest("blob " + std::to_string(f.data.size()) + std::string(1, '\0') + f.data, EVP_sha1());
        }
        page.push_back(e);
      }
      page.push_back({{"type", "directory"}, {"path", "some-dir"}, {"oid", "x"}, {"size", 0}});
      if (from + 2 < repos[repo].size())
        res.set_header("Link", "<http://127.0.0.1:" + std::to_string(port) + req.path +
                                   "?recursive=true&cursor=" + std::to_string(from + 2) + ">; rel=\"next\"");
      res.set_content(page.dump(), "application/json");
    });
    // Bodies come from a CDN: another host name, so curl must not forward the Authorization header.
    srv.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
      if (!repos.count(repo) || !repos[repo].count(req.matches[4].str()) || unserved.count(req.matches[4].str()))
        return void(res.status = 404);
      res.set_redirect("http://localhost:" + std::to_string(port) + "/cdn/" + repo + "/" + req.matches[4].str());
    });
    srv.Get(R"(/cdn/([^/]+)/([^/]+)/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> l(mu);
        cdn_auth.push_back(req.get_header_value("Authorization"));
        cdn_ranges.push_back(req.get_header_value("Range"));
      }
      if (errors_left-- > 0) return void(res.status = 503);
      std::string data = repos[req.matches[1].str() + "/" + req.matches[2].str()][req.matches[3].str()].data;
      if (corrupt) data[data.size() / 2] ^= 1;
      const int cut = drops_left-- > 0 ? drop_after.load() : -1;
      auto sent = std::make_shared<size_t>(0);
      res.set_content_provider(data.size(), "application/octet-stream",
                               [data, cut, sent](size_t offset, size_t length, httplib::DataSink& sink) {
                                 size_t n = std::min<size_t>(length, 16384);
                                 if (cut >= 0 && *sent + n > (size_t)cut) return false;  // the connection drops
                                 sink.write(data.data() + offset, n);
                                 *sent += n;
                                 return true;
                               });
    });
    port = srv.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { srv.listen_after_bind(); });
  }
  ~FakeHub() {
    srv.stop();
    thread.join();
  }
};

class Pull : public ::testing::Test {
 protected:
  fs::path models = fs::temp_directory_path() / ("ztvm_pull_" + std::to_string(::getpid()));
  std::unique_ptr<FakeHub> hub = std::make_unique<FakeHub>();
  void SetUp() override {
    fs::remove_all(models);
    setenv("ZTVM_MODELS", models.c_str(), 1);
    setenv("HF_ENDPOINT", ("http://127.0.0.1:" + std::to_string(hub->port)).c_str(), 1);
    setenv("HF_TOKEN", "secret", 1);
    setenv("no_proxy", "127.0.0.1,localhost", 1);  // a proxy in the environment must not take the stand-in's traffic
    hub->repos["ztvm-test/stories"] = {{"stories260K-Q4_0.gguf", {slurp(kStories + "stories260K-Q4_0.gguf"), true}},
                                       {"stories260K-Q8_0.gguf", {slurp(kStories + "stories260K-Q8_0.gguf"), true}},
                                       {"README.md", {"# stories260K\n", false}}};
  }
  void TearDown() override { fs::remove_all(models); }
  std::string local(const std::string& rel) const { return (models / rel).string(); }
};

}  // namespace

TEST(HubSpec, ParsesReposTagsAndFiles) {
  auto s = parse_repo_spec("bartowski/Qwen3-4B-GGUF:Q4_K_M");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->repo, "bartowski/Qwen3-4B-GGUF");
  EXPECT_EQ(s->selector, "Q4_K_M");
  s = parse_repo_spec("hf.co/org/repo:sub/dir/model-q8_0.gguf");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->repo, "org/repo");
  EXPECT_EQ(s->selector, "sub/dir/model-q8_0.gguf");
  EXPECT_EQ(parse_repo_spec("https://huggingface.co/org/repo")->repo, "org/repo");
  EXPECT_FALSE(parse_repo_spec("model.gguf"));
  EXPECT_FALSE(parse_repo_spec("models/model.gguf"));  // a path, not a repository
  EXPECT_FALSE(parse_repo_spec("/abs/path"));
  EXPECT_FALSE(parse_repo_spec("a/b/c"));
  EXPECT_FALSE(parse_repo_spec("org/repo:../../etc/passwd"));
}

TEST(HubSpec, TagsMatchWholeQuantizationNames) {
  EXPECT_TRUE(name_has_tag("Qwen3-4B-Q4_K_M.gguf", "q4_k_m"));
  EXPECT_TRUE(name_has_tag("dir/model.Q4_0.gguf", "Q4_0"));
  EXPECT_FALSE(name_has_tag("Qwen3-4B-Q4_K_M.gguf", "Q4_K"));   // Q4_K is not Q4_K_M
  EXPECT_FALSE(name_has_tag("Qwen3-4B-IQ4_XS.gguf", "Q4_XS"));  // nor is IQ4_XS Q4_XS
  EXPECT_FALSE(name_has_tag("Qwen3-4B-Q4_0_4_4.gguf", "Q4_0"));
}

TEST(HubSpec, ChoosesOneGgufOrSaysWhatThereIs) {
  std::vector<RepoFile> files = {{"m-Q4_0.gguf", 1}, {"m-Q4_K_M.gguf", 1}, {"mmproj-m-f16.gguf", 1}, {"README.md", 1}};
  EXPECT_EQ(choose_files(files, {"o/r", ""}).files.at(0).path, "m-Q4_K_M.gguf");  // the default tag
  EXPECT_EQ(choose_files(files, {"o/r", "q4_0"}).files.at(0).path, "m-Q4_0.gguf");
  EXPECT_EQ(choose_files(files, {"o/r", "m-Q4_0.gguf"}).files.at(0).path, "m-Q4_0.gguf");
  try {
    choose_files(files, {"o/r", "Q6_K"});
    FAIL() << "no Q6_K file";
  } catch (const HubError& e) {
    EXPECT_NE(std::string(e.what()).find("m-Q4_0.gguf, m-Q4_K_M.gguf"), std::string::npos) << e.what();
  }
  // A split GGUF: all its parts, the first first, by tag or by any part's name; not with one missing.
  std::vector<RepoFile> split = {{"big-Q8_0-00002-of-00002.gguf", 1}, {"big-Q8_0-00001-of-00002.gguf", 1}, {"big-Q4_0.gguf", 1}};
  for (const char* sel : {"Q8_0", "big-Q8_0-00002-of-00002.gguf"}) {
    Choice sc = choose_files(split, {"o/r", sel});
    ASSERT_EQ(sc.files.size(), 2u) << sel;
    EXPECT_EQ(sc.files[0].path, "big-Q8_0-00001-of-00002.gguf");
    EXPECT_FALSE(sc.directory);
  }
  split.erase(split.begin());
  try {
    choose_files(split, {"o/r", "Q8_0"});
    FAIL() << "a part is missing";
  } catch (const HubError& e) {
    EXPECT_NE(std::string(e.what()).find("split into 2 files, 1 of them"), std::string::npos) << e.what();
  }
  std::vector<RepoFile> hf = {{"config.json", 1}, {"model.safetensors", 1}, {"tokenizer.json", 1},
                              {"README.md", 1},   {"onnx/model.onnx", 1},   {"pytorch_model.bin", 1}};
  Choice c = choose_files(hf, {"o/r", ""});
  EXPECT_TRUE(c.directory);
  ASSERT_EQ(c.files.size(), 3u);
  EXPECT_THROW(choose_files({{"README.md", 1}}, {"o/r", ""}), HubError);
}

TEST(HubSpec, FetchesOnlyTheWeightsTheModelLoads) {
  // Mistral-style: the same weights twice, as shards with an index and as consolidated.safetensors.
  std::vector<RepoFile> files = {{"config.json", 1}, {"model.safetensors.index.json", 1}, {"consolidated.safetensors", 9},
                                 {"model-00001-of-00002.safetensors", 4}, {"model-00002-of-00002.safetensors", 5}};
  Choice c = choose_files(files, {"o/r", ""});
  keep_indexed_weights(c, R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
  std::vector<std::string> kept;
  for (const auto& f : c.files) kept.push_back(f.path);
  EXPECT_EQ(kept, (std::vector<std::string>{"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                                            "model-00002-of-00002.safetensors"}));
  c = choose_files({{"config.json", 1}, {"model.safetensors", 4}, {"consolidated.safetensors", 4}}, {"o/r", ""});
  keep_indexed_weights(c, "");
  ASSERT_EQ(c.files.size(), 2u);
  EXPECT_EQ(c.files[1].path, "model.safetensors");
}

TEST_F(Pull, FetchesATagChecksItAndRunsItOffline) {
  CliRun r = run_ztvm("pull ztvm-test/stories:Q8_0");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string path = local("ztvm-test/stories/stories260K-Q8_0.gguf");
  EXPECT_EQ(r.out, path + "\n");
  EXPECT_EQ(slurp(path), slurp(kStories + "stories260K-Q8_0.gguf"));
  EXPECT_FALSE(fs::exists(path + ".part"));
  EXPECT_NE(r.err.find("sha256 verified"), std::string::npos) << r.err;
  EXPECT_EQ(hub->api_auth.at(0), "Bearer secret");  // the token goes to the hub...
  ASSERT_EQ(hub->cdn_auth.size(), 1u);
  EXPECT_EQ(hub->cdn_auth[0], "");  // ...and not to the CDN
  EXPECT_GE(hub->api_auth.size(), 2u);  // the listing came in pages

  // A second pull finds it in place; with the hub gone, -m ORG/REPO:TAG runs it from the models directory.
  r = run_ztvm("pull ztvm-test/stories:Q8_0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("here already"), std::string::npos) << r.err;
  EXPECT_EQ(hub->cdn_auth.size(), 1u);
  hub.reset();
  const std::string args = " -p 'Once upon a time' -n 12 --gpu cpu";
  CliRun pulled = run_ztvm("run -m ztvm-test/stories:Q8_0" + args);
  CliRun original = run_ztvm("run -m " + kStories + "stories260K-Q8_0.gguf" + args);
  ASSERT_EQ(pulled.status, 0) << pulled.err;
  ASSERT_EQ(original.status, 0) << original.err;
  EXPECT_EQ(pulled.out, original.out);
  EXPECT_GT(pulled.out.size(), 20u);
  // `list` names it as -m takes it.
  CliRun list = run_ztvm("list");
  ASSERT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("ztvm-test/stories:stories260K-Q8_0.gguf"), std::string::npos) << list.out;
  CliRun ids = run_ztvm("tokenize -m ztvm-test/stories:stories260K-Q8_0.gguf 'Once upon a time'");
  ASSERT_EQ(ids.status, 0) << ids.err;
  EXPECT_EQ(ids.out, run_ztvm("tokenize -m " + kStories + "stories260K-Q8_0.gguf 'Once upon a time'").out);
}

TEST_F(Pull, ResumesWhereADroppedConnectionStopped) {
  // Within one run: the connection drops once and the pull resumes by itself.
  hub->drop_after = 65536;
  hub->drops_left = 1;
  CliRun r = run_ztvm("pull ztvm-test/stories:Q4_0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(local("ztvm-test/stories/stories260K-Q4_0.gguf")), slurp(kStories + "stories260K-Q4_0.gguf"));
  ASSERT_EQ(hub->cdn_ranges.size(), 2u);
  EXPECT_EQ(hub->cdn_ranges[0], "");
  EXPECT_EQ(hub->cdn_ranges[1].rfind("bytes=", 0), 0u) << hub->cdn_ranges[1];
  EXPECT_NE(hub->cdn_ranges[1], "bytes=0-");
  EXPECT_NE(r.err.find("resuming at"), std::string::npos) << r.err;

  // Across runs: every try drops, the pull gives up with the bytes kept; the next run finishes them.
  hub->drop_after = 32768;
  hub->drops_left = 100;
  r = run_ztvm("pull ztvm-test/stories:Q8_0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("run the same command to resume"), std::string::npos) << r.err;
  const std::string part = local("ztvm-test/stories/stories260K-Q8_0.gguf.part");
  ASSERT_TRUE(fs::exists(part));
  const uint64_t kept = fs::file_size(part);
  EXPECT_GT(kept, 0u);
  EXPECT_NE(run_ztvm("list").out.find("stories260K-Q8_0.gguf  "), std::string::npos);
  EXPECT_NE(run_ztvm("list").out.find("(partial"), std::string::npos);
  hub->drops_left = 0;
  hub->cdn_ranges.clear();
  r = run_ztvm("pull ztvm-test/stories:Q8_0");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(hub->cdn_ranges.size(), 1u);
  EXPECT_EQ(hub->cdn_ranges[0], "bytes=" + std::to_string(kept) + "-");
  EXPECT_EQ(slurp(local("ztvm-test/stories/stories260K-Q8_0.gguf")), slurp(kStories + "stories260K-Q8_0.gguf"));
}

TEST_F(Pull, OnePullAFileAtATime) {
  const fs::path part = local("ztvm-test/stories/stories260K-Q4_0.gguf.part");
  fs::create_directories(part.parent_path());
  const int fd = ::open(part.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);  // as a pull under way holds it
  CliRun r = run_ztvm("pull ztvm-test/stories:Q4_0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("another ztvm pull is downloading"), std::string::npos) << r.err;
  ::close(fd);
  r = run_ztvm("pull ztvm-test/stories:Q4_0");
  ASSERT_EQ(r.status, 0) << r.err;
}

TEST_F(Pull, RetriesAServerErrorAndStopsAtAMissingFile) {
  hub->errors_left = 1;
  CliRun r = run_ztvm("pull ztvm-test/stories:Q4_0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("HTTP 503 from the server; resuming"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(local("ztvm-test/stories/stories260K-Q4_0.gguf")), slurp(kStories + "stories260K-Q4_0.gguf"));
  // Listed but not served (a 404 from /resolve/): no retry, one line that names the file.
  hub->unserved.insert("stories260K-Q8_0.gguf");
  r = run_ztvm("pull ztvm-test/stories:Q8_0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: stories260K-Q8_0.gguf: not found on http://127.0.0.1"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("retry"), std::string::npos) << r.err;
}

TEST_F(Pull, DeletesADownloadWhoseChecksumDiffers) {
  hub->corrupt = true;
  CliRun r = run_ztvm("pull ztvm-test/stories:Q4_0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("checksum mismatch"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(local("ztvm-test/stories/stories260K-Q4_0.gguf")));
  EXPECT_FALSE(fs::exists(local("ztvm-test/stories/stories260K-Q4_0.gguf.part")));
}

TEST_F(Pull, ErrorsSayWhatToDo) {
  auto last_line = [](const std::string& err) {
    std::string s = err.substr(0, err.find_last_not_of('\n') + 1);
    return s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
  };
  CliRun r = run_ztvm("pull ztvm-test/nothing");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(last_line(r.err).find("no model ztvm-test/nothing on http://127.0.0.1"), std::string::npos) << r.err;
  r = run_ztvm("pull ztvm-test/stories");  // two GGUFs, neither Q4_K_M
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(last_line(r.err).find("stories260K-Q4_0.gguf, stories260K-Q8_0.gguf"), std::string::npos) << r.err;
  r = run_ztvm("pull ztvm-test/stories:Q6_K");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(last_line(r.err).find("no GGUF file tagged Q6_K"), std::string::npos) << r.err;
  r = run_ztvm("pull not-a-repo");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("is not ORG/REPO"), std::string::npos) << r.err;
  hub->repos["ztvm-test/gated"] = hub->repos["ztvm-test/stories"];
  hub->gated.insert("ztvm-test/gated");
  unsetenv("HF_TOKEN");
  setenv("HF_HOME", models.c_str(), 1);  // no token file there either
  r = run_ztvm("pull ztvm-test/gated:Q4_0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(last_line(r.err).find("set HF_TOKEN"), std::string::npos) << r.err;
  // A mistyped path given to -m: named as neither a file nor a model on the hub.
  r = run_ztvm("run -m ztvm-test/nothing -p hi -n 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(last_line(r.err).find("'ztvm-test/nothing' is not a file here, and pulling it failed: no model"),
            std::string::npos)
      << r.err;
  unsetenv("HF_HOME");
  EXPECT_FALSE(fs::exists(local("ztvm-test/nothing")));
}

TEST_F(Pull, FetchesASafetensorsDirectory) {
  auto& repo = hub->repos["ztvm-test/llama-gqa"];
  for (const char* f : {"config.json", "generation_config.json", "fixture.json", "greedy24.txt", "logits.npy"})
    repo[f] = {slurp(kGqa + f), false};
  repo["model.safetensors"] = {slurp(kGqa + "model.safetensors"), true};
  repo["consolidated.safetensors"] = {slurp(kGqa + "model.safetensors"), true};  // the same weights again
  CliRun r = run_ztvm("pull ztvm-test/llama-gqa");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string dir = local("ztvm-test/llama-gqa");
  EXPECT_EQ(r.out, dir + "\n");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    EXPECT_EQ(slurp(dir + "/" + f), slurp(kGqa + f)) << f;
  EXPECT_FALSE(fs::exists(dir + "/greedy24.txt"));  // not part of a model
  EXPECT_FALSE(fs::exists(dir + "/logits.npy"));
  EXPECT_FALSE(fs::exists(dir + "/consolidated.safetensors"));
  hub.reset();  // pulled: `info` finds it with the hub gone
  EXPECT_NE(run_ztvm("list").out.find("ztvm-test/llama-gqa  "), std::string::npos);
  r = run_ztvm("info ztvm-test/llama-gqa");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("llama"), std::string::npos);
}

// A split GGUF pulls every part and runs from the first, offline, as the single file does.
TEST_F(Pull, FetchesEveryPartOfASplitGguf) {
  const fs::path tmp = models.string() + "-src";
  fs::create_directories(tmp);
  const auto parts = ztvm::test::split_gguf(kStories + "stories260K-Q8_0.gguf", (tmp / "stories260K-Q8_0").string(), 3);
  auto& repo = hub->repos["ztvm-test/split"];
  for (const auto& p : parts) repo[fs::path(p).filename().string()] = {slurp(p), true};
  CliRun r = run_ztvm("pull ztvm-test/split:Q8_0");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string first = local("ztvm-test/split/stories260K-Q8_0-00001-of-00003.gguf");
  EXPECT_EQ(r.out, first + "\n");
  for (const auto& p : parts) EXPECT_EQ(slurp(local("ztvm-test/split/" + fs::path(p).filename().string())), slurp(p));
  hub.reset();
  const std::string args = " -p 'Once upon a time' -n 12 --gpu cpu";
  CliRun pulled = run_ztvm("run -m ztvm-test/split:Q8_0" + args);
  CliRun original = run_ztvm("run -m " + kStories + "stories260K-Q8_0.gguf" + args);
  ASSERT_EQ(pulled.status, 0) << pulled.err;
  EXPECT_EQ(pulled.out, original.out);
  fs::remove_all(tmp);
}
