// tokenizer.json loading against Hugging Face's own `tokenizers` (npm, pinned in tests/node): the
// node script tests/node/hf_vectors.js generates a few thousand mixed strings (scripts, emoji,
// whitespace runs, digits, contractions, code, special tokens), encodes them with HF and writes the
// ids; we encode the same strings and compare. Needs `npm ci` in tests/node (scripts/setup.sh).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model_error.h"
#include "text/tokenizer.h"

namespace ztvm {
namespace {

namespace fs = std::filesystem;
const std::string kRepo = ZTVM_SOURCE_DIR;
const std::string kData = std::string(ZTVM_TESTDATA);

struct HfCase {
  std::string text, decoded;
  std::vector<int32_t> ids, ids_special;
};

// Runs the node script for `tokenizer_json` and reads its output; fails the test (with the fix in
// the message) if node or the pinned package is missing.
std::vector<HfCase> hf_reference(const std::string& tokenizer_json, int count, int seed) {
  std::vector<HfCase> cases;
  if (!fs::exists(kRepo + "/tests/node/node_modules/tokenizers")) {
    ADD_FAILURE() << "tests/node/node_modules/tokenizers is missing: run scripts/setup.sh (or `npm ci` in tests/node)";
    return cases;
  }
  fs::path out = fs::temp_directory_path() / ("ztvm_hf_vectors_" + std::to_string(::getpid()) + "_" +
                                              fs::path(tokenizer_json).parent_path().filename().string() + ".jsonl");
  std::string cmd = "node '" + kRepo + "/tests/node/hf_vectors.js' '" + tokenizer_json + "' '" + out.string() +
                    "' " + std::to_string(count) + " " + std::to_string(seed);
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    ADD_FAILURE() << "`" << cmd << "` failed with status " << rc << " (is node installed?)";
    return cases;
  }
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    cases.push_back({j.at("text").get<std::string>(), j.at("decoded").get<std::string>(),
                     j.at("ids").get<std::vector<int32_t>>(), j.at("ids_special").get<std::vector<int32_t>>()});
  }
  fs::remove(out);
  EXPECT_EQ(cases.size(), (size_t)count);
  return cases;
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

// HF matches special-token text always, so the comparison uses parse_special = true.
void compare_with_hf(const std::string& json, int count, int seed) {
  std::string dir = fs::path(json).parent_path().filename().string();
  auto tok = Tokenizer::from_json(json);
  auto cases = hf_reference(json, count, seed);
  size_t bad_plain = 0, bad_special = 0, bad_decode = 0;
  for (const HfCase& c : cases) {
    auto plain = tok->encode(c.text, false, true);
    if (plain != c.ids && ++bad_plain <= 5)
      ADD_FAILURE() << dir << " '" << escaped(c.text) << "'\n  hf   " << ids_str(c.ids) << "\n  ours " << ids_str(plain);
    if (tok->encode(c.text, true, true) != c.ids_special) ++bad_special;
    if (tok->decode(c.ids_special) != c.decoded && ++bad_decode <= 3)
      ADD_FAILURE() << dir << " decode of '" << escaped(c.text) << "': hf '" << escaped(c.decoded) << "' ours '"
                    << escaped(tok->decode(c.ids_special)) << "'";
  }
  EXPECT_EQ(bad_plain, 0u) << "encode mismatches out of " << cases.size();
  EXPECT_EQ(bad_special, 0u) << "encode (add special) mismatches out of " << cases.size();
  EXPECT_EQ(bad_decode, 0u) << "decode mismatches out of " << cases.size();
}

TEST(TokenizerHf, Qwen3MatchesHuggingFace) { compare_with_hf(kData + "/tokenizers/qwen3/tokenizer.json", 2000, 1); }

TEST(TokenizerHf, Llama31MatchesHuggingFace) {
  compare_with_hf(kData + "/tokenizers/llama3_1/tokenizer.json", 2000, 2);
}

// A SentencePiece-style tokenizer.json (Prepend/Replace normalizers, byte fallback, Strip decoder)
// made by tests/node/spm_json.js from Llama 2's llama2.c tokenizer.bin.
TEST(TokenizerHf, SentencePieceJsonMatchesHuggingFace) {
  if (!fs::exists(kRepo + "/tests/node/node_modules/tokenizers")) GTEST_SKIP() << "reported by the other tests";
  fs::path dir = fs::temp_directory_path() / ("ztvm_spm_json_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string json = (dir / "tokenizer.json").string();
  std::string cmd = "node '" + kRepo + "/tests/node/spm_json.js' '" + kData + "/tokenizers/llama2-spm/tokenizer.bin' '" +
                    json + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  compare_with_hf(json, 1000, 3);
  fs::remove_all(dir);
}

// Llama 3.1's template adds <|begin_of_text|>; Qwen3 adds nothing (tokenizer_config: add_bos false).
TEST(TokenizerHf, BosEosConventions) {
  auto llama = Tokenizer::from_json(kData + "/tokenizers/llama3_1/tokenizer.json");
  EXPECT_EQ(llama->bos_id(), llama->find_piece("<|begin_of_text|>"));
  EXPECT_TRUE(llama->add_bos());
  EXPECT_EQ(llama->eos_id(), llama->find_piece("<|eot_id|>"));  // tokenizer_config.json eos_token
  auto eog = llama->eog_ids();
  EXPECT_NE(std::find(eog.begin(), eog.end(), llama->find_piece("<|end_of_text|>")), eog.end());
  auto qwen = Tokenizer::from_json(kData + "/tokenizers/qwen3/tokenizer.json");
  EXPECT_EQ(qwen->bos_id(), -1);
  EXPECT_FALSE(qwen->add_bos());
  EXPECT_EQ(qwen->eos_id(), qwen->find_piece("<|im_end|>"));
  EXPECT_FALSE(qwen->is_special(qwen->find_piece("<think>")));  // an added token, not special
  EXPECT_TRUE(qwen->is_special(qwen->find_piece("<|im_start|>")));
}

// Ids that cannot index a vocabulary (found by fuzz_tokenizer_json: a huge id sized a vector of
// 2^60 strings, a negative one wrote before it, a float was cast to size_t) are a ModelError
// naming the file, never an allocation or a write.
TEST(TokenizerHf, BrokenIdsAreModelErrors) {
  fs::path dir = fs::temp_directory_path() / ("ztvm_bad_ids_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "tokenizer.json").string();
  auto load = [&](const std::string& vocab, const std::string& added, const std::string& post) {
    std::ofstream(path) << R"({"model": {"type": "BPE", "vocab": )" << vocab << R"(, "merges": []}, "added_tokens": )"
                        << added << R"(, "post_processor": )" << post << "}";
    return Tokenizer::from_json(path);
  };
  const std::string ok_vocab = R"({"a": 0, "b": 1})", no_added = "[]", no_post = "null";
  EXPECT_EQ(load(ok_vocab, no_added, no_post)->encode("ab", false, false).size(), 2u);
  for (const char* vocab : {R"({"a": 0, "b": 1152921504606846976})", R"({"a": 0, "b": -3})", R"({"a": 0, "b": 1.5})",
                            R"({"a": 0, "b": 4.07e70})", R"({"a": 0, "b": "1"})"})
    EXPECT_THROW(load(vocab, no_added, no_post), ModelError) << vocab;
  for (const char* added : {R"([{"id": -1, "content": "x"}])", R"([{"id": 9e18, "content": "x"}])"})
    EXPECT_THROW(load(ok_vocab, added, no_post), ModelError) << added;
  const std::string post_past_vocab = R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
      {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"ids": [7]}}})";
  EXPECT_THROW(load(ok_vocab, no_added, post_past_vocab), ModelError);
  try {
    load(R"({"a": 0, "b": -3})", no_added, no_post);
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ztvm
