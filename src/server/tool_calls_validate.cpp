// Request validation for tools, tool_choice and response_format (OpenAI shapes). Messages name the
// offending field first, "FIELD: problem", so the server can report it as the error's param.
#include <set>
#include <stdexcept>

#include "server/tool_calls.h"

namespace ztvm::server {
namespace {

using ojson = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& field, const std::string& problem) {
  throw std::invalid_argument(field + ": " + problem);
}

const char* type_name(const ojson& j) { return j.type_name(); }

void expect_object(const ojson& j, const std::string& field) {
  if (!j.is_object()) fail(field, std::string("must be an object, got ") + type_name(j));
}

void expect_name(const ojson& j, const std::string& field) {
  if (!j.is_string() || j.get_ref<const std::string&>().empty()) fail(field, "must be a non-empty string");
}

// An optional member: absent or null is fine, otherwise it must pass `check`.
template <class Check>
void optional_member(const ojson& obj, const char* key, const std::string& field, Check check) {
  auto it = obj.find(key);
  if (it != obj.end() && !it->is_null()) check(*it, field + "." + key);
}

void expect_type(const ojson& obj, const std::string& field, const std::set<std::string>& allowed) {
  std::string names;
  for (const auto& a : allowed) names += (names.empty() ? "\"" : ", \"") + a + "\"";
  auto it = obj.find("type");
  if (it == obj.end() || !it->is_string() || !allowed.count(it->get<std::string>()))
    fail(field + ".type", "must be one of " + names);
}

}  // namespace

void validate_tools(const ojson& tools) {
  if (tools.is_null()) return;
  if (!tools.is_array()) fail("tools", std::string("must be an array, got ") + type_name(tools));
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); i++) {
    std::string field = "tools[" + std::to_string(i) + "]";
    const ojson& tool = tools[i];
    expect_object(tool, field);
    expect_type(tool, field, {"function"});
    if (!tool.contains("function")) fail(field + ".function", "is required");
    const ojson& fn = tool["function"];
    expect_object(fn, field + ".function");
    if (!fn.contains("name")) fail(field + ".function.name", "is required");
    expect_name(fn["name"], field + ".function.name");
    optional_member(fn, "description", field + ".function", [](const ojson& j, const std::string& f) {
      if (!j.is_string()) fail(f, "must be a string");
    });
    optional_member(fn, "parameters", field + ".function", expect_object);
    optional_member(fn, "strict", field + ".function", [](const ojson& j, const std::string& f) {
      if (!j.is_boolean()) fail(f, "must be a boolean");
    });
    if (!names.insert(fn["name"].get<std::string>()).second)
      fail(field + ".function.name", "\"" + fn["name"].get<std::string>() + "\" is defined twice");
  }
}

void validate_tool_choice(const ojson& choice, const ojson& tools) {
  if (choice.is_null()) return;
  bool have_tools = tools.is_array() && !tools.empty();
  if (choice.is_string()) {
    const std::string& s = choice.get_ref<const std::string&>();
    if (s != "none" && s != "auto" && s != "required")
      fail("tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", ...}");
    if (s == "required" && !have_tools) fail("tool_choice", "\"required\" needs tools");
    return;
  }
  expect_object(choice, "tool_choice");
  expect_type(choice, "tool_choice", {"function"});
  if (!choice.contains("function")) fail("tool_choice.function", "is required");
  expect_object(choice["function"], "tool_choice.function");
  if (!choice["function"].contains("name")) fail("tool_choice.function.name", "is required");
  expect_name(choice["function"]["name"], "tool_choice.function.name");
  const std::string& name = choice["function"]["name"].get_ref<const std::string&>();
  if (have_tools)
    for (const auto& t : tools)
      if (t.is_object() && t.contains("function") && t["function"].value("name", "") == name) return;
  fail("tool_choice.function.name", "\"" + name + "\" is not one of the tools");
}

void validate_response_format(const ojson& rf) {
  if (rf.is_null()) return;
  expect_object(rf, "response_format");
  expect_type(rf, "response_format", {"text", "json_object", "json_schema"});
  const std::string& type = rf["type"].get_ref<const std::string&>();
  if (type == "json_object") {
    // llama-server also takes a schema here; accept it when it is one.
    optional_member(rf, "schema", "response_format", expect_object);
  } else if (type == "json_schema") {
    if (!rf.contains("json_schema")) fail("response_format.json_schema", "is required");
    const ojson& js = rf["json_schema"];
    expect_object(js, "response_format.json_schema");
    if (!js.contains("name")) fail("response_format.json_schema.name", "is required");
    expect_name(js["name"], "response_format.json_schema.name");
    if (!js.contains("schema")) fail("response_format.json_schema.schema", "is required");
    expect_object(js["schema"], "response_format.json_schema.schema");
    optional_member(js, "strict", "response_format.json_schema", [](const ojson& j, const std::string& f) {
      if (!j.is_boolean()) fail(f, "must be a boolean");
    });
  }
}

std::string response_format_instruction(const ojson& rf) {
  if (!rf.is_object()) return "";
  std::string type = rf.value("type", "text");
  const ojson* schema = nullptr;
  if (type == "json_schema") {
    auto js = rf.find("json_schema");
    if (js != rf.end() && js->is_object() && js->contains("schema")) schema = &(*js)["schema"];
  } else if (type == "json_object") {
    if (rf.contains("schema")) schema = &rf["schema"];
  } else {
    return "";
  }
  std::string s = "Reply with one valid JSON object and nothing else: no explanation, no code fences.";
  if (schema) s += " It must follow this JSON schema:\n" + schema->dump();
  return s;
}

}  // namespace ztvm::server
