// Pre-tokenizers and normalizers against Hugging Face `tokenizers` (npm, pinned in tests/node):
// tests/node/hf_pretok.js cuts sample texts with HF's Split (all behaviours, inverted or not),
// Metaspace, Digits and ByteLevel; we cut the same texts with ours and compare piece by piece.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "text/tokenizer_pretok.h"
#include "text/tokenizer_utf8.h"

namespace ztvm::text {
namespace {

namespace fs = std::filesystem;
const std::string kRepo = ZTVM_SOURCE_DIR;

std::string shown(const std::vector<std::string>& pieces) {
  std::string s = "[";
  for (const auto& p : pieces) s += "'" + p + "' ";
  return s + "]";
}

SplitBehavior behavior_of(const std::string& hf_name) {
  if (hf_name == "removed") return SplitBehavior::Removed;
  if (hf_name == "isolated") return SplitBehavior::Isolated;
  if (hf_name == "mergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (hf_name == "mergedWithNext") return SplitBehavior::MergedWithNext;
  return SplitBehavior::Contiguous;
}

// Our step equivalent to one HF case.
PreTokenizerStep step_for(const nlohmann::json& c) {
  const std::string kind = c.at("kind");
  if (kind == "Split") {
    PreTokenizerStep s{PreTokenizerStep::Split};
    s.regex = std::make_shared<Regex>(regex_quote(c.at("pattern").get<std::string>()));
    s.behavior = behavior_of(c.at("behavior"));
    s.invert = c.at("invert");
    return s;
  }
  if (kind == "Metaspace") {
    PreTokenizerStep s{PreTokenizerStep::Metaspace};
    const std::string scheme = c.at("scheme");
    s.prepend = scheme == "first" ? PreTokenizerStep::First : scheme == "never" ? PreTokenizerStep::Never
                                                                               : PreTokenizerStep::Always;
    s.split = c.at("split");
    return s;
  }
  if (kind == "Digits") {
    PreTokenizerStep s{PreTokenizerStep::Digits};
    s.regex = std::make_shared<Regex>(R"(\p{N})");
    s.behavior = c.at("individual") ? SplitBehavior::Isolated : SplitBehavior::Contiguous;
    return s;
  }
  PreTokenizerStep s{PreTokenizerStep::ByteLevel};
  s.add_prefix_space = c.at("addPrefixSpace");
  if (c.at("useRegex")) s.regex = std::make_shared<Regex>(kGpt2Pattern);
  return s;
}

TEST(PreTokenizer, MatchesHuggingFace) {
  ASSERT_TRUE(fs::exists(kRepo + "/tests/node/node_modules/tokenizers"))
      << "tests/node/node_modules/tokenizers is missing: run scripts/setup.sh (or `npm ci` in tests/node)";
  fs::path out = fs::temp_directory_path() / ("ztvm_hf_pretok_" + std::to_string(::getpid()) + ".json");
  std::string cmd = "node '" + kRepo + "/tests/node/hf_pretok.js' '" + out.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  auto cases = nlohmann::json::parse(in);
  fs::remove(out);
  ASSERT_GT(cases.size(), 500u);
  size_t failures = 0;
  for (const auto& c : cases) {
    std::vector<std::string> ours;
    pre_tokenize({step_for(c)}, c.at("text").get<std::string>(), true,
                 [&](std::string_view p) { ours.emplace_back(p); });
    auto want = c.at("pieces").get<std::vector<std::string>>();
    if (ours != want && ++failures <= 10) {
      ADD_FAILURE() << c.dump() << "\n  ours " << shown(ours);
    }
  }
  EXPECT_EQ(failures, 0u) << "of " << cases.size() << " cases";
}

// Normalization through utf8proc: NFC composes, NFD decomposes, NFKC folds compatibility forms;
// invalid bytes pass through untouched instead of failing the whole text.
TEST(Normalizer, UnicodeFormsAndInvalidBytes) {
  EXPECT_EQ(normalize("e\xCC\x81", NormalForm::NFC), "\xC3\xA9");    // e + U+0301 -> U+00E9
  EXPECT_EQ(normalize("\xC3\xA9", NormalForm::NFD), "e\xCC\x81");
  EXPECT_EQ(normalize("\xEF\xAC\x81", NormalForm::NFKC), "fi");      // U+FB01 ligature
  EXPECT_EQ(normalize("a\xFF" "e\xCC\x81", NormalForm::NFC), "a\xFF\xC3\xA9");
  std::vector<NormalizerStep> spm = {{NormalizerStep::Prepend, "\xE2\x96\x81"},
                                     {NormalizerStep::Replace, " ", "\xE2\x96\x81"}};
  EXPECT_EQ(apply_normalizers(spm, "a b"), "\xE2\x96\x81" "a\xE2\x96\x81" "b");
  EXPECT_EQ(apply_normalizers(spm, ""), "");  // Prepend leaves empty text empty
}

// The GPT-2 byte map is a bijection onto 256 code points, with printable ASCII kept.
TEST(ByteLevel, MapIsReversible) {
  std::vector<bool> seen(400, false);
  for (int b = 0; b < 256; b++) {
    uint32_t cp = byte_to_codepoint((uint8_t)b);
    ASSERT_LT(cp, 400u);
    EXPECT_FALSE(seen[cp]) << "byte " << b;
    seen[cp] = true;
    EXPECT_EQ(codepoint_to_byte(cp), b);
    if (b > 0x20 && b < 0x7F) {
      EXPECT_EQ(cp, (uint32_t)b);
    }
  }
  EXPECT_EQ(byte_to_codepoint(' '), 0x120u);  // "Ġ"
}

TEST(Utf8, CompletePrefixAndSanitize) {
  EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82"), 2u);       // "€" missing its last byte
  EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82\xAC"), 5u);
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\xA6"), 0u);
  EXPECT_EQ(utf8_complete_prefix("a\x80"), 2u);             // a stray continuation is not waited for
  EXPECT_EQ(utf8_sanitize("a\xE2\x82" "b"), "a\xEF\xBF\xBD" "b");  // one U+FFFD per broken sequence
  EXPECT_EQ(utf8_sanitize("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong: each byte invalid
}

}  // namespace
}  // namespace ztvm::text
