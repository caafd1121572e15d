// Chat templates: messages (OpenAI / Hugging Face format) -> the prompt text a model was trained on,
// rendered with the model's own Jinja template exactly as transformers' apply_chat_template does.
//
// Variables a template sees: messages, tools (null when none), documents (null),
// add_generation_prompt, bos_token / eos_token when known, enable_thinking (Qwen-style thinking
// switch: false unless turned on), then ChatOptions::vars, which override all of the above.
//
// Fallback for models without a template (fallback_chat_template()): ChatML, the format llama.cpp
// also falls back to —
//   <|im_start|>{role}\n{content}<|im_end|>\n ... and, with add_generation_prompt, <|im_start|>assistant\n
// Content given as a list of parts contributes the "text" of each part. Tool definitions and tool
// calls are not rendered by the fallback.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "text/jinja_template.h"

namespace ztvm {

struct ChatOptions {
  nlohmann::ordered_json tools = nullptr;            // array of tool schemas, or null for none
  bool add_generation_prompt = true;                 // end with the assistant turn's opening
  std::optional<bool> enable_thinking = false;       // Qwen3-style; nullopt leaves it undefined
  std::optional<std::string> bos_token, eos_token;   // the model's special-token text, when known
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();  // more variables (date_string, ...)
};

// A parsed template, reusable across requests. Throws jinja::TemplateError "chat template: L:C: ..."
// on syntax errors; an empty source means fallback_chat_template().
class ChatTemplate {
 public:
  explicit ChatTemplate(const std::string& source);
  // Messages keep their key order (ordered_json), as tool schemas printed with tojson must; a
  // plain nlohmann::json converts implicitly but arrives with its keys sorted.
  // Throws jinja::TemplateError, or jinja::RaisedError with the template's raise_exception() text.
  std::string render(const nlohmann::ordered_json& messages, const ChatOptions& opts) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const jinja::Template> tmpl_;
};

std::string render_chat(const std::string& template_src, const nlohmann::ordered_json& messages,
                        const ChatOptions& opts);

const std::string& fallback_chat_template();

// The chat template and special-token text a model ships with: GGUF key tokenizer.chat_template
// and tokenizer.ggml.{bos,eos}_token_id; or, for a Hugging Face directory, chat_template.jinja,
// else tokenizer_config.json's chat_template (a string, or a list of {name, template} where
// "default" wins), and its bos_token / eos_token. `source` is empty when the model has none.
struct ModelChatTemplate {
  std::string source;
  std::optional<std::string> bos_token, eos_token;
};
ModelChatTemplate load_model_chat_template(const std::string& model_path);

}  // namespace ztvm
