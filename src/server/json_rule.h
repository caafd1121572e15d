// response_format json_object / json_schema as a rule on tokens: a token may come if its bytes keep
// the reply a prefix of one JSON value the schema allows (text/json_syntax.h; json_object: any
// object); the end of generation only once the value is closed, and then nothing else. Special
// tokens never (they are not JSON text).
#pragma once
#include <memory>

#include "engine/sampling.h"
#include "text/json_syntax.h"
#include "text/tokenizer.h"

namespace ztvm::server {

class JsonRule : public TokenConstraint {
 public:
  JsonRule(const Tokenizer& tok, std::shared_ptr<const JsonSchema> schema)
      : tok_(tok), schema_(std::move(schema)), syntax_(*schema_) {}
  bool allows(int32_t id) const override {
    if (tok_.is_eog(id)) return syntax_.done();
    const std::string& text = tok_.token_text(id);
    if (syntax_.done() || text.empty() || tok_.is_special(id)) return false;
    JsonSyntax trial = syntax_;
    return trial.feed(text);
  }
  void accept(int32_t id) override {
    if (!tok_.is_eog(id)) syntax_.feed(tok_.token_text(id));
  }

 private:
  const Tokenizer& tok_;
  std::shared_ptr<const JsonSchema> schema_;
  JsonSyntax syntax_;
};

}  // namespace ztvm::server
