// The request-to-prompt path of /v1/chat/completions and Ollama's /api/chat: the body's messages,
// tools and response_format checked, then rendered with the model's chat template and tokenized.
// Free of the HTTP server and the engine, so tests and the fuzzer (fuzz/) drive it directly.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/openai.h"
#include "server/tool_calls.h"
#include "text/chat_template.h"
#include "text/json_schema.h"
#include "text/tokenizer.h"

namespace ztvm::server {

// A chat request's prompt text and how to read the reply.
struct ChatPrompt {
  std::string prompt;
  ToolFormat format = ToolFormat::kHermes;
  bool tools_enabled = false;
  std::shared_ptr<const JsonSchema> json_output;  // response_format json_object / json_schema: tokens kept to it
  ReplyOptions reply;
};

// Throws ApiError (400, naming the field) for anything the client got wrong.
ChatPrompt render_chat_prompt(const json& body, const ChatTemplate& tmpl, const ModelChatTemplate& tmpl_src);
// The prompt's tokens; BOS is added unless the template wrote the BOS text itself.
std::vector<int32_t> encode_chat(const Tokenizer& tok, const ModelChatTemplate& tmpl_src, const std::string& prompt);

// std::invalid_argument "FIELD: problem" from the tool validators -> a 400 naming the field.
ApiError field_error(const std::invalid_argument& e);
// What a validated response_format holds the reply to: nothing (text), any object, or a schema.
std::shared_ptr<const JsonSchema> json_rule_schema(const json& format);

}  // namespace ztvm::server
