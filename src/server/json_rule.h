// response_format json_object / json_schema as a rule on tokens: a token may come if its bytes keep
// the reply a prefix of one JSON object (text/json_syntax.h); the end of generation only once the
// object is closed, and then nothing else. Special tokens never (they are not JSON text).
#pragma once
#include "engine/sampling.h"
#include "text/json_syntax.h"
#include "text/tokenizer.h"

namespace ztvm::server {

class JsonRule : public TokenConstraint {
 public:
  explicit JsonRule(const Tokenizer& tok) : tok_(tok) {}
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
  JsonSyntax syntax_;
};

}  // namespace ztvm::server
