// A JSON Schema (response_format json_schema) compiled into the nodes JsonSyntax walks byte by byte.
// The part of the standard structured-output clients use: type (one or a list), properties, required,
// additionalProperties, items, enum, const, anyOf / oneOf, $ref into $defs / definitions (recursion
// included). Other keywords (lengths, patterns, bounds, formats) are not checked; a node the
// automaton cannot tell apart by its first byte (anyOf of two objects) accepts any value there.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ztvm {

struct JsonSchema {
  enum class Kind : uint8_t { Any, Object, Array, String, Number, Integer, Literals, AnyOf };
  struct Node {
    Kind kind = Kind::Any;
    std::vector<std::pair<std::string, int>> props;  // Object: name (its bytes between quotes) -> node
    uint64_t required = 0;                           // Object: bits of props that must be given
    int additional = -1;                             // Object: node of undeclared keys' values; -1: none allowed
    int items = 0;                                   // Array: node of the items
    std::vector<std::string> literals;               // Literals: each allowed value as compact JSON text
    std::vector<int> options;                        // AnyOf
  };
  // Built in: any value, any object, any array, and true / false / null.
  static constexpr int kAny = 0, kAnyObject = 1, kAnyArray = 2, kAnyLiteral = 3;
  static constexpr size_t kMaxProps = 64;  // properties an object node tracks (a bit each)

  std::vector<Node> nodes;
  int root = kAnyObject;

  JsonSchema();  // the built-in nodes only: the root is any object
  // Throws std::invalid_argument "response_format.json_schema.schema: ..." for what it cannot use.
  static JsonSchema compile(const nlohmann::json& schema);
  // The built-in schema: any JSON object.
  static const JsonSchema& any_object();
};

}  // namespace ztvm
