#include "text/json_schema.h"

#include <deque>
#include <map>
#include <stdexcept>

namespace ztvm {

namespace {

using json = nlohmann::json;
using Kind = JsonSchema::Kind;

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("response_format.json_schema.schema: " + what);
}

// The bytes a string stands for between its quotes in compact JSON.
std::string quoted_body(const std::string& s) {
  const std::string q = json(s).dump();
  return q.substr(1, q.size() - 2);
}

struct Compiler {
  JsonSchema& out;
  const json& root;
  std::map<const json*, int> seen;  // a schema compiled once, so $ref cycles close on themselves
  std::deque<json> made;            // schemas made here (one per type of a type list), kept in place

  int literals(std::vector<std::string> texts) {
    if (texts.size() > 64) return JsonSchema::kAny;  // more than the automaton tracks: any value there
    JsonSchema::Node n;
    n.kind = Kind::Literals;
    n.literals = std::move(texts);
    out.nodes.push_back(std::move(n));
    return (int)out.nodes.size() - 1;
  }

  const json& resolve(const json& ref) {
    if (!ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0) fail("only local $ref ('#/...') is supported");
    try {
      return root.at(json::json_pointer(ref.get<std::string>().substr(1)));
    } catch (const json::exception&) {
      fail("$ref " + ref.get<std::string>() + " points at nothing");
    }
  }

  int node(const json& s, int depth = 0) {
    if (depth > 100) fail("$ref chain too long");
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail("'false' allows no value");
      return JsonSchema::kAny;
    }
    if (!s.is_object()) fail("a schema must be an object");
    if (auto it = seen.find(&s); it != seen.end()) return it->second;
    if (s.contains("$ref")) {
      const json& target = resolve(s["$ref"]);
      const int id = node(target, depth + 1);
      seen[&s] = id;
      return id;
    }
    if (s.contains("enum") || s.contains("const")) {
      std::vector<std::string> texts;
      if (s.contains("const")) texts.push_back(s["const"].dump());
      else if (s["enum"].is_array() && !s["enum"].empty())
        for (const auto& v : s["enum"]) texts.push_back(v.dump());
      else fail("'enum' must be a non-empty list");
      return seen[&s] = literals(std::move(texts));
    }
    const int id = (int)out.nodes.size();
    out.nodes.emplace_back();
    seen[&s] = id;
    JsonSchema::Node n;
    const json* any_of = s.contains("anyOf") ? &s["anyOf"] : s.contains("oneOf") ? &s["oneOf"] : nullptr;
    const json type = s.value("type", json());
    if (any_of) {
      if (!any_of->is_array() || any_of->empty()) fail("'anyOf' / 'oneOf' must be a non-empty list");
      n.kind = Kind::AnyOf;
      for (const auto& o : *any_of) n.options.push_back(node(o, depth + 1));
    } else if (type.is_array()) {  // ["string", "null"]: one schema a type
      n.kind = Kind::AnyOf;
      for (const auto& t : type) {
        json one = s;
        one["type"] = t;
        made.push_back(std::move(one));
        n.options.push_back(node(made.back(), depth + 1));
      }
    } else {
      const std::string t = type.is_string() ? type.get<std::string>()
                            : s.contains("properties")       ? "object"
                            : s.contains("items")            ? "array"
                                                             : "";
      if (t == "object") {
        n.kind = Kind::Object;
        n.additional = JsonSchema::kAny;
        if (s.contains("properties") && s["properties"].is_object()) {
          if (s["properties"].size() > JsonSchema::kMaxProps)
            fail("more than " + std::to_string(JsonSchema::kMaxProps) + " properties in one object");
          for (const auto& [name, sub] : s["properties"].items()) n.props.push_back({quoted_body(name), node(sub, depth + 1)});
        }
        if (s.contains("required") && s["required"].is_array())
          for (const auto& r : s["required"])
            for (size_t i = 0; i < n.props.size(); i++)
              if (r.is_string() && n.props[i].first == quoted_body(r.get<std::string>())) n.required |= 1ull << i;
        if (s.contains("additionalProperties")) {
          const json& a = s["additionalProperties"];
          n.additional = a.is_boolean() ? (a.get<bool>() ? JsonSchema::kAny : -1) : node(a, depth + 1);
        }
      } else if (t == "array") {
        n.kind = Kind::Array;
        n.items = s.contains("items") && s["items"].is_object() ? node(s["items"], depth + 1) : JsonSchema::kAny;
      } else if (t == "string") {
        n.kind = Kind::String;
      } else if (t == "number") {
        n.kind = Kind::Number;
      } else if (t == "integer") {
        n.kind = Kind::Integer;
      } else if (t == "boolean" || t == "null") {
        n.kind = Kind::Literals;
        n.literals = t == "null" ? std::vector<std::string>{"null"} : std::vector<std::string>{"true", "false"};
      } else if (!t.empty()) {
        fail("unknown type '" + t + "'");
      }
    }
    out.nodes[id] = std::move(n);
    return id;
  }
};

}  // namespace

JsonSchema::JsonSchema() : nodes(4) {
  nodes[kAnyObject].kind = Kind::Object;
  nodes[kAnyObject].additional = kAny;
  nodes[kAnyArray].kind = Kind::Array;
  nodes[kAnyArray].items = kAny;
  nodes[kAnyLiteral].kind = Kind::Literals;
  nodes[kAnyLiteral].literals = {"true", "false", "null"};
}

JsonSchema JsonSchema::compile(const nlohmann::json& schema) {
  JsonSchema s;
  Compiler c{s, schema};
  s.root = c.node(schema);
  // The reply must end where its value closes: a number at the top could always go on.
  const Kind k = s.nodes[s.root].kind;
  if (k == Kind::Any || k == Kind::Number || k == Kind::Integer) s.root = kAnyObject;
  return s;
}

const JsonSchema& JsonSchema::any_object() {
  static const JsonSchema s;
  return s;
}

}  // namespace ztvm
