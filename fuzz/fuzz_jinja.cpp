// The Jinja engine on arbitrary template source (a model's chat template is data from the model
// file, and `--chat-template FILE` takes any file): lexing, parsing, then rendering a conversation
// with tools, tool calls and multi-part content. Errors must be TemplateError (or the template's
// own raise_exception, RaisedError), never a crash.
#include <nlohmann/json.hpp>

#include "text/chat_template.h"
#include "text/jinja_value.h"

namespace {

const nlohmann::ordered_json& conversation() {
  static const auto j = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}, {"type": "text", "text": " Now."}]},
    {"role": "assistant", "content": "", "reasoning_content": "need a tool",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "n": [1, 2.5, null, true]}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"t\": 21}"},
    {"role": "assistant", "content": "21 \u00b0C <think>x</think>"},
    {"role": "user", "content": "Thanks"}])");
  return j;
}

const nlohmann::ordered_json& tools() {
  static const auto j = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Current weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
    "required": ["city"]}}}])");
  return j;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  try {
    ztvm::ChatTemplate tmpl(source);
    ztvm::ChatOptions opts;
    opts.bos_token = "<s>";
    opts.eos_token = "</s>";
    (void)tmpl.render(conversation(), opts);
    opts.tools = tools();
    opts.add_generation_prompt = false;
    opts.enable_thinking = std::nullopt;
    (void)tmpl.render(conversation(), opts);
  } catch (const ztvm::jinja::TemplateError&) {
  } catch (const ztvm::jinja::RaisedError&) {
  }
  return 0;
}
