// Attribute/item access, Python methods on str/dict/list, and global functions. Jinja resolves
// `a.b` and `a['b']` leniently: a miss is Undefined, which only fails when it is used.
#include <algorithm>
#include <cstdint>
#include <ctime>

#include "text/jinja_builtins.h"
#include "text/jinja_strings.h"

namespace ztvm::jinja {

void fail_undefined(const Value& v) {
  throw TemplateError(v.undefined_name().empty() ? "value is undefined" : v.undefined_name());
}

static std::string object_name(const Value& v) { return "'" + v.type_name() + " object'"; }

// Python Jinja tries getattr first, then the item; for the JSON-shaped data templates see, the
// item is what matters. (A key named like a dict method, e.g. "items", is read as the key here,
// where Jinja would return the bound method.)
Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict() || obj.is_namespace()) {
    if (const Value* v = obj.dict().find(name)) return *v;
  }
  return Value::undefined(object_name(obj) + " has no attribute '" + name + "'");
}

// Python index with negative wrap-around; returns false when out of range.
static bool resolve_index(int64_t idx, size_t size, size_t& out) {
  if (idx < 0) idx += int64_t(size);
  if (idx < 0 || idx >= int64_t(size)) return false;
  out = size_t(idx);
  return true;
}

// Out-of-range indices and missing keys are Undefined, not errors: templates probe with
// `messages[0]` and `x['k'] is defined`.
Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  size_t at = 0;
  if (obj.is_list() && (key.is_int() || key.is_bool())) {
    if (resolve_index(key.get_int(), obj.list().size(), at)) return obj.list()[at];
  } else if (obj.is_string() && (key.is_int() || key.is_bool())) {
    std::u32string cps = pystr::decode(obj.str());
    if (resolve_index(key.get_int(), cps.size(), at)) return Value(pystr::encode(cps.substr(at, 1)));
  } else if (obj.is_dict() || obj.is_namespace()) {
    if (const Value* v = obj.dict().find(key)) return *v;
  }
  return Value::undefined(object_name(obj) + " has no element " + key.repr());
}

// Python's slice index adjustment (PySlice_AdjustIndices).
static std::vector<size_t> slice_indices(size_t size, const Value* start_v, const Value* stop_v, const Value* step_v) {
  auto as_int = [](const Value* v, const char* what) -> std::optional<int64_t> {
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_int() && !v->is_bool()) throw TemplateError(std::string("slice ") + what + " must be an integer or None");
    return v->get_int();
  };
  int64_t n = int64_t(size);
  int64_t step = as_int(step_v, "step").value_or(1);
  if (step == 0) throw TemplateError("slice step cannot be zero");
  auto adjust = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t start = adjust(as_int(start_v, "start"), step > 0 ? 0 : n - 1);
  int64_t stop = adjust(as_int(stop_v, "stop"), step > 0 ? n : -1);
  std::vector<size_t> idx;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) idx.push_back(size_t(i));
  return idx;
}

Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_list()) {
    List out;
    for (size_t i : slice_indices(obj.list().size(), start, stop, step)) out.push_back(obj.list()[i]);
    return obj.is_tuple() ? Value::tuple(std::move(out)) : Value(std::move(out));
  }
  if (obj.is_string()) {
    std::u32string cps = pystr::decode(obj.str()), out;
    for (size_t i : slice_indices(cps.size(), start, stop, step)) out.push_back(cps[i]);
    return Value(pystr::encode(out));
  }
  throw TemplateError("'" + obj.type_name() + "' object is not subscriptable");
}

// Python's `in`: substring for strings, element for lists, key for dicts; None is an error
// ("argument of type 'NoneType' is not iterable"), as it is in Python.
bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;  // iterating Undefined yields nothing
    case Value::Kind::String:
      if (!item.is_string())
        throw TemplateError("'in <string>' requires string as left operand, not " + item.type_name());
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      for (auto& e : container.list())
        if (equals(e, item)) return true;
      return false;
    case Value::Kind::Dict:
      return container.dict().find(item) != nullptr;
    default:
      throw TemplateError("argument of type '" + container.type_name() + "' is not iterable");
  }
}

List iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.list();
    case Value::Kind::Dict: {
      List keys;
      for (auto& e : v.dict().entries()) keys.push_back(e.first);
      return keys;
    }
    case Value::Kind::String: {
      List chars;
      for (char32_t c : pystr::decode(v.str())) chars.push_back(Value(pystr::encode(std::u32string(1, c))));
      return chars;
    }
    default:
      throw TemplateError("'" + v.type_name() + "' object is not iterable");
  }
}

// ---- methods ----

static std::optional<std::string> opt_str(const Value* v, const char* what) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) throw TemplateError(std::string(what) + " must be a str or None, not " + v->type_name());
  return v->str();
}

static const std::string& need_str(const Value* v, const char* what) {
  if (!v || !v->is_string()) throw TemplateError(std::string(what) + " must be a str");
  return v->str();
}

static int64_t opt_int(const Value* v, int64_t def) {
  if (!v || v->is_none()) return def;
  if (!v->is_int() && !v->is_bool()) throw TemplateError("expected an integer argument, got " + v->type_name());
  return v->get_int();
}

static Value str_list(std::vector<std::string> parts) {
  List l;
  for (auto& p : parts) l.push_back(Value(std::move(p)));
  return Value(std::move(l));
}

// startswith/endswith accept one prefix or a tuple of them.
static bool affix_match(const std::string& s, const Value* arg, bool prefix) {
  if (!arg) throw TemplateError(std::string(prefix ? "startswith" : "endswith") + "() takes at least 1 argument");
  List options = arg->is_list() ? arg->list() : List{*arg};
  for (auto& o : options) {
    const std::string& a = need_str(&o, prefix ? "startswith() argument" : "endswith() argument");
    if (a.size() <= s.size() && (prefix ? s.compare(0, a.size(), a) : s.compare(s.size() - a.size(), a.size(), a)) == 0)
      return true;
  }
  return false;
}

template <typename Pred>
static bool all_cps(const std::string& s, Pred pred) {
  std::u32string cps = pystr::decode(s);
  if (cps.empty()) return false;
  for (char32_t c : cps)
    if (!pred(c)) return false;
  return true;
}

// str.format: "{}", "{0}", "{name}", "{x!r}" and "{{"/"}}"; format specs ("{:.2f}") are refused
// rather than ignored, so a template never renders silently wrong.
static std::string str_format(const std::string& fmt, Args& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); i++) {
    char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c;
      i++;
      continue;
    }
    if (c == '}') throw TemplateError("format(): single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw TemplateError("format(): single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    bool use_repr = field.size() >= 2 && field.compare(field.size() - 2, 2, "!r") == 0;
    if (use_repr || (field.size() >= 2 && field[field.size() - 2] == '!')) field.resize(field.size() - 2);
    if (field.find(':') != std::string::npos) throw TemplateError("format(): format specs are not supported: {" + field + "}");
    const Value* v = nullptr;
    if (field.empty()) v = auto_index < a.pos.size() ? &a.pos[auto_index++] : nullptr;
    else if (field.find_first_not_of("0123456789") == std::string::npos)
      v = field.size() < 10 && std::stoul(field) < a.pos.size() ? &a.pos[std::stoul(field)] : nullptr;
    else v = a.get(SIZE_MAX, field.c_str());
    if (!v) throw TemplateError("format(): no argument for {" + field + "}");
    out += use_repr ? v->repr() : v->to_str();
    i = close;
  }
  return out;
}

static std::optional<Value> str_method(const std::string& s, const std::string& name, Args& a) {
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return Value(pystr::strip(s, opt_str(a.get(0, "chars"), "chars"), name != "rstrip", name != "lstrip"));
  if (name == "split" || name == "rsplit") {
    auto sep = opt_str(a.get(0, "sep"), "sep");
    int64_t maxsplit = opt_int(a.get(1, "maxsplit"), -1);
    return str_list(name == "split" ? pystr::split(s, sep, maxsplit) : pystr::rsplit(s, sep, maxsplit));
  }
  if (name == "splitlines") {
    std::vector<std::string> lines = pystr::split(s, std::string("\n"), -1);
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    for (auto& l : lines)
      if (!l.empty() && l.back() == '\r') l.pop_back();
    return str_list(std::move(lines));
  }
  if (name == "startswith") return Value(affix_match(s, a.get(0, "prefix"), true));
  if (name == "endswith") return Value(affix_match(s, a.get(0, "suffix"), false));
  if (name == "replace")
    return Value(pystr::replace(s, need_str(a.get(0, "old"), "replace() old"), need_str(a.get(1, "new"), "replace() new"),
                                opt_int(a.get(2, "count"), -1)));
  if (name == "upper") return Value(pystr::upper(s));
  if (name == "lower") return Value(pystr::lower(s));
  if (name == "title") return Value(pystr::title(s));
  if (name == "capitalize") return Value(pystr::capitalize(s));
  if (name == "find") return Value(pystr::find(s, need_str(a.get(0, "sub"), "find() argument")));
  if (name == "count") return Value(pystr::count(s, need_str(a.get(0, "sub"), "count() argument")));
  if (name == "join") {
    const Value* items = a.get(0, "iterable");
    if (!items) throw TemplateError("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (auto& item : iterate(*items)) {
      if (!item.is_string()) throw TemplateError("join(): expected str instance, " + item.type_name() + " found");
      if (!first) out += s;
      first = false;
      out += item.str();
    }
    return Value(std::move(out));
  }
  if (name == "format") return Value(str_format(s, a));
  if (name == "isspace") return Value(all_cps(s, pystr::is_space));
  if (name == "isdigit") return Value(all_cps(s, [](char32_t c) { return c >= '0' && c <= '9'; }));
  if (name == "isalpha") return Value(all_cps(s, [](char32_t c) { return std::isalpha(int(c < 128 ? c : 0)) != 0; }));
  if (name == "isupper") return Value(s != pystr::lower(s) && s == pystr::upper(s));
  if (name == "islower") return Value(s != pystr::upper(s) && s == pystr::lower(s));
  return std::nullopt;
}

// dict.get/items/keys/values; items() yields (key, value) tuples.
static std::optional<Value> dict_method(const Dict& d, const std::string& name, Args& a) {
  if (name == "get") {
    const Value* key = a.get(0, "key");
    if (!key) throw TemplateError("get() takes at least 1 argument");
    const Value* found = d.find(*key);
    if (found) return *found;
    const Value* def = a.get(1, "default");
    return def ? *def : Value(nullptr);  // Python's dict.get default is None, not Undefined
  }
  if (name == "items") {
    List l;
    for (auto& [k, v] : d.entries()) l.push_back(Value::tuple({k, v}));
    return Value(std::move(l));
  }
  if (name == "keys" || name == "values") {
    List l;
    for (auto& [k, v] : d.entries()) l.push_back(name == "keys" ? k : v);
    return Value(std::move(l));
  }
  return std::nullopt;
}

// Only read-only methods exist: transformers renders in Jinja's ImmutableSandboxedEnvironment,
// which forbids list.append, dict.update and the like.
std::optional<Value> call_method(const Value& obj, const std::string& name, Args& args) {
  if (obj.is_string()) return str_method(obj.str(), name, args);
  if (obj.is_dict()) return dict_method(obj.dict(), name, args);
  if (obj.is_list()) {
    const Value* x = args.get(0, "value");
    if (name == "index" && x) {
      for (size_t i = 0; i < obj.list().size(); i++)
        if (equals(obj.list()[i], *x)) return Value(int64_t(i));
      throw TemplateError(x->repr() + " is not in list");
    }
    if (name == "count" && x) {
      int64_t n = 0;
      for (auto& e : obj.list()) n += equals(e, *x);
      return Value(n);
    }
  }
  return std::nullopt;
}

// ---- globals ----

// range(stop) / range(start, stop[, step]) as a list; Jinja's sandbox caps it at 100000 items.
static Value range_fn(Args& a) {
  if (a.pos.empty() || a.pos.size() > 3) throw TemplateError("range() takes 1 to 3 arguments");
  int64_t start = 0, stop = 0, step = 1;
  if (a.pos.size() == 1) stop = opt_int(&a.pos[0], 0);
  else start = opt_int(&a.pos[0], 0), stop = opt_int(&a.pos[1], 0);
  if (a.pos.size() == 3) step = opt_int(&a.pos[2], 1);
  if (step == 0) throw TemplateError("range() arg 3 must not be zero");
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 100000) throw TemplateError("range() too big: more than 100000 items");  // Jinja's sandbox limit
    out.emplace_back(i);  // in place: moving a temporary trips a GCC 12 false -Wmaybe-uninitialized
  }
  return Value(std::move(out));
}

// namespace(...) and dict(...): an optional dict positional argument, then keyword arguments.
static Dict dict_from_args(Args& a, const char* fn) {
  Dict d;
  if (a.pos.size() > 1) throw TemplateError(std::string(fn) + "() takes at most 1 positional argument");
  if (!a.pos.empty()) {
    if (!a.pos[0].is_dict()) throw TemplateError(std::string(fn) + "() positional argument must be a dict");
    for (auto& [k, v] : a.pos[0].dict().entries()) d.set(k, v);
  }
  for (auto& [k, v] : a.kw) d.set(k, v);
  return d;
}

Dict builtin_globals() {
  Dict g;
  g.set("range", Value::function("range", range_fn));
  g.set("namespace", Value::function("namespace", [](Args& a) { return Value::make_namespace(dict_from_args(a, "namespace")); }));
  g.set("dict", Value::function("dict", [](Args& a) { return Value(dict_from_args(a, "dict")); }));
  g.set("raise_exception", Value::function("raise_exception", [](Args& a) -> Value {
          const Value* msg = a.get(0, "message");
          throw RaisedError(msg ? msg->to_str() : "raise_exception() called");
        }));
  g.set("strftime_now", Value::function("strftime_now", [](Args& a) {
          const std::string& fmt = need_str(a.get(0, "format"), "strftime_now() format");
          std::time_t now = std::time(nullptr);
          std::tm local{};
          localtime_r(&now, &local);
          char buf[512];
          size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &local);
          return Value(std::string(buf, n));
        }));
  return g;
}

}  // namespace ztvm::jinja
