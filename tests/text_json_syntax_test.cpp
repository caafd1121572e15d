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
  const std::string pretty = "{\n    \"a\": 1\n}";
  EXPECT_EQ(accepted(pretty), pretty.size());
  EXPECT_EQ(accepted("{\n\n}"), 2u);  // one line break a gap
  EXPECT_EQ(accepted("{\r\n}"), 2u);
  std::string deep = "{\"a\":";
  for (int i = 1; i < JsonSyntax::kMaxDepth; i++) deep += "[";
  EXPECT_EQ(accepted(deep), deep.size());
  EXPECT_EQ(accepted(deep + "["), deep.size());
}

namespace {

// Bytes of `s` taken under `schema` (s.size() when all were), and whether the value was then whole.
size_t accepted_by(const ztvm::JsonSchema& schema, const std::string& s, bool* done = nullptr) {
  JsonSyntax j(schema);
  for (size_t i = 0; i < s.size(); i++)
    if (!j.feed((uint8_t)s[i])) return i;
  if (done) *done = j.done();
  return s.size();
}

const char* kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
    "kind": {"enum": ["cat", "dog"]}, "score": {"type": ["number", "null"]}, "nested": {"$ref": "#/$defs/node"},
    "n": {"enum": [1, 10]}
  },
  "required": ["name", "age"],
  "additionalProperties": false,
  "$defs": {"node": {"type": "object", "properties": {"child": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
                     "additionalProperties": false}}
})";

}  // namespace

TEST(JsonSchemaSyntax, TakesWhatTheSchemaAllows) {
  const ztvm::JsonSchema schema = ztvm::JsonSchema::compile(nlohmann::json::parse(kPerson));
  const char* docs[] = {
      R"({"name": "Ann", "age": 31})",
      R"({"age":3,"name":"B","tags":["x", "y z"],"kind":"dog","score":null})",
      R"({"name":"C","age":-4,"score":1.5e3,"nested":{"child":{"child":null}}})",
      R"({"name":"D","age":0,"n":10})",
      R"({"name":"E","age":7,"n":1, "tags": []})",
  };
  for (const char* d : docs) {
    const std::string s = d;
    ASSERT_TRUE(nlohmann::json::accept(s)) << s;
    bool done = false;
    EXPECT_EQ(accepted_by(schema, s, &done), s.size()) << s;
    EXPECT_TRUE(done) << s;
    for (size_t n = 0; n < s.size(); n++) EXPECT_EQ(accepted_by(schema, s.substr(0, n)), n) << s.substr(0, n);
  }
}

TEST(JsonSchemaSyntax, RefusesWhatItDoesNot) {
  const ztvm::JsonSchema schema = ztvm::JsonSchema::compile(nlohmann::json::parse(kPerson));
  const std::pair<std::string, size_t> cases[] = {
      {R"({"name": "Ann"})", 14},              // "age" is required
      {R"({"name":"A","age":3.5})", 19},       // an integer
      {R"({"nam":1})", 5},                     // not a property, and no others allowed
      {R"({"extra":1})", 2},
      {R"({"name":1})", 8},                    // a string
      {R"({"name":"A","age":1,"kind":"cow"})", 29},
      {R"({"name":"A","name":"B"})", 14},      // a property once ("n" and "nested" begin like it)
      {R"({"name":"A","age":1,"n":2})", 24},
      {R"({"name":"A","age":1,"score":true})", 28},
      {R"({"name":"A","age":1,"nested":{"child":1}})", 38},
      {R"({"name":"A","age":1,"tags":[1]})", 28},
  };
  for (const auto& [s, at] : cases) EXPECT_EQ(accepted_by(schema, s), at) << s;
}

TEST(JsonSchemaSyntax, SchemasItCannotUseAreErrors) {
  using ztvm::JsonSchema;
  for (const char* bad : {R"({"type": "foo"})", R"({"$ref": "http://example.com/s.json"})", R"({"$ref": "#/$defs/none"})",
                          "false", R"({"enum": []})"})
    EXPECT_THROW(JsonSchema::compile(nlohmann::json::parse(bad)), std::invalid_argument) << bad;
  // A schema without constraints (or a number at the top, which could always go on) is any object.
  EXPECT_EQ(JsonSchema::compile(nlohmann::json::parse("{}")).root, JsonSchema::kAnyObject);
  EXPECT_EQ(JsonSchema::compile(nlohmann::json::parse(R"({"type": "integer"})")).root, JsonSchema::kAnyObject);
  // A top-level string or enum is fine.
  const JsonSchema e = JsonSchema::compile(nlohmann::json::parse(R"({"enum": ["yes", "no"]})"));
  bool done = false;
  EXPECT_EQ(accepted_by(e, "\"no\"", &done), 4u);
  EXPECT_TRUE(done);
  EXPECT_EQ(accepted_by(e, "\"nope\"", &done), 3u);
}
