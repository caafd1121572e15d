// Statement parser: text, {{ }} output and the block tags chat templates use (if, for, set,
// macro, filter, break/continue, generation). Expressions come from ExprParser.
#include "text/jinja_parser.h"

namespace ztvm::jinja {
namespace {

class Parser : public ExprParser {
 public:
  using ExprParser::ExprParser;

  Body parse_template() {
    Body body;
    std::string end = parse_body(body, {});
    if (!end.empty()) fail(cur(), "unexpected '" + end + "'");
    return body;
  }

 private:
  StmtPtr stmt(StmtKind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  // Parses statements until a block tag whose name is in `ends`; returns that name (the cursor is
  // left just after it) or "" at the end of the template.
  std::string parse_body(Body& body, std::initializer_list<const char*> ends) {
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::End) {
        if (ends.size()) fail(t, "unexpected end of template: missing '{% " + std::string(*ends.begin()) + " %}'"
                                     " (or another of its closing tags)");
        return "";
      }
      if (t.type == Tok::Text) {
        auto s = stmt(StmtKind::Text, t);
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.type == Tok::VarBegin) {
        next();
        auto s = stmt(StmtKind::Output, t);
        s->expr = parse_tuple(true);
        expect(Tok::VarEnd, "'}}'");
        body.push_back(std::move(s));
      } else if (t.type == Tok::BlockBegin) {
        next();
        const Token& name_tok = cur();
        std::string name = expect_name();
        for (const char* e : ends)
          if (name == e) return name;
        body.push_back(parse_statement(name, name_tok));
      } else {
        fail(t, "unexpected " + describe(t));
      }
    }
  }

  // Dispatch on the tag name after `{%`. Template inheritance and includes (extends, block,
  // include, import) are not part of chat templates and are refused with a clear message.
  StmtPtr parse_statement(const std::string& name, const Token& at) {
    if (name == "if") return parse_if(at);
    if (name == "for") return parse_for(at);
    if (name == "set") return parse_set(at);
    if (name == "macro") return parse_macro(at);
    if (name == "break" || name == "continue") {
      expect(Tok::BlockEnd, "'%}'");
      return stmt(name == "break" ? StmtKind::Break : StmtKind::Continue, at);
    }
    if (name == "filter") {
      auto s = stmt(StmtKind::FilterBlock, at);
      s->expr = parse_filter_chain(nullptr, at);
      expect(Tok::BlockEnd, "'%}'");
      parse_body(s->body, {"endfilter"});
      expect(Tok::BlockEnd, "'%}'");
      return s;
    }
    if (name == "generation") {
      auto s = stmt(StmtKind::Generation, at);
      expect(Tok::BlockEnd, "'%}'");
      parse_body(s->body, {"endgeneration"});
      expect(Tok::BlockEnd, "'%}'");
      return s;
    }
    if (name.rfind("end", 0) == 0 || name == "elif" || name == "else")
      fail(at, "unexpected '{% " + name + " %}' without a matching opening tag");
    fail(at, "unsupported tag '" + name + "'");
  }

  // if / elif / else / endif; the conditions parse without the inline if-else, as in Jinja.
  StmtPtr parse_if(const Token& at) {
    auto s = stmt(StmtKind::If, at);
    while (true) {
      ExprPtr cond = parse_tuple(false, true);
      expect(Tok::BlockEnd, "'%}'");
      Body body;
      std::string end = parse_body(body, {"elif", "else", "endif"});
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") continue;
      if (end == "else") {
        expect(Tok::BlockEnd, "'%}'");
        parse_body(s->else_body, {"endif"});
      }
      expect(Tok::BlockEnd, "'%}'");
      return s;
    }
  }

  // Assignment targets: `x`, `k, v` or `(k, v)`.
  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = is_op("(");
    if (paren) next();
    do {
      names.push_back(expect_name());
      if (!is_op(",")) break;
      next();
    } while (cur().type == Tok::Name && !is_name("in"));
    if (paren) expect_op(")");
    return names;
  }

  // for targets in iterable [if filter] ... [else ...] endfor. `recursive` loops are refused.
  StmtPtr parse_for(const Token& at) {
    auto s = stmt(StmtKind::For, at);
    s->targets = parse_targets();
    if (!is_name("in")) fail(cur(), "expected 'in' in for loop, got " + describe(cur()));
    next();
    s->expr = parse_tuple(false, false);
    if (is_name("if")) {
      next();
      s->filter = parse_expression(true);
    }
    if (is_name("recursive")) fail(cur(), "recursive for loops are not supported");
    expect(Tok::BlockEnd, "'%}'");
    std::string end = parse_body(s->body, {"endfor", "else"});
    if (end == "else") {
      expect(Tok::BlockEnd, "'%}'");
      parse_body(s->else_body, {"endfor"});
    }
    expect(Tok::BlockEnd, "'%}'");
    return s;
  }

  StmtPtr parse_set(const Token& at) {
    auto s = stmt(StmtKind::Set, at);
    if (cur().type == Tok::Name && is_op(".", 1)) {  // {% set ns.attr = value %}
      auto ns = node(ExprKind::Name, cur());
      ns->name = next().text;
      next();
      s->filter = std::move(ns);
      s->text = expect_name();
    } else {
      s->targets = parse_targets();
    }
    if (is_op("=")) {
      next();
      s->expr = parse_tuple(true);
      expect(Tok::BlockEnd, "'%}'");
      return s;
    }
    // Block form: {% set name %}...{% endset %}, optionally {% set name | filter %}.
    if (s->filter || s->targets.size() != 1) fail(cur(), "expected '=' in set");
    s->kind = StmtKind::SetBlock;
    if (is_op("|")) s->expr = parse_filter_chain(nullptr, cur());
    expect(Tok::BlockEnd, "'%}'");
    parse_body(s->body, {"endset"});
    expect(Tok::BlockEnd, "'%}'");
    return s;
  }

  // macro name(a, b=default) ... endmacro; defaults are expressions evaluated at call time.
  StmtPtr parse_macro(const Token& at) {
    auto s = stmt(StmtKind::Macro, at);
    s->text = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!s->params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam p;
      p.name = expect_name();
      if (is_op("=")) {
        next();
        p.default_value = parse_expression(true);
      }
      s->params.push_back(std::move(p));
    }
    next();
    expect(Tok::BlockEnd, "'%}'");
    parse_body(s->body, {"endmacro"});
    if (cur().type == Tok::Name) next();  // `{% endmacro name %}` is allowed
    expect(Tok::BlockEnd, "'%}'");
    return s;
  }
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace ztvm::jinja
