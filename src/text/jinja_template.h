// A Jinja-subset template engine for chat templates, configured as transformers configures Jinja:
// trim_blocks and lstrip_blocks on, no autoescape, loop controls (break/continue), the
// {% generation %} tag, transformers' tojson, raise_exception() and strftime_now().
//
//   jinja::Template t(source);                       // throws TemplateError "line:col: message"
//   std::string s = t.render(nlohmann::ordered_json{{"messages", msgs}, {"add_generation_prompt", true}});
//
// Undefined names behave like Jinja's default Undefined: they print as "", are falsy and iterate
// as empty, and fail only when used in arithmetic, attribute access or tojson.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "text/jinja_ast.h"
#include "text/jinja_lexer.h"
#include "text/jinja_value.h"

namespace ztvm::jinja {

class Template {
 public:
  explicit Template(const std::string& source, const LexerOptions& opts = {});

  // Variables shadow the built-in globals. Runtime errors throw TemplateError("line:col: ..."),
  // or RaisedError carrying the template's own raise_exception() message.
  std::string render(const Dict& variables) const;
  std::string render(const nlohmann::ordered_json& variables) const;  // a JSON object

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace ztvm::jinja
