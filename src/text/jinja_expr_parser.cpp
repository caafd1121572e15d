// Expression parser. The grammar mirrors Jinja's own parser level by level (condexpr > or > and >
// not > compare > + - > ~ > * / // % > ** > unary with postfix, filters and tests), so precedence
// quirks come out the same as in Python Jinja.
#include <algorithm>

#include "text/jinja_parser.h"

namespace ztvm::jinja {

const Token& ExprParser::cur() const { return toks_[i_]; }
const Token& ExprParser::peek(size_t n) const { return toks_[std::min(i_ + n, toks_.size() - 1)]; }
const Token& ExprParser::next() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }

std::string ExprParser::describe(const Token& t) {
  switch (t.type) {
    case Tok::Text: return "template text";
    case Tok::VarBegin: return "'{{'";
    case Tok::VarEnd: return "'}}'";
    case Tok::BlockBegin: return "'{%'";
    case Tok::BlockEnd: return "'%}'";
    case Tok::String: return "string literal";
    case Tok::Int: case Tok::Float: return "number " + t.text;
    case Tok::End: return "end of template";
    default: return "'" + t.text + "'";
  }
}

void ExprParser::fail(const Token& t, const std::string& msg) const {
  throw TemplateError(std::to_string(t.line) + ":" + std::to_string(t.col) + ": " + msg);
}

bool ExprParser::is_op(const char* op, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.type == Tok::Op && t.text == op;
}
bool ExprParser::is_name(const char* name, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.type == Tok::Name && t.text == name;
}
void ExprParser::expect_op(const char* op) {
  if (!is_op(op)) fail(cur(), std::string("expected '") + op + "', got " + describe(cur()));
  next();
}
void ExprParser::expect(Tok type, const char* what) {
  if (cur().type != type) fail(cur(), std::string("expected ") + what + ", got " + describe(cur()));
  next();
}
std::string ExprParser::expect_name() {
  if (cur().type != Tok::Name) fail(cur(), "expected a name, got " + describe(cur()));
  return next().text;
}

ExprPtr ExprParser::node(ExprKind kind, const Token& at) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = at.line;
  e->col = at.col;
  return e;
}

struct ExprParser::Nest {
  ExprParser& p;
  explicit Nest(ExprParser& parser) : p(parser) {
    if (++p.depth_ > 200) p.fail(p.cur(), "expression nested too deeply");
  }
  ~Nest() { p.depth_--; }
};

// `a, b` makes a tuple; a single expression stays itself.
ExprPtr ExprParser::parse_tuple(bool with_condexpr, bool single_only) {
  const Token& at = cur();
  ExprPtr first = parse_expression(with_condexpr);
  if (single_only || !is_op(",")) return first;
  auto tuple = node(ExprKind::List, at);
  tuple->negated = true;  // a tuple
  tuple->items.push_back(std::move(first));
  while (is_op(",")) {
    next();
    if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")")) break;
    tuple->items.push_back(parse_expression(with_condexpr));
  }
  return tuple;
}

// `x if cond else y`; the else part is optional (missing means Undefined).
ExprPtr ExprParser::parse_expression(bool with_condexpr) {
  Nest nest(*this);
  if (!with_condexpr) return parse_or();
  ExprPtr expr = parse_or();
  while (is_name("if")) {
    auto cond = node(ExprKind::CondExpr, next());
    cond->a = parse_or();
    cond->b = std::move(expr);
    if (is_name("else")) {
      next();
      cond->c = parse_expression(true);
    }
    expr = std::move(cond);
  }
  return expr;
}

ExprPtr ExprParser::binary(ExprKind kind, const Token& at, ExprPtr a, ExprPtr b, std::string op) {
  auto e = node(kind, at);
  e->a = std::move(a);
  e->b = std::move(b);
  e->name = std::move(op);
  return e;
}

ExprPtr ExprParser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const Token& at = next();
    left = binary(ExprKind::Or, at, std::move(left), parse_and());
  }
  return left;
}

ExprPtr ExprParser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const Token& at = next();
    left = binary(ExprKind::And, at, std::move(left), parse_not());
  }
  return left;
}

// `not` binds looser than comparisons: `not a in b` is `not (a in b)`.
ExprPtr ExprParser::parse_not() {
  Nest nest(*this);
  if (is_name("not")) {
    auto e = node(ExprKind::Not, next());
    e->a = parse_not();
    return e;
  }
  return parse_compare();
}

// Comparisons chain as in Python; `not in` is one operator.
ExprPtr ExprParser::parse_compare() {
  const Token& at = cur();
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                  cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
      op = next().text;
    } else if (is_name("in")) {
      next();
      op = "in";
    } else if (is_name("not") && is_name("in", 1)) {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = node(ExprKind::Compare, at);
      cmp->a = std::move(first);
    }
    cmp->ops.push_back(op);
    cmp->items.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

// One left-associative level of binary operators over operands parsed by `operand`.
template <typename Operand>
ExprPtr ExprParser::binary_level(Operand operand, std::initializer_list<const char*> ops) {
  ExprPtr left = operand();
  while (true) {
    const char* op = nullptr;
    for (const char* o : ops)
      if (is_op(o)) op = o;
    if (!op) return left;
    const Token& at = next();
    left = binary(ExprKind::Binary, at, std::move(left), operand(), op);
  }
}

ExprPtr ExprParser::parse_math1() { return binary_level([this] { return parse_concat(); }, {"+", "-"}); }
ExprPtr ExprParser::parse_concat() { return binary_level([this] { return parse_math2(); }, {"~"}); }
ExprPtr ExprParser::parse_math2() { return binary_level([this] { return parse_pow(); }, {"*", "/", "//", "%"}); }
// Jinja's ** is left-associative and binds looser than unary minus: -2 ** 2 == 4.
ExprPtr ExprParser::parse_pow() { return binary_level([this] { return parse_unary(true); }, {"**"}); }

// Unary minus applies before postfix and filters are attached to the result, as in Jinja:
// `-x|abs` is abs(-x).
ExprPtr ExprParser::parse_unary(bool with_filter) {
  Nest nest(*this);
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    e = node(is_op("-") ? ExprKind::Neg : ExprKind::Pos, cur());
    next();
    e->a = parse_unary(false);
  } else {
    e = parse_primary();
  }
  e = parse_postfix(std::move(e));
  if (with_filter) e = parse_filter_expr(std::move(e));
  return e;
}

// Literals (true/True/none/None are keywords), names, parenthesised expressions or tuples, list
// and dict displays.
ExprPtr ExprParser::parse_primary() {
  const Token& t = cur();
  switch (t.type) {
    case Tok::Name: {
      next();
      auto e = node(ExprKind::Literal, t);
      if (t.text == "true" || t.text == "True") e->value = Value(true);
      else if (t.text == "false" || t.text == "False") e->value = Value(false);
      else if (t.text == "none" || t.text == "None") e->value = Value(nullptr);
      else {
        e->kind = ExprKind::Name;
        e->name = t.text;
      }
      return e;
    }
    case Tok::String: {  // adjacent literals concatenate: "a" "b"
      std::string s;
      while (cur().type == Tok::String) s += next().text;
      auto e = node(ExprKind::Literal, t);
      e->value = Value(std::move(s));
      return e;
    }
    case Tok::Int: case Tok::Float: {
      next();
      auto e = node(ExprKind::Literal, t);
      e->value = t.type == Tok::Int ? Value(t.int_value) : Value(t.float_value);
      return e;
    }
    case Tok::Op:
      if (t.text == "(") {
        next();
        if (is_op(")")) {  // () is an empty tuple
          next();
          auto empty = node(ExprKind::List, t);
          empty->negated = true;
          return empty;
        }
        ExprPtr e = parse_tuple(true);
        expect_op(")");
        return e;
      }
      if (t.text == "[") return parse_list();
      if (t.text == "{") return parse_dict();
      [[fallthrough]];
    default:
      fail(t, "unexpected " + describe(t) + " in expression");
  }
}

ExprPtr ExprParser::parse_list() {
  auto e = node(ExprKind::List, next());
  while (!is_op("]")) {
    if (!e->items.empty()) expect_op(",");
    if (is_op("]")) break;
    e->items.push_back(parse_expression(true));
  }
  next();
  return e;
}

ExprPtr ExprParser::parse_dict() {
  auto e = node(ExprKind::DictLit, next());
  while (!is_op("}")) {
    if (!e->items.empty()) expect_op(",");
    if (is_op("}")) break;
    e->items.push_back(parse_expression(true));
    expect_op(":");
    e->items.push_back(parse_expression(true));
  }
  next();
  return e;
}

// .name, [index or slice] and (call) in any order: `m.content.split('x')[-1].strip()`.
ExprPtr ExprParser::parse_postfix(ExprPtr e) {
  while (true) {
    if (is_op(".")) {
      const Token& at = next();
      if (cur().type == Tok::Int) {  // foo.0 is foo[0]
        auto idx = node(ExprKind::Literal, cur());
        idx->value = Value(next().int_value);
        e = binary(ExprKind::GetItem, at, std::move(e), std::move(idx));
      } else {
        auto g = node(ExprKind::GetAttr, at);
        g->a = std::move(e);
        g->name = expect_name();
        e = std::move(g);
      }
    } else if (is_op("[")) {
      e = parse_subscript(std::move(e));
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

// a[i], a[start:stop], a[::step]; each part of a slice may be omitted.
ExprPtr ExprParser::parse_subscript(ExprPtr obj) {
  const Token& at = next();  // [
  ExprPtr start, stop, step;
  if (!is_op(":")) {
    start = parse_expression(true);
    if (!is_op(":")) {
      expect_op("]");
      return binary(ExprKind::GetItem, at, std::move(obj), std::move(start));
    }
  }
  next();  // first ':'
  if (!is_op("]") && !is_op(":")) stop = parse_expression(true);
  if (is_op(":")) {
    next();
    if (!is_op("]")) step = parse_expression(true);
  }
  expect_op("]");
  auto e = node(ExprKind::Slice, at);
  e->a = std::move(obj);
  e->b = std::move(start);
  e->c = std::move(stop);
  if (step) e->items.push_back(std::move(step));
  return e;
}

// Arguments of a call, filter or test: positional then `name=value`.
void ExprParser::parse_args(Expr& e) {
  expect_op("(");
  while (!is_op(")")) {
    if (!e.items.empty() || !e.kwargs.empty()) expect_op(",");
    if (is_op(")")) break;
    if (is_op("*") || is_op("**")) fail(cur(), "*args and **kwargs in calls are not supported");
    if (cur().type == Tok::Name && is_op("=", 1)) {
      std::string name = next().text;
      next();
      e.kwargs.emplace_back(name, parse_expression(true));
    } else {
      if (!e.kwargs.empty()) fail(cur(), "positional argument after keyword argument");
      e.items.push_back(parse_expression(true));
    }
  }
  next();
}

ExprPtr ExprParser::parse_call(ExprPtr callee) {
  auto e = node(ExprKind::Call, cur());
  e->a = std::move(callee);
  parse_args(*e);
  return e;
}

// Filter and test names may be dotted (`is foo.bar`), as Jinja allows.
std::string ExprParser::dotted_name() {
  std::string name = expect_name();
  while (is_op(".") && peek().type == Tok::Name) {
    next();
    name += "." + next().text;
  }
  return name;
}

// `| f | g(x)` applied to `input` (null inside {% filter %} and {% set x | f %}).
ExprPtr ExprParser::parse_filter_chain(ExprPtr input, const Token& at) {
  bool first = true;
  while (first || is_op("|")) {
    if (is_op("|")) next();
    else if (input) break;
    first = false;
    auto f = node(ExprKind::Filter, at);
    f->a = std::move(input);
    f->name = dotted_name();
    if (is_op("(")) parse_args(*f);
    input = std::move(f);
  }
  return input;
}

// After a unary operand: any mix of `| filter`, `is test` and calls.
ExprPtr ExprParser::parse_filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      const Token& at = cur();
      e = parse_filter_chain(std::move(e), at);
    } else if (is_name("is")) {
      e = parse_test(std::move(e));
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

ExprPtr ExprParser::parse_test(ExprPtr subject) {
  auto t = node(ExprKind::Test, next());  // `is`
  if (is_name("not")) {
    next();
    t->negated = true;
  }
  t->a = std::move(subject);
  t->name = dotted_name();
  if (is_op("(")) {
    parse_args(*t);
  } else {
    // One bare argument: `is divisibleby 3`, `is sameas false`, but not `is defined and ...`.
    const Token& c = cur();
    bool arg = c.type == Tok::Name || c.type == Tok::String || c.type == Tok::Int || c.type == Tok::Float ||
               is_op("[") || is_op("{");
    if (arg && !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail(c, "you cannot chain multiple tests with 'is'");
      t->items.push_back(parse_postfix(parse_primary()));
    }
  }
  return t;
}

}  // namespace ztvm::jinja
