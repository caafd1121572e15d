// Jinja parser: token stream -> statement list. Operator precedence follows Jinja 2/3's parser
// (filters and `is` tests bind tighter than arithmetic: `messages|length - 1`).
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "text/jinja_ast.h"
#include "text/jinja_lexer.h"

namespace ztvm::jinja {

// Throws TemplateError("line:col: ...") for syntax errors and unsupported tags.
Body parse(const std::vector<Token>& tokens);

// The expression half of the parser (jinja_expr_parser.cpp) with its token cursor; the statement
// parser in jinja_parser.cpp builds on it. Internal to the parser.
class ExprParser {
 public:
  explicit ExprParser(const std::vector<Token>& tokens) : toks_(tokens) {}

 protected:
  // Token cursor. The stream always ends with Tok::End, which next() never moves past.
  const Token& cur() const;
  const Token& peek(size_t n = 1) const;
  const Token& next();
  static std::string describe(const Token& t);  // for "expected X, got Y"
  [[noreturn]] void fail(const Token& t, const std::string& msg) const;
  bool is_op(const char* op, size_t ahead = 0) const;
  bool is_name(const char* name, size_t ahead = 0) const;
  void expect_op(const char* op);
  void expect(Tok type, const char* what);
  std::string expect_name();
  ExprPtr node(ExprKind kind, const Token& at);

  // `a, b` is a tuple; with_condexpr=false excludes `x if c else y` (for-loop iterables, if tests).
  ExprPtr parse_tuple(bool with_condexpr, bool single_only = false);
  ExprPtr parse_expression(bool with_condexpr);
  // `| f | g(x)` applied to `input` (null inside {% filter %} and {% set x | f %}).
  ExprPtr parse_filter_chain(ExprPtr input, const Token& at);

 private:
  const std::vector<Token>& toks_;
  size_t i_ = 0;
  int depth_ = 0;  // expression nesting, bounded so hostile input cannot overflow the stack
  struct Nest;     // RAII guard around each recursive descent

  ExprPtr binary(ExprKind kind, const Token& at, ExprPtr a, ExprPtr b, std::string op = "");
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  template <typename Operand>
  ExprPtr binary_level(Operand operand, std::initializer_list<const char*> ops);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr e);
  ExprPtr parse_subscript(ExprPtr obj);
  void parse_args(Expr& e);
  ExprPtr parse_call(ExprPtr callee);
  std::string dotted_name();
  ExprPtr parse_filter_expr(ExprPtr e);
  ExprPtr parse_test(ExprPtr subject);
};

}  // namespace ztvm::jinja
