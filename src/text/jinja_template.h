// A Jinja-subset template engine for chat templates, configured as transformers configures Jinja:
// trim_blocks and lstrip_blocks on, no autoescape, loop controls (break/continue), the
// {% generation %} tag, transformers' tojson, raise_exception() and strftime_now().
//
//   jinja::Template t(source);                       // throws TemplateError "line:col: message"
//   std::string s = t.render(nlohmann::ordered_json{{"messages", msgs}, {"add_generation_prompt", true}});
//
// Undefined names behave like Jinja's default Undefined: they print as "", are falsy and iterate
// as empty, and fail only when used in arithmetic, attribute access or tojson.
//
// Known differences from Python Jinja, all on the lenient side: map/select/selectattr return lists
// (Jinja returns generators, which tojson rejects); unknown filters and tests fail when reached,
// not when the template is compiled; unknown keyword arguments to filters are ignored; `d.items`
// without a call reads the key "items". Not supported: extends/block/include/import, call blocks,
// recursive loops, `%` string formatting, format specs in str.format().
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
