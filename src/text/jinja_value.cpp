// Value: construction from JSON, Python truthiness, str()/repr() and comparisons.
#include "text/jinja_value.h"

#include <algorithm>

#include "text/jinja_strings.h"

namespace ztvm::jinja {

// Python binds a parameter positionally or by keyword; builtins ask for both at once.
const Value* Args::get(size_t index, const char* name) const {
  if (index < pos.size()) return &pos[index];
  for (auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

const Value* Dict::find(const std::string& key) const {
  for (auto& e : entries_)
    if (e.first.is_string() && e.first.str() == key) return &e.second;
  return nullptr;
}

const Value* Dict::find(const Value& key) const {
  for (auto& e : entries_)
    if (equals(e.first, key)) return &e.second;
  return nullptr;
}

// Like a Python dict: re-assigning a key keeps its original position.
void Dict::set(Value key, Value v) {
  for (auto& e : entries_)
    if (equals(e.first, key)) {
      e.second = std::move(v);
      return;
    }
  entries_.emplace_back(std::move(key), std::move(v));
}

Value Value::make_namespace(Dict d) {
  Value v;
  v.v_ = NamespaceTag{std::make_shared<Dict>(std::move(d))};
  return v;
}

Value Value::function(std::string name, std::function<Value(Args&)> fn) {
  Value v;
  v.v_ = std::make_shared<Function>(Function{std::move(name), std::move(fn)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null: return Value(nullptr);
    case T::boolean: return Value(j.get<bool>());
    case T::number_integer: return Value(j.get<int64_t>());
    case T::number_unsigned: return Value(int64_t(j.get<uint64_t>()));  // > 2^63 wraps; JSON tools never send that
    case T::number_float: return Value(j.get<double>());
    case T::string: return Value(j.get<std::string>());
    case T::array: {
      List l;
      l.reserve(j.size());
      for (auto& e : j) l.push_back(from_json(e));
      return Value(std::move(l));
    }
    case T::object: {
      Dict d;
      for (auto& [k, e] : j.items()) d.set(k, from_json(e));
      return Value(std::move(d));
    }
    default:
      throw TemplateError("cannot use a JSON " + std::string(j.type_name()) + " as a template value");
  }
}

nlohmann::ordered_json Value::to_json() const {
  switch (kind()) {
    case Kind::None: return nullptr;
    case Kind::Bool: return get_bool();
    case Kind::Int: return get_int();
    case Kind::Float: return get_float();
    case Kind::String: return str();
    case Kind::List: {
      auto j = nlohmann::ordered_json::array();
      for (auto& e : list()) j.push_back(e.to_json());
      return j;
    }
    case Kind::Dict: {
      auto j = nlohmann::ordered_json::object();
      for (auto& [k, e] : dict().entries()) j[k.is_string() ? k.str() : k.repr()] = e.to_json();
      return j;
    }
    default:
      throw TemplateError("Object of type " + type_name() + " is not JSON serializable");
  }
}

static const char* kind_name(Value::Kind k) {
  static const char* names[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list", "dict",
                                "Namespace", "function"};
  return names[size_t(k)];
}

// A typed access on the wrong kind is a template error, not a crash; an Undefined reports what
// was missing, as Jinja's UndefinedError does.
const Value::Storage& Value::checked(Kind want) const {
  if (kind() != want) {
    if (is_undefined() && !undefined_name().empty()) throw TemplateError(undefined_name());
    throw TemplateError(std::string("expected ") + kind_name(want) + ", got " + kind_name(kind()));
  }
  return v_;
}

int64_t Value::get_int() const {
  if (is_bool()) return get_bool() ? 1 : 0;
  return std::get<int64_t>(checked(Kind::Int));
}

double Value::get_float() const {
  if (is_float()) return std::get<double>(v_);
  return double(get_int());
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined: case Kind::None: return false;
    case Kind::Bool: return get_bool();
    case Kind::Int: return get_int() != 0;
    case Kind::Float: return get_float() != 0.0;
    case Kind::String: return !str().empty();
    case Kind::List: return !list().empty();
    case Kind::Dict: return dict().size() != 0;
    default: return true;  // namespaces and callables are objects: always true
  }
}

std::string Value::type_name() const { return kind_name(kind()); }

// {'k': v, ...}: what {{ some_dict }} prints in Python Jinja.
static std::string repr_dict(const Dict& d) {
  std::string out = "{";
  bool first = true;
  for (auto& [k, v] : d.entries()) {
    if (!first) out += ", ";
    first = false;
    out += k.repr() + ": " + v.repr();
  }
  return out + "}";
}

// {{ x }} prints str(x): strings as-is, Undefined as nothing, everything else as repr.
std::string Value::to_str() const {
  switch (kind()) {
    case Kind::Undefined: return "";
    case Kind::String: return str();
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "None";
    case Kind::Bool: return get_bool() ? "True" : "False";
    case Kind::Int: return std::to_string(get_int());
    case Kind::Float: return pystr::float_repr(get_float());
    case Kind::String: return pystr::repr(str());
    case Kind::List: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list().size(); i++) out += (i ? ", " : "") + list()[i].repr();
      if (tuple_ && list().size() == 1) out += ",";  // (x,)
      return out + (tuple_ ? ")" : "]");
    }
    case Kind::Dict: return repr_dict(dict());
    case Kind::Namespace: return "<Namespace " + repr_dict(dict()) + ">";
    case Kind::Function: return "<function " + func().name + ">";
  }
  return "";
}

bool equals(const Value& a, const Value& b) {
  using K = Value::Kind;
  // True == 1 and 1 == 1.0 in Python; compare exactly as integers unless a float is involved.
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.get_float() == b.get_float();
    return a.get_int() == b.get_int();
  }
  if (a.kind() != b.kind() || a.is_tuple() != b.is_tuple()) return false;
  switch (a.kind()) {
    case K::Undefined: case K::None: return true;
    case K::String: return a.str() == b.str();
    case K::List: {
      auto& x = a.list();
      auto& y = b.list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); i++)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case K::Dict: {  // order-insensitive, like Python dicts
      if (a.dict().size() != b.dict().size()) return false;
      for (auto& [k, v] : a.dict().entries()) {
        const Value* other = b.dict().find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case K::Namespace: return &a.namespace_dict() == &b.namespace_dict();  // identity
    case K::Function: return &a.func() == &b.func();
    default: return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.get_float() < b.get_float();
    return a.get_int() < b.get_int();
  }
  // UTF-8 byte order equals code point order, which is Python's str order.
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list()) {  // lexicographic: the first unequal element decides
    auto& x = a.list();
    auto& y = b.list();
    for (size_t i = 0; i < std::min(x.size(), y.size()); i++) {
      if (!equals(x[i], y[i])) return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw TemplateError("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace ztvm::jinja
