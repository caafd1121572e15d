// A chat request's body -> the prompt text (through the model's template) and how to read the reply.
#include "server/chat_prompt.h"

namespace ztvm::server {

ApiError field_error(const std::invalid_argument& e) {
  std::string msg = e.what();
  return ApiError(400, msg, "invalid_request_error", msg.substr(0, msg.find(':')));
}

std::shared_ptr<const JsonSchema> json_rule_schema(const json& format) {
  const std::string type = format.is_object() ? format.value("type", "text") : "text";
  if (type == "json_object") return std::make_shared<JsonSchema>();
  if (type != "json_schema") return nullptr;
  try {
    return std::make_shared<JsonSchema>(JsonSchema::compile(nlohmann::json(format["json_schema"]["schema"])));
  } catch (const std::invalid_argument& e) {
    throw field_error(e);
  }
}

ChatPrompt render_chat_prompt(const json& b, const ChatTemplate& tmpl, const ModelChatTemplate& tmpl_src) {
  if (!b.contains("messages")) throw ApiError(400, "'messages' is required", "invalid_request_error", "messages");
  json messages = normalize_messages(b["messages"]);
  const json tools = b.contains("tools") ? b["tools"] : json(), choice = b.contains("tool_choice") ? b["tool_choice"] : json();
  const json format = b.contains("response_format") ? b["response_format"] : json();
  try {
    validate_tools(nlohmann::json(tools));
    validate_tool_choice(nlohmann::json(choice), nlohmann::json(tools));
    validate_response_format(nlohmann::json(format));
  } catch (const std::invalid_argument& e) {
    throw field_error(e);
  }
  ChatPrompt cp;
  cp.format = detect_tool_format(tmpl.source());
  ToolPrompt tp = prepare_tool_prompt(cp.format, messages, tools, choice);
  cp.tools_enabled = tp.parse_tool_calls;
  cp.reply.tools = tools;
  // A JSON response format is asked for in the system message (the schema is not enforced), and the
  // reply is kept to JSON syntax token by token (JsonRule) unless tools may be called instead.
  if (!cp.tools_enabled) cp.json_output = json_rule_schema(format);
  if (std::string ask = response_format_instruction(nlohmann::json(format)); !ask.empty()) {
    json& msgs = tp.messages;
    if (!msgs.empty() && msgs[0].value("role", "") == "system")
      msgs[0]["content"] = msgs[0]["content"].get<std::string>() + "\n\n" + ask;
    else
      msgs.insert(msgs.begin(), json{{"role", "system"}, {"content", ask}});
  }
  ChatOptions opts;
  opts.tools = tp.tools;
  opts.bos_token = tmpl_src.bos_token;
  opts.eos_token = tmpl_src.eos_token;
  if (auto kw = b.find("chat_template_kwargs"); kw != b.end() && kw->is_object()) {
    for (auto& [k, v] : kw->items()) opts.vars[k] = v;
    if (kw->contains("enable_thinking") && (*kw)["enable_thinking"].is_boolean()) opts.enable_thinking = (*kw)["enable_thinking"].get<bool>();
  }
  try {
    cp.prompt = tmpl.render(tp.messages, opts);
  } catch (const jinja::RaisedError& e) {
    // The template itself refuses the conversation (e.g. roles that do not alternate).
    throw ApiError(400, std::string("the chat template rejected the messages: ") + e.what(), "invalid_request_error", "messages");
  } catch (const jinja::TemplateError& e) {
    // The request's values are not of the shape the template reads (fuzz_chat_request: a tool's
    // parameters given as a string, which the template iterates as a mapping).
    throw ApiError(400, std::string("the chat template cannot render this request: ") + e.what(), "invalid_request_error");
  }
  cp.reply.in_reasoning = !cp.json_output && prompt_opens_reasoning(cp.prompt);  // JSON leaves no room to think
  return cp;
}

std::vector<int32_t> encode_chat(const Tokenizer& tok, const ModelChatTemplate& tmpl_src, const std::string& prompt) {
  // Templates that write the BOS text themselves must not get a second BOS from the tokenizer.
  const auto& bos = tmpl_src.bos_token;
  const bool has_bos = bos && !bos->empty() && prompt.rfind(*bos, 0) == 0;
  return tok.encode(prompt, /*add_special=*/!has_bos, /*parse_special=*/true);
}

}  // namespace ztvm::server
