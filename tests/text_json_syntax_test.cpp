// The JSON automaton behind response_format: whole documents end in done(), every prefix of one is
// taken, and a document goes wrong exactly at the byte that makes it invalid. Documents that nlohmann
// (an outside parser) accepts are checked against it too.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "text/json_syntax.h"

using ztvm::JsonSyntax;

namespace {

// Bytes of `s` taken before the automaton refused one (s.size() when all were).
size_t accepted(const std::string& s, bool* done = nullptr) {
  JsonSyntax j;
  for (size_t i = 0; i < s.size(); i++)
    if (!j.feed((uint8_t)s[i])) return i;
  if (done) *done = j.done();
  return s.size();
}

}  // namespace

TEST(JsonSyntax, TakesWholeObjectsAndTheirPrefixes) {
  const char* docs[] = {
      R"({})",
      R"( {"a": 1})",
      R"({"name": "Ann", "age": 31, "tags": ["x", "y"], "ok": true, "no": false, "none": null})",
      R"({"n": [-0, 0.5, -12.25e+3, 1E-2, 7e9, 10]})",
      R"({"s": "esc \" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00 ünï 😀"})",
      "{\n  \"deep\": {\"a\": [[{\"b\": [1, {}]}], []]}\n}",
      R"({"a":{"b":{"c":{}}},"d":[{"e":"f"}]})",
  };
  for (const char* d : docs) {
    const std::string s = d;
    ASSERT_TRUE(nlohmann::json::accept(s)) << s;  // the cases are JSON by an outside parser too
    bool done = false;
    EXPECT_EQ(accepted(s, &done), s.size()) << s;
    EXPECT_TRUE(done) << s;
    for (size_t n = 0; n < s.size(); n++) {  // every proper prefix is taken and is not done
      bool pdone = true;
      EXPECT_EQ(accepted(s.substr(0, n), &pdone), n) << s.substr(0, n);
      EXPECT_FALSE(pdone) << s.substr(0, n);
    }
  }
}

TEST(JsonSyntax, RefusesTheByteThatBreaksIt) {
  const std::pair<std::string, size_t> cases[] = {
      {"[1]", 0},                 // the top level is an object
      {"\"a\"", 0},
      {"{a: 1}", 1},              // keys are strings
      {"{\"a\" 1}", 5},           // a colon after the key
      {"{\"a\": 01}", 7},         // no leading zeros
      {"{\"a\": -}", 7},          // a digit after '-'
      {"{\"a\": 1.}", 8},         // a digit after '.'
      {"{\"a\": 1e}", 8},         // a digit in the exponent
      {"{\"a\": tru}", 9},
      {"{\"a\": nul1}", 9},
      {"{\"a\": 1,}", 8},         // no trailing comma
      {"{\"a\": [1,]}", 9},
      {"{\"a\": [1}", 8},         // brackets match
      {"{\"a\": \"x\ny\"}", 8},   // control characters are escaped in strings
      {"{\"a\": \"\\x\"}", 8},    // unknown escape
      {"{\"a\": \"\\u12g4\"}", 11},
      {"{} ", 2},                 // nothing after the object, not even whitespace
      {"{}{}", 2},
  };
  for (const auto& [s, at] : cases) {
    EXPECT_FALSE(nlohmann::json::accept(s) && s[0] == '{' && s.back() == '}') << s;
    EXPECT_EQ(accepted(s), at) << s;
  }
}

TEST(JsonSyntax, BoundsWhitespaceAndDepth) {
  EXPECT_EQ(accepted("  {}"), 4u);
  EXPECT_EQ(accepted("   {}"), 2u);  // before the object: two at most
  const std::string indent(JsonSyntax::kMaxSpaces, ' ');
  EXPECT_EQ(accepted("{" + indent + "}"), indent.size() + 2);
  EXPECT_EQ(accepted("{" + indent + " }"), indent.size() + 1);
  std::string deep = "{\"a\":";
  for (int i = 1; i < JsonSyntax::kMaxDepth; i++) deep += "[";
  EXPECT_EQ(accepted(deep), deep.size());
  EXPECT_EQ(accepted(deep + "["), deep.size());
}
