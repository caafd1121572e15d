// Syntax tree of a parsed template. Two node structs (expressions and statements) with a kind tag
// and a few generic fields; each kind's comment says which fields it uses.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja_value.h"

namespace ztvm::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  Literal,    // value
  Name,       // name
  List,       // items; negated marks a tuple literal: (a, b) or a, b
  DictLit,    // items as key, value pairs: items[2k], items[2k+1]
  GetAttr,    // a.name
  GetItem,    // a[b]
  Slice,      // a[b:c:d]; b/c/d may be null
  Call,       // a(items..., kwargs...)
  Filter,     // a | name(items..., kwargs...); a is null inside {% filter %} blocks
  Test,       // a is [not] name(items...); negated
  Not,        // not a
  Neg,        // -a
  Pos,        // +a
  Binary,     // a op b: + - * / // % ** ~
  And,        // a and b (returns an operand, as Python does)
  Or,         // a or b
  Compare,    // a op0 items[0] op1 items[1] ... (chained, ops in `ops`): == != < <= > >= in notin
  CondExpr,   // b if a else c; c may be null (then Undefined)
};

struct Expr {
  ExprKind kind;
  int line = 0, col = 0;
  Value value;                     // Literal
  std::string name;                // Name, GetAttr, Filter, Test; Binary: the operator
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;      // List, DictLit, Call/Filter/Test positional args, Compare operands
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // Call/Filter keyword args
  std::vector<std::string> ops;    // Compare operators
  bool negated = false;            // Test: `is not`; List: a tuple
};

enum class StmtKind : uint8_t {
  Text,        // text
  Output,      // {{ expr }}
  If,          // branches: (condition, body) pairs; else_body
  For,         // targets in expr [if filter] body [else else_body]
  Set,         // targets = expr; or attr_target.name = expr (namespace attribute)
  SetBlock,    // {% set targets[0] %}body{% endset %}, optional filter (expr with a null input)
  Macro,       // name(params with defaults) body
  Break,
  Continue,
  FilterBlock, // {% filter f %}body{% endfilter %}: expr is the Filter chain with a null input
  Generation,  // {% generation %}body{% endgeneration %}: transformers' assistant-mask marker
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required (missing arguments are Undefined, as in Jinja)
};

struct Stmt {
  StmtKind kind;
  int line = 0, col = 0;
  std::string text;                      // Text; Macro name; Set attribute target's attribute
  ExprPtr expr;                          // Output value, Set value, For iterable, filters
  ExprPtr filter;                        // For: `if` condition; Set: the namespace expression (ns.attr)
  std::vector<std::string> targets;      // For loop variables; Set names
  std::vector<std::pair<ExprPtr, Body>> branches;  // If
  Body body, else_body;
  std::vector<MacroParam> params;        // Macro
};

}  // namespace ztvm::jinja
