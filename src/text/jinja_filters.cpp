// Jinja's built-in filters and tests (the ones chat templates use), with transformers' tojson:
// json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "text/jinja_builtins.h"
#include "text/jinja_strings.h"

namespace ztvm::jinja {
namespace {

using FilterFn = Value (*)(const Value& in, Args& a);
using TestFn = bool (*)(const Value& in, Args& a);

const Value* arg(Args& a, size_t i, const char* name) { return a.get(i, name); }
bool arg_bool(Args& a, size_t i, const char* name, bool def) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : def;
}
const Value& need(Args& a, size_t i, const char* name, const char* filter) {
  const Value* v = a.get(i, name);
  if (!v) throw TemplateError(std::string(filter) + ": missing argument '" + name + "'");
  return *v;
}

// len(); Jinja's Undefined has length 0.
int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return int64_t(pystr::length(v.str()));
    case Value::Kind::List: return int64_t(v.list().size());
    case Value::Kind::Dict: case Value::Kind::Namespace: return int64_t(v.dict().size());
    default: throw TemplateError("object of type '" + v.type_name() + "' has no len()");
  }
}

// Resolves a dotted attribute path ("function.name", "0") the way Jinja's attribute= arguments do.
Value attribute_path(const Value& item, const std::string& path) {
  Value cur = item;
  for (const std::string& part : pystr::split(path, std::string("."), -1)) {
    bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    if (numeric && part.size() > 18) return Value();  // an index past any list: undefined, as in Jinja
    cur = numeric ? get_item(cur, Value(int64_t(std::stoll(part)))) : get_item(cur, Value(part));
    if (cur.is_undefined()) return cur;
  }
  return cur;
}

// Sort/min/max key: optional attribute, and lower-cased strings unless case_sensitive.
Value sort_key(const Value& v, Args& a, size_t attr_pos) {
  Value k = v;
  if (const Value* attr = a.get(attr_pos, "attribute")) k = attribute_path(v, attr->to_str());
  if (k.is_string() && !arg_bool(a, 99, "case_sensitive", false)) k = Value(pystr::lower(k.str()));
  return k;
}

// Keyword or positional, in json.dumps' order after the value: ensure_ascii, indent, separators,
// sort_keys. An int indent means that many spaces; a string indent is used as given.
Value f_tojson(const Value& in, Args& a) {
  pystr::JsonStyle style;
  style.ensure_ascii = arg_bool(a, 0, "ensure_ascii", false);
  if (const Value* ind = arg(a, 1, "indent"); ind && !ind->is_none()) {
    if (ind->is_string()) style.indent = ind->str();
    else style.indent = std::string(size_t(std::max<int64_t>(0, ind->get_int())), ' ');
  }
  if (const Value* sep = arg(a, 2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->list().size() != 2) throw TemplateError("tojson: separators must be a pair of strings");
    style.separators = std::make_pair(sep->list()[0].to_str(), sep->list()[1].to_str());
  }
  style.sort_keys = arg_bool(a, 3, "sort_keys", false);
  return Value(pystr::json_dumps(in, style));
}

Value f_length(const Value& in, Args&) { return Value(length_of(in)); }
Value f_string(const Value& in, Args&) { return Value(in.to_str()); }
Value f_safe(const Value& in, Args&) { return in.is_safe() ? in : Value::markup(in.to_str()); }
Value f_upper(const Value& in, Args&) { return Value(pystr::upper(in.to_str())); }
Value f_lower(const Value& in, Args&) { return Value(pystr::lower(in.to_str())); }
Value f_capitalize(const Value& in, Args&) { return Value(pystr::capitalize(in.to_str())); }

Value f_title(const Value& in, Args&) {
  // Jinja's title: words start after '-', whitespace or an opening bracket; the rest is lowered.
  std::u32string cps = pystr::decode(in.to_str());
  bool boundary = true;
  std::string out;
  for (char32_t c : cps) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || pystr::is_space(c);
    std::string one = pystr::encode(std::u32string(1, c));
    out += sep ? one : boundary ? pystr::upper(one) : pystr::lower(one);
    boundary = sep;
  }
  return Value(out);
}

Value f_trim(const Value& in, Args& a) {
  const Value* chars = arg(a, 0, "chars");
  std::optional<std::string> set;
  if (chars && !chars->is_none()) set = chars->to_str();
  return Value(pystr::strip(in.to_str(), set, true, true));
}

Value f_replace(const Value& in, Args& a) {
  const Value* count = arg(a, 2, "count");
  return Value(pystr::replace(in.to_str(), need(a, 0, "old", "replace").to_str(), need(a, 1, "new", "replace").to_str(),
                              count && !count->is_none() ? count->get_int() : -1));
}

// default(value, boolean=false): replaces Undefined only (not None) unless boolean is true.
Value f_default(const Value& in, Args& a) {
  bool boolean = arg_bool(a, 1, "boolean", false);
  if (in.is_undefined() || (boolean && !in.truthy())) {
    const Value* d = arg(a, 0, "default_value");
    return d ? *d : Value("");
  }
  return in;
}

Value f_first(const Value& in, Args&) {
  List items = iterate(in);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(const Value& in, Args&) {
  List items = iterate(in);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

// (key, value) tuples in insertion order; Undefined gives nothing, a non-mapping is an error.
Value f_items(const Value& in, Args&) {
  if (in.is_undefined()) return Value(List{});
  if (!in.is_dict()) throw TemplateError("items: can only get item pairs from a mapping, not " + in.type_name());
  List out;
  for (auto& [k, v] : in.dict().entries()) out.push_back(Value::tuple({k, v}));
  return Value(std::move(out));
}

Value f_list(const Value& in, Args&) { return Value(iterate(in)); }

Value f_join(const Value& in, Args& a) {
  const Value* sep = arg(a, 0, "d");
  const Value* attr = arg(a, 1, "attribute");
  std::string out;
  bool first = true;
  for (auto& item : iterate(in)) {
    if (!first && sep) out += sep->to_str();
    first = false;
    out += (attr ? attribute_path(item, attr->to_str()) : item).to_str();
  }
  return Value(std::move(out));
}

Value f_reverse(const Value& in, Args&) {
  if (in.is_string()) {
    std::u32string cps = pystr::decode(in.str());
    std::reverse(cps.begin(), cps.end());
    return Value(pystr::encode(cps));
  }
  List items = iterate(in);
  std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

Value f_sort(const Value& in, Args& a) {
  List items = iterate(in);
  bool reverse = arg_bool(a, 0, "reverse", false);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    Value kx = sort_key(x, a, 2), ky = sort_key(y, a, 2);
    return reverse ? less_than(ky, kx) : less_than(kx, ky);
  });
  return Value(std::move(items));
}

Value f_unique(const Value& in, Args& a) {
  List out, keys;
  for (auto& item : iterate(in)) {
    Value k = sort_key(item, a, 1);
    if (std::none_of(keys.begin(), keys.end(), [&](const Value& s) { return equals(s, k); })) {
      keys.push_back(k);
      out.push_back(item);
    }
  }
  return Value(std::move(out));
}

Value min_max(const Value& in, Args& a, bool want_max) {
  List items = iterate(in);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  for (size_t i = 1; i < items.size(); i++) {
    Value ki = sort_key(items[i], a, 1), kb = sort_key(items[best], a, 1);
    if (want_max ? less_than(kb, ki) : less_than(ki, kb)) best = i;
  }
  return items[best];
}
Value f_min(const Value& in, Args& a) { return min_max(in, a, false); }
Value f_max(const Value& in, Args& a) { return min_max(in, a, true); }

Value f_sum(const Value& in, Args& a) {
  const Value* attr = arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value total = start ? *start : Value(int64_t(0));
  for (auto& item : iterate(in)) {
    Value v = attr ? attribute_path(item, attr->to_str()) : item;
    if (!v.is_number() || !total.is_number()) throw TemplateError("sum: unsupported operand type " + v.type_name());
    total = (v.is_float() || total.is_float()) ? Value(total.get_float() + v.get_float()) : Value(total.get_int() + v.get_int());
  }
  return total;
}

Value f_abs(const Value& in, Args&) {
  if (in.is_float()) return Value(std::fabs(in.get_float()));
  if (in.is_number()) return Value(int64_t(std::llabs(in.get_int())));
  throw TemplateError("bad operand type for abs(): '" + in.type_name() + "'");
}

// int(value): numbers truncate; strings parse as an integer, then as a float; else the default.
Value f_int(const Value& in, Args& a) {
  const Value* def = arg(a, 0, "default");
  Value fallback = def ? *def : Value(int64_t(0));
  if (in.is_number()) return Value(in.is_float() ? int64_t(std::trunc(in.get_float())) : in.get_int());
  if (!in.is_string()) return fallback;
  try {
    size_t used = 0;
    std::string s = pystr::strip(in.str(), std::nullopt, true, true);
    int64_t v = std::stoll(s, &used);
    if (used == s.size()) return Value(v);
    double d = std::stod(s, &used);  // Jinja falls back to int(float(value))
    return used == s.size() ? Value(int64_t(std::trunc(d))) : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

Value f_float(const Value& in, Args& a) {
  const Value* def = arg(a, 0, "default");
  Value fallback = def ? *def : Value(0.0);
  if (in.is_number()) return Value(in.get_float());
  if (!in.is_string()) return fallback;
  try {
    size_t used = 0;
    std::string s = pystr::strip(in.str(), std::nullopt, true, true);
    double d = std::stod(s, &used);
    return used == s.size() ? Value(d) : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

Value f_round(const Value& in, Args& a) {
  int64_t precision = arg(a, 0, "precision") ? arg(a, 0, "precision")->get_int() : 0;
  std::string method = arg(a, 1, "method") ? arg(a, 1, "method")->to_str() : "common";
  double x = in.get_float();
  if (method == "common" && precision < 0) {
    double scale = std::pow(10.0, double(-precision));
    return Value(std::nearbyint(x / scale) * scale);
  }
  if (method == "common") {
    // Python's round(): the exact binary value rounded half-to-even, which is what glibc's
    // printf does, so format and parse back.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", int(std::clamp<int64_t>(precision, 0, 300)), x);
    return Value(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, double(precision));
  return Value((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
}

// indent(width=4, first=false, blank=false): blank lines stay unindented unless blank=true.
Value f_indent(const Value& in, Args& a) {
  const Value* w = arg(a, 0, "width");
  std::string pad = !w ? "    " : w->is_string() ? w->str() : std::string(size_t(std::max<int64_t>(0, w->get_int())), ' ');
  bool first = arg_bool(a, 1, "first", false), blank = arg_bool(a, 2, "blank", false);
  std::vector<std::string> lines = pystr::split(in.to_str(), std::string("\n"), -1);
  std::string out;
  for (size_t i = 0; i < lines.size(); i++) {
    if (i) out += '\n';
    bool indent = (i > 0 || first) && (blank || !pystr::strip(lines[i], std::nullopt, true, true).empty());
    out += (indent ? pad : "") + lines[i];
  }
  return Value(out);
}

Value f_escape(const Value& in, Args&) { return in.is_safe() ? in : Value::markup(html_escape(in.to_str())); }

}  // namespace

// markupsafe's escape(): the five HTML-special characters.
std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

Value f_attr(const Value& in, Args& a) { return get_attr(in, need(a, 0, "name", "attr").to_str()); }

Value f_dictsort(const Value& in, Args& a) {
  List items = f_items(in, a).list();
  bool by_value = arg(a, 1, "by") && arg(a, 1, "by")->to_str() == "value";
  bool reverse = arg_bool(a, 2, "reverse", false);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    Value kx = x.list()[by_value], ky = y.list()[by_value];
    if (!arg_bool(a, 0, "case_sensitive", false)) {
      if (kx.is_string()) kx = Value(pystr::lower(kx.str()));
      if (ky.is_string()) ky = Value(pystr::lower(ky.str()));
    }
    return reverse ? less_than(ky, kx) : less_than(kx, ky);
  });
  return Value(std::move(items));
}

// Remaining positional arguments from `from` on, for select/map that forward them.
Args rest_args(Args& a, size_t from) {
  Args r;
  for (size_t i = from; i < a.pos.size(); i++) r.pos.push_back(a.pos[i]);
  return r;
}

// select/reject(test, args...) and selectattr/rejectattr(attr, test, args...); with no test the
// value's truthiness decides.
Value select_impl(const Value& in, Args& a, bool by_attr, bool keep) {
  List out;
  if (!in.truthy()) return Value(std::move(out));  // Jinja yields nothing for a falsy input, even None
  size_t test_pos = by_attr ? 1 : 0;
  std::string attr = by_attr ? need(a, 0, "attribute", "selectattr").to_str() : "";
  for (auto& item : iterate(in)) {
    Value subject = by_attr ? attribute_path(item, attr) : item;
    bool ok;
    if (a.pos.size() > test_pos) {
      Args targs = rest_args(a, test_pos + 1);
      ok = apply_test(a.pos[test_pos].to_str(), subject, targs);
    } else {
      ok = subject.truthy();
    }
    if (ok == keep) out.push_back(item);
  }
  return Value(std::move(out));
}
Value f_select(const Value& in, Args& a) { return select_impl(in, a, false, true); }
Value f_reject(const Value& in, Args& a) { return select_impl(in, a, false, false); }
Value f_selectattr(const Value& in, Args& a) { return select_impl(in, a, true, true); }
Value f_rejectattr(const Value& in, Args& a) { return select_impl(in, a, true, false); }

// map(attribute='x', default=...) or map('filter', args...).
Value f_map(const Value& in, Args& a) {
  List out;
  if (!in.truthy()) return Value(std::move(out));  // as select: None maps to nothing
  const Value* attr = a.get(99, "attribute");
  for (auto& item : iterate(in)) {
    if (attr) {
      Value v = attribute_path(item, attr->to_str());
      const Value* def = a.get(99, "default");
      out.push_back(v.is_undefined() && def ? *def : v);
    } else {
      if (a.pos.empty()) throw TemplateError("map: expected a filter name or attribute=");
      Args fargs = rest_args(a, 1);
      out.push_back(apply_filter(a.pos[0].to_str(), item, fargs));
    }
  }
  return Value(std::move(out));
}

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = {
      {"abs", f_abs},         {"attr", f_attr},       {"capitalize", f_capitalize}, {"count", f_length},
      {"d", f_default},       {"default", f_default}, {"dictsort", f_dictsort},     {"e", f_escape},
      {"escape", f_escape},   {"first", f_first},     {"float", f_float},           {"indent", f_indent},
      {"int", f_int},         {"items", f_items},     {"join", f_join},             {"last", f_last},
      {"length", f_length},   {"list", f_list},       {"lower", f_lower},           {"map", f_map},
      {"max", f_max},         {"min", f_min},         {"reject", f_reject},         {"rejectattr", f_rejectattr},
      {"replace", f_replace}, {"reverse", f_reverse}, {"round", f_round},           {"safe", f_safe},
      {"select", f_select},   {"selectattr", f_selectattr}, {"sort", f_sort},       {"string", f_string},
      {"sum", f_sum},         {"title", f_title},     {"tojson", f_tojson},         {"trim", f_trim},
      {"unique", f_unique},   {"upper", f_upper},
  };
  return table;
}

// ---- tests ----

bool t_compare(const Value& in, Args& a, const char* op) {
  const Value& other = need(a, 0, "other", op);
  std::string o = op;
  if (o == "==") return equals(in, other);
  if (o == "!=") return !equals(in, other);
  if (o == "<") return less_than(in, other);
  if (o == "<=") return !less_than(other, in);
  if (o == ">") return less_than(other, in);
  return !less_than(in, other);
}

// Jinja's tests. Python typing shows through: bool is a number, Undefined is iterable and a
// sequence, a dict is a sequence too.
const std::map<std::string, TestFn>& tests() {
  using K = Value::Kind;
  static const std::map<std::string, TestFn> table = {
      {"defined", [](const Value& v, Args&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, Args&) { return v.is_undefined(); }},
      {"none", [](const Value& v, Args&) { return v.is_none(); }},
      {"boolean", [](const Value& v, Args&) { return v.is_bool(); }},
      {"true", [](const Value& v, Args&) { return v.is_bool() && v.get_bool(); }},
      {"false", [](const Value& v, Args&) { return v.is_bool() && !v.get_bool(); }},
      {"integer", [](const Value& v, Args&) { return v.is_int(); }},
      {"float", [](const Value& v, Args&) { return v.is_float(); }},
      {"number", [](const Value& v, Args&) { return v.is_number(); }},
      {"string", [](const Value& v, Args&) { return v.is_string(); }},
      {"mapping", [](const Value& v, Args&) { return v.is_dict(); }},
      // Undefined is iterable (empty) and a sequence (it has a length) in Jinja.
      {"iterable", [](const Value& v, Args&) { K k = v.kind(); return k == K::String || k == K::List || k == K::Dict || k == K::Undefined; }},
      {"sequence", [](const Value& v, Args&) { K k = v.kind(); return k == K::String || k == K::List || k == K::Dict || k == K::Undefined; }},
      {"callable", [](const Value& v, Args&) { return v.is_function(); }},
      {"lower", [](const Value& v, Args&) { return v.is_string() && v.str() == pystr::lower(v.str()); }},
      {"upper", [](const Value& v, Args&) { return v.is_string() && v.str() == pystr::upper(v.str()); }},
      {"odd", [](const Value& v, Args&) { return v.get_int() % 2 != 0; }},
      {"even", [](const Value& v, Args&) { return v.get_int() % 2 == 0; }},
      {"divisibleby", [](const Value& v, Args& a) { int64_t n = need(a, 0, "num", "divisibleby").get_int(); return n != 0 && v.get_int() % n == 0; }},
      {"in", [](const Value& v, Args& a) { return contains(need(a, 0, "seq", "in"), v); }},
      {"sameas", [](const Value& v, Args& a) { const Value& o = need(a, 0, "other", "sameas"); return v.kind() == o.kind() && equals(v, o); }},
      {"eq", [](const Value& v, Args& a) { return t_compare(v, a, "=="); }},
      {"equalto", [](const Value& v, Args& a) { return t_compare(v, a, "=="); }},
      {"==", [](const Value& v, Args& a) { return t_compare(v, a, "=="); }},
      {"ne", [](const Value& v, Args& a) { return t_compare(v, a, "!="); }},
      {"!=", [](const Value& v, Args& a) { return t_compare(v, a, "!="); }},
      {"lt", [](const Value& v, Args& a) { return t_compare(v, a, "<"); }},
      {"lessthan", [](const Value& v, Args& a) { return t_compare(v, a, "<"); }},
      {"<", [](const Value& v, Args& a) { return t_compare(v, a, "<"); }},
      {"le", [](const Value& v, Args& a) { return t_compare(v, a, "<="); }},
      {"<=", [](const Value& v, Args& a) { return t_compare(v, a, "<="); }},
      {"gt", [](const Value& v, Args& a) { return t_compare(v, a, ">"); }},
      {"greaterthan", [](const Value& v, Args& a) { return t_compare(v, a, ">"); }},
      {">", [](const Value& v, Args& a) { return t_compare(v, a, ">"); }},
      {"ge", [](const Value& v, Args& a) { return t_compare(v, a, ">="); }},
      {">=", [](const Value& v, Args& a) { return t_compare(v, a, ">="); }},
      {"filter", [](const Value& v, Args&) { return v.is_string() && filters().count(v.str()) > 0; }},
      {"test", [](const Value& v, Args&) { return v.is_string() && tests().count(v.str()) > 0; }},
  };
  return table;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& input, Args& args) {
  auto it = filters().find(name);
  if (it == filters().end()) throw TemplateError("no filter named '" + name + "'");
  // Most filters treat Undefined like an empty value (str(Undefined) is ""); these fail as in Jinja.
  if (input.is_undefined() && (name == "tojson" || name == "abs" || name == "round" || name == "attr" || name == "dictsort"))
    fail_undefined(input);
  return it->second(input, args);
}

bool apply_test(const std::string& name, const Value& input, Args& args) {
  auto it = tests().find(name);
  if (it == tests().end()) throw TemplateError("no test named '" + name + "'");
  return it->second(input, args);
}

}  // namespace ztvm::jinja
