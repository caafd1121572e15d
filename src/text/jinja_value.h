// The value type of the Jinja interpreter: the Python objects a chat template can see (None, bool,
// int, float, str, list, dict, namespace, callables) plus Jinja's Undefined. Semantics follow Python
// where templates can observe them: truthiness, ==, <, str() and repr() output.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ztvm::jinja {

// Every template error, syntax or runtime; the message already carries "line:col:" when known.
struct TemplateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// raise_exception(msg) called by the template itself: the message is the template author's text.
struct RaisedError : TemplateError {
  using TemplateError::TemplateError;
};

class Value;
class Dict;
struct Function;
using List = std::vector<Value>;

// Call arguments: positional, then keyword (in call order).
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;

  // Argument `index` if given positionally, else keyword `name`, else nullptr.
  const Value* get(size_t index, const char* name) const;
};

// A callable: builtin global, filter-like method, loop.cycle, or a template macro.
struct Function {
  std::string name;
  std::function<Value(Args&)> fn;
};

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };

  Value() : v_(UndefinedTag{}) {}  // Undefined, like a missing variable
  Value(std::nullptr_t) : v_(std::monostate{}) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(int64_t(i)) {}
  Value(int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(List l) : v_(std::make_shared<List>(std::move(l))) {}
  // A Python tuple: a list that prints as (a, b) and is unequal to the list [a, b].
  static Value tuple(List l) {
    Value v(std::move(l));
    v.tuple_ = true;
    return v;
  }
  // markupsafe's Markup: a string that HTML-escapes plain strings concatenated to it with `+`.
  static Value markup(std::string s) {
    Value v(std::move(s));
    v.safe_ = true;
    return v;
  }
  Value(Dict d);

  // Undefined that remembers what was missing, for error messages ("'x' is undefined").
  static Value undefined(std::string what) {
    Value v;
    v.v_ = UndefinedTag{std::make_shared<const std::string>(std::move(what))};
    return v;
  }
  // namespace(...): the one mutable object templates may assign attributes on.
  static Value make_namespace(Dict d);
  static Value function(std::string name, std::function<Value(Args&)> fn);
  // JSON -> Value; object key order is kept (ordered_json).
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return Kind(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }  // lists and tuples
  bool is_tuple() const { return tuple_; }
  bool is_safe() const { return safe_; }  // a Markup string (from |safe or |e)
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_namespace() const { return kind() == Kind::Namespace; }
  bool is_function() const { return kind() == Kind::Function; }

  // Typed accessors throw TemplateError naming both types on a mismatch.
  bool get_bool() const { return std::get<bool>(checked(Kind::Bool)); }
  int64_t get_int() const;   // Int or Bool
  double get_float() const;  // Int, Bool or Float
  const std::string& str() const { return std::get<std::string>(checked(Kind::String)); }
  const List& list() const { return *std::get<std::shared_ptr<List>>(checked(Kind::List)); }
  const Dict& dict() const;  // Dict or Namespace
  Dict& namespace_dict() const { return *std::get<NamespaceTag>(v_).d; }
  const Function& func() const { return *std::get<std::shared_ptr<Function>>(checked(Kind::Function)); }
  std::string undefined_name() const {
    auto& name = std::get<UndefinedTag>(v_).name;
    return name ? *name : std::string();
  }

  bool truthy() const;              // Python bool(); Undefined is false
  std::string to_str() const;       // Python str(); Undefined prints as ""
  std::string repr() const;         // Python repr()
  std::string type_name() const;    // Python type name, for error messages
  nlohmann::ordered_json to_json() const;  // throws on Undefined/callables (as json.dumps would)

 private:
  struct UndefinedTag { std::shared_ptr<const std::string> name; };  // shared: Undefined is copied a lot
  struct NamespaceTag { std::shared_ptr<Dict> d; };
  using Storage = std::variant<UndefinedTag, std::monostate, bool, int64_t, double, std::string, std::shared_ptr<List>,
                               std::shared_ptr<Dict>, NamespaceTag, std::shared_ptr<Function>>;
  const Storage& checked(Kind want) const;
  Storage v_;  // alternative order must match Kind
  bool tuple_ = false;
  bool safe_ = false;
};

// A Python dict: insertion-ordered, small (chat messages, tool schemas), so lookup is a linear
// scan. Keys are usually strings; dict literals may use numbers (1, 1.0 and True are one key).
class Dict {
 public:
  using Entry = std::pair<Value, Value>;
  const Value* find(const std::string& key) const;
  const Value* find(const Value& key) const;
  void set(const std::string& key, Value v) { set(Value(key), std::move(v)); }
  void set(const char* key, Value v) { set(Value(key), std::move(v)); }
  void set(Value key, Value v);  // overwrites in place, else appends
  size_t size() const { return entries_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

inline Value::Value(Dict d) : v_(std::make_shared<Dict>(std::move(d))) {}
inline const Dict& Value::dict() const {
  if (is_namespace()) return *std::get<NamespaceTag>(v_).d;
  return *std::get<std::shared_ptr<Dict>>(checked(Kind::Dict));
}

// Python ==: numbers across int/float/bool, deep list/dict equality, Undefined == Undefined.
bool equals(const Value& a, const Value& b);
// Python <: numbers, strings (by code point), lists lexicographically; anything else throws.
bool less_than(const Value& a, const Value& b);

}  // namespace ztvm::jinja
