// Jinja lexer: template source -> flat token stream (text, tag delimiters, expression tokens).
// Whitespace control is applied here, as Jinja's own lexer does: `{%-`/`-%}` strip, and the
// environment settings trim_blocks (drop the newline after a block tag) and lstrip_blocks (drop
// spaces before a block tag on its own line). transformers renders chat templates with both on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ztvm::jinja {

enum class Tok : uint8_t {
  Text,        // literal template text (whitespace control already applied)
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // identifier or keyword (if, for, in, not, and, or, is, true, none, ...)
  String,      // string literal, escapes decoded
  Int,
  Float,
  Op,          // operator or punctuation: + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  End,         // end of template
};

struct Token {
  Tok type;
  std::string text;  // Text/Name/String/Op content
  int64_t int_value = 0;
  double float_value = 0;
  int line = 0, col = 0;  // 1-based, in the template source
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;  // Jinja's default drops one final newline of the source
};

// Throws TemplateError("line:col: ...") on unterminated tags, strings or comments.
std::vector<Token> tokenize(const std::string& source, const LexerOptions& opts = {});

}  // namespace ztvm::jinja
