// Tree-walking evaluator. Scoping follows Jinja: `set` writes to the innermost scope; each for-loop
// iteration and each macro call gets a fresh scope (so a `set` inside a loop does not leak out,
// which is why templates use namespace()); `if` does not create a scope.
#include <cmath>
#include <unordered_map>

#include "text/jinja_builtins.h"
#include "text/jinja_parser.h"
#include "text/jinja_template.h"

namespace ztvm::jinja {
namespace {

// One scope. Lookups walk outwards: iteration scope -> enclosing scopes -> template top level ->
// globals (render variables over builtins).
struct Frame {
  Frame* parent = nullptr;
  std::unordered_map<std::string, Value> vars;

  const Value* lookup(const std::string& name) const {
    for (const Frame* f = this; f; f = f->parent) {
      auto it = f->vars.find(name);
      if (it != f->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

bool has_location(const char* msg) {  // "12:5: ..." — added once, by the innermost node
  const char* p = msg;
  while (*p >= '0' && *p <= '9') p++;
  if (p == msg || *p != ':') return false;
  const char* q = ++p;
  while (*p >= '0' && *p <= '9') p++;
  return p != q && *p == ':';
}

std::string location(int line, int col) { return std::to_string(line) + ":" + std::to_string(col) + ": "; }

// Python's // and % round toward negative infinity: -7 // 2 == -4, -7 % 3 == 2.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Python arithmetic on two values; `~` is string concatenation of str() of both sides.
Value arith(const std::string& op, const Value& l, const Value& r) {
  if (op == "~") return Value(l.to_str() + r.to_str());
  // Jinja's Undefined refuses arithmetic: a missing variable must not silently become "" or 0.
  if (l.is_undefined()) fail_undefined(l);
  if (r.is_undefined()) fail_undefined(r);
  if (l.is_number() && r.is_number()) {  // bool counts as int, as in Python
    bool fl = l.is_float() || r.is_float();
    if (op == "+") return fl ? Value(l.get_float() + r.get_float()) : Value(l.get_int() + r.get_int());
    if (op == "-") return fl ? Value(l.get_float() - r.get_float()) : Value(l.get_int() - r.get_int());
    if (op == "*") return fl ? Value(l.get_float() * r.get_float()) : Value(l.get_int() * r.get_int());
    if (op == "/") {
      if (r.get_float() == 0) throw TemplateError("division by zero");
      return Value(l.get_float() / r.get_float());
    }
    if (op == "//" || op == "%") {
      if (r.get_float() == 0) throw TemplateError("integer division or modulo by zero");
      if (!fl) {
        int64_t q = floor_div(l.get_int(), r.get_int());
        return op == "//" ? Value(q) : Value(l.get_int() - q * r.get_int());
      }
      double q = std::floor(l.get_float() / r.get_float());
      return op == "//" ? Value(q) : Value(l.get_float() - q * r.get_float());
    }
    if (op == "**") {
      if (!fl && r.get_int() >= 0) {
        int64_t result = 1;
        for (int64_t i = 0; i < r.get_int(); i++) result *= l.get_int();
        return Value(result);
      }
      return Value(std::pow(l.get_float(), r.get_float()));
    }
  }
  if (op == "+" && l.is_string() && r.is_string()) {
    // Markup + str escapes the plain side (markupsafe), so `'x'|safe + text` HTML-escapes text.
    if (l.is_safe() || r.is_safe())
      return Value::markup((l.is_safe() ? l.str() : html_escape(l.str())) + (r.is_safe() ? r.str() : html_escape(r.str())));
    return Value(l.str() + r.str());
  }
  if (op == "+" && l.is_list() && r.is_list() && l.is_tuple() == r.is_tuple()) {
    List out = l.list();
    out.insert(out.end(), r.list().begin(), r.list().end());
    return l.is_tuple() ? Value::tuple(std::move(out)) : Value(std::move(out));
  }
  if (op == "*" && (l.is_int() || r.is_int()) && (l.is_string() || r.is_string() || l.is_list() || r.is_list())) {
    const Value& seq = l.is_int() ? r : l;
    int64_t n = l.is_int() ? l.get_int() : r.get_int();
    if (seq.is_string()) {
      std::string out;
      for (int64_t i = 0; i < n; i++) out += seq.str();
      return Value(std::move(out));
    }
    List out;
    for (int64_t i = 0; i < n; i++) out.insert(out.end(), seq.list().begin(), seq.list().end());
    return Value(std::move(out));
  }
  throw TemplateError("unsupported operand type(s) for " + op + ": '" + l.type_name() + "' and '" + r.type_name() + "'");
}

// One link of a comparison chain. == and `in` accept anything; ordering needs comparable types.
bool compare(const std::string& op, const Value& l, const Value& r) {
  if (op == "==") return equals(l, r);
  if (op == "!=") return !equals(l, r);
  if (op == "in") return contains(r, l);
  if (op == "notin") return !contains(r, l);
  if (l.is_undefined()) fail_undefined(l);
  if (r.is_undefined()) fail_undefined(r);
  if (op == "<") return less_than(l, r);
  if (op == ">") return less_than(r, l);
  if (op == "<=") return less_than(l, r) || equals(l, r);
  return less_than(r, l) || equals(l, r);  // >=
}

class Evaluator {
 public:
  std::string run(const Body& body, const Dict& variables) {
    Frame globals;
    Dict builtins = builtin_globals();
    for (auto& [k, v] : builtins.entries()) globals.vars[k.str()] = v;
    for (auto& [k, v] : variables.entries()) globals.vars[k.to_str()] = v;
    Frame top{&globals, {}};
    std::string out;
    exec(body, top, out);
    return out;
  }

 private:
  enum class Flow { Normal, Break, Continue };
  // Runaway macro recursion (Command-R's json_to_python_type recurses forever on a type named by a
  // plain string) must end in an error, as Python's RecursionError does, not a stack overflow.
  static constexpr int kMaxMacroDepth = 200;
  int macro_depth_ = 0;
  Value block_input_;  // the captured text a {% filter %} / {% set x | f %} chain starts from

  Flow exec(const Body& body, Frame& f, std::string& out) {
    for (auto& s : body) {
      Flow flow = exec_located(*s, f, out);
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  // Errors get the position of the innermost node that knows one; raise_exception() messages stay
  // exactly as the template wrote them.
  Flow exec_located(const Stmt& s, Frame& f, std::string& out) {
    try {
      return exec_stmt(s, f, out);
    } catch (const RaisedError&) {
      throw;
    } catch (const TemplateError& e) {
      if (has_location(e.what())) throw;
      throw TemplateError(location(s.line, s.col) + e.what());
    }
  }

  std::string capture(const Body& body, Frame& f) {
    std::string text;
    exec(body, f, text);
    return text;
  }

  Flow exec_stmt(const Stmt& s, Frame& f, std::string& out) {
    switch (s.kind) {
      case StmtKind::Text: out += s.text; return Flow::Normal;
      case StmtKind::Output: out += eval(*s.expr, f).to_str(); return Flow::Normal;
      case StmtKind::If:
        for (auto& [cond, body] : s.branches)
          if (eval(*cond, f).truthy()) return exec(body, f, out);
        return exec(s.else_body, f, out);
      case StmtKind::For: return exec_for(s, f, out);
      case StmtKind::Set: {
        Value v = eval(*s.expr, f);
        if (s.filter) {  // {% set ns.attr = v %}
          Value ns = eval(*s.filter, f);
          if (!ns.is_namespace()) throw TemplateError("cannot assign attribute on non-namespace object");
          ns.namespace_dict().set(s.text, std::move(v));
        } else {
          bind(f, s.targets, v);
        }
        return Flow::Normal;
      }
      case StmtKind::SetBlock: {
        Value v(capture(s.body, f));
        if (s.expr) v = apply_chain(*s.expr, f, std::move(v));
        f.vars[s.targets[0]] = std::move(v);
        return Flow::Normal;
      }
      case StmtKind::FilterBlock: out += apply_chain(*s.expr, f, Value(capture(s.body, f))).to_str(); return Flow::Normal;
      case StmtKind::Macro: f.vars[s.text] = make_macro(s, f); return Flow::Normal;
      case StmtKind::Break: return Flow::Break;
      case StmtKind::Continue: return Flow::Continue;
      case StmtKind::Generation: return exec(s.body, f, out);
    }
    return Flow::Normal;
  }

  // A filter chain whose innermost filter has no input reads block_input_ (saved and restored so
  // nested filter blocks work).
  Value apply_chain(const Expr& chain, Frame& f, Value input) {
    Value saved = std::move(block_input_);
    block_input_ = std::move(input);
    Value result = eval(chain, f);
    block_input_ = std::move(saved);
    return result;
  }

  // Assigns `v` to one name, or unpacks a list over several (`for k, v in d|items`).
  static void bind(Frame& f, const std::vector<std::string>& names, const Value& v) {
    if (names.size() == 1) {
      f.vars[names[0]] = v;
      return;
    }
    if (!v.is_list()) throw TemplateError("cannot unpack non-sequence " + v.type_name());
    if (v.list().size() != names.size())
      throw TemplateError((v.list().size() > names.size() ? "too many" : "not enough") +
                          std::string(" values to unpack (expected ") + std::to_string(names.size()) + ")");
    for (size_t i = 0; i < names.size(); i++) f.vars[names[i]] = v.list()[i];
  }

  Flow exec_for(const Stmt& s, Frame& f, std::string& out) {
    List items = iterate(eval(*s.expr, f));
    if (s.filter) {  // `for x in xs if cond`: filtered before loop.index/length are computed
      List kept;
      for (auto& item : items) {
        Frame probe{&f, {}};
        bind(probe, s.targets, item);
        if (eval(*s.filter, probe).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      Frame scope{&f, {}};
      exec(s.else_body, scope, out);
      return Flow::Normal;
    }
    const int64_t n = int64_t(items.size());
    for (int64_t i = 0; i < n; i++) {
      Frame scope{&f, {}};
      bind(scope, s.targets, items[size_t(i)]);
      // Jinja's loop object; previtem/nextitem are absent (Undefined) at the ends.
      Dict loop;
      loop.set("index", Value(i + 1));
      loop.set("index0", Value(i));
      loop.set("revindex", Value(n - i));
      loop.set("revindex0", Value(n - i - 1));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(i == n - 1));
      loop.set("length", Value(n));
      loop.set("depth", Value(1));
      loop.set("depth0", Value(0));
      if (i > 0) loop.set("previtem", items[size_t(i - 1)]);
      if (i + 1 < n) loop.set("nextitem", items[size_t(i + 1)]);
      loop.set("cycle", Value::function("cycle", [i](Args& a) {
                 if (a.pos.empty()) throw TemplateError("loop.cycle() needs at least one argument");
                 return a.pos[size_t(i) % a.pos.size()];
               }));
      scope.vars["loop"] = Value(std::move(loop));
      if (exec(s.body, scope, out) == Flow::Break) break;
    }
    return Flow::Normal;
  }

  // A macro is a callable that renders its body in a fresh scope whose parent is the scope it was
  // defined in (so it sees top-level variables and namespaces); it returns the text it rendered.
  // Missing arguments without defaults are Undefined, as in Jinja.
  Value make_macro(const Stmt& s, Frame& defining) {
    const Stmt* macro = &s;
    Frame* parent = &defining;
    return Value::function(s.text, [this, macro, parent](Args& a) {
      if (a.pos.size() > macro->params.size())
        throw TemplateError("macro '" + macro->text + "' takes not more than " + std::to_string(macro->params.size()) +
                            " argument(s)");
      for (auto& [k, v] : a.kw) {
        bool known = false;
        for (auto& p : macro->params) known |= p.name == k;
        if (!known) throw TemplateError("macro '" + macro->text + "' takes no keyword argument '" + k + "'");
      }
      Frame scope{parent, {}};
      for (size_t i = 0; i < macro->params.size(); i++) {
        const MacroParam& p = macro->params[i];
        if (const Value* v = a.get(i, p.name.c_str())) scope.vars[p.name] = *v;
        else if (p.default_value) scope.vars[p.name] = eval(*p.default_value, scope);
        else scope.vars[p.name] = Value::undefined("parameter '" + p.name + "' was not provided");
      }
      if (macro_depth_ >= kMaxMacroDepth)
        throw TemplateError("maximum recursion depth exceeded in macro '" + macro->text + "'");
      macro_depth_++;
      struct Leave {
        int& depth;
        ~Leave() { depth--; }
      } leave{macro_depth_};
      return Value(capture(macro->body, scope));
    });
  }

  Value eval(const Expr& e, Frame& f) {
    try {
      return eval_inner(e, f);
    } catch (const RaisedError&) {
      throw;
    } catch (const TemplateError& err) {
      if (has_location(err.what())) throw;
      throw TemplateError(location(e.line, e.col) + err.what());
    }
  }

  Args eval_args(const Expr& e, Frame& f) {
    Args a;
    for (auto& x : e.items) a.pos.push_back(eval(*x, f));
    for (auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x, f));
    return a;
  }

  // Calling an Undefined reports the missing name ("'foo' is undefined"), like Jinja.
  static Value call_value(const Value& fn, Args& args) {
    if (fn.is_function()) return fn.func().fn(args);
    if (fn.is_undefined()) fail_undefined(fn);
    throw TemplateError("'" + fn.type_name() + "' object is not callable");
  }

  Value eval_call(const Expr& e, Frame& f) {
    Args args = eval_args(e, f);
    if (e.a->kind == ExprKind::GetAttr) {  // obj.method(...): Python methods on str/dict/list first
      Value obj = eval(*e.a->a, f);
      if (obj.is_undefined()) fail_undefined(obj);
      if (auto r = call_method(obj, e.a->name, args)) return *r;
      return call_value(get_attr(obj, e.a->name), args);
    }
    return call_value(eval(*e.a, f), args);
  }

  Value eval_inner(const Expr& e, Frame& f) {
    switch (e.kind) {
      case ExprKind::Literal: return e.value;
      case ExprKind::Name: {
        const Value* v = f.lookup(e.name);
        return v ? *v : Value::undefined("'" + e.name + "' is undefined");
      }
      case ExprKind::List: {
        List l;
        for (auto& x : e.items) l.push_back(eval(*x, f));
        return e.negated ? Value::tuple(std::move(l)) : Value(std::move(l));
      }
      case ExprKind::DictLit: {
        Dict d;
        for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
          Value k = eval(*e.items[i], f);
          if (k.is_dict() || k.is_namespace() || k.is_undefined() || (k.is_list() && !k.is_tuple()))
            throw TemplateError("unhashable type: '" + k.type_name() + "'");
          d.set(std::move(k), eval(*e.items[i + 1], f));
        }
        return Value(std::move(d));
      }
      case ExprKind::GetAttr: return get_attr(eval(*e.a, f), e.name);
      case ExprKind::GetItem: {
        Value obj = eval(*e.a, f);
        return get_item(obj, eval(*e.b, f));
      }
      case ExprKind::Slice: {  // omitted bounds are None, as in Python's slice()
        Value obj = eval(*e.a, f);
        Value start = e.b ? eval(*e.b, f) : Value(nullptr);
        Value stop = e.c ? eval(*e.c, f) : Value(nullptr);
        Value step = e.items.empty() ? Value(nullptr) : eval(*e.items[0], f);
        return get_slice(obj, &start, &stop, &step);
      }
      case ExprKind::Call: return eval_call(e, f);
      case ExprKind::Filter: {
        Value input = e.a ? eval(*e.a, f) : block_input_;
        Args args = eval_args(e, f);
        return apply_filter(e.name, input, args);
      }
      case ExprKind::Test: {
        Value subject = eval(*e.a, f);
        Args args = eval_args(e, f);
        return Value(apply_test(e.name, subject, args) != e.negated);
      }
      case ExprKind::Not: return Value(!eval(*e.a, f).truthy());
      case ExprKind::Neg: case ExprKind::Pos: {
        Value v = eval(*e.a, f);
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number()) throw TemplateError("bad operand type for unary " + std::string(e.kind == ExprKind::Neg ? "-" : "+") + ": '" + v.type_name() + "'");
        if (e.kind == ExprKind::Pos) return v.is_bool() ? Value(v.get_int()) : v;
        return v.is_float() ? Value(-v.get_float()) : Value(-v.get_int());
      }
      case ExprKind::Binary: {
        Value l = eval(*e.a, f);
        return arith(e.name, l, eval(*e.b, f));
      }
      case ExprKind::And: {  // Python returns the deciding operand, not a bool
        Value l = eval(*e.a, f);
        return l.truthy() ? eval(*e.b, f) : l;
      }
      case ExprKind::Or: {
        Value l = eval(*e.a, f);
        return l.truthy() ? l : eval(*e.b, f);
      }
      case ExprKind::Compare: {  // chained: a < b < c means a < b and b < c
        Value l = eval(*e.a, f);
        for (size_t i = 0; i < e.ops.size(); i++) {
          Value r = eval(*e.items[i], f);
          if (!compare(e.ops[i], l, r)) return Value(false);
          l = std::move(r);
        }
        return Value(true);
      }
      case ExprKind::CondExpr:
        if (eval(*e.a, f).truthy()) return eval(*e.b, f);
        return e.c ? eval(*e.c, f) : Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
    return Value();
  }
};

}  // namespace

Template::Template(const std::string& source, const LexerOptions& opts)
    : body_(std::make_shared<const Body>(parse(tokenize(source, opts)))) {}

std::string Template::render(const Dict& variables) const { return Evaluator().run(*body_, variables); }

std::string Template::render(const nlohmann::ordered_json& variables) const {
  if (!variables.is_object()) throw TemplateError("template variables must be a JSON object");
  return render(Value::from_json(variables).dict());
}

}  // namespace ztvm::jinja
