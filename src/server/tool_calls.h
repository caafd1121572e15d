// Tool calls (OpenAI "tools") and response_format for the chat endpoint.
//
// A model writes tool calls in the dialect its chat template taught it; detect_tool_format() reads
// that from the template text. Templates that know no tools get the tools described in the system
// message (tools_system_prompt) and are asked for the Hermes dialect, which is then parsed:
//   kHermes     <tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>     (Qwen3, Hermes)
//   kQwenXml    <tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>
//               (Qwen3-Coder, Qwen3.5)
//   kLlamaJson  {"name": "f", "parameters": {"a": 1}}, the whole reply, maybe after <|python_tag|>,
//               several separated by ';' (Llama 3.x)
//   kInjected   the template renders no tools: the server injects them, the reply is parsed as kHermes
//
// Flow in the server: validate_*() on the request; prepare_tool_prompt() -> messages and tools for
// ChatTemplate::render; generate; parse_reply() or a ToolCallStream over the pieces; tool_calls_json().
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ztvm::server {

enum class ToolFormat { kHermes, kQwenXml, kLlamaJson, kInjected };

ToolFormat detect_tool_format(const std::string& template_source);
const char* tool_format_name(ToolFormat format);  // "hermes", "qwen-xml", "llama-json", "injected"
// Whether the template renders the tools itself (pass them as ChatOptions::tools) or the server must
// describe them in the system message.
bool template_renders_tools(const std::string& template_source);

// The system-message text that describes `tools` (an OpenAI tools array) and asks for Hermes-style
// <tool_call> blocks, for templates without tool support.
std::string tools_system_prompt(const nlohmann::ordered_json& tools);

// What to hand ChatTemplate::render for a request, given its messages, tools (array or null) and
// tool_choice (null means "auto"); all three already validated.
//  - tool_calls[].function.arguments arrive as JSON strings (OpenAI); templates iterate them as
//    mappings, so they become objects. Null content becomes "", text-part arrays become strings.
//  - kInjected: the tools prompt goes into the system message, earlier tool calls become <tool_call>
//    text and role "tool" messages become user turns of <tool_response> blocks.
//  - tool_choice "none" drops the tools; "required" or a named function adds an instruction (a
//    named function also narrows the tools to that one). The model is asked, not forced.
struct ToolPrompt {
  nlohmann::ordered_json messages;       // for ChatTemplate::render
  nlohmann::ordered_json tools;          // for ChatOptions::tools: null unless rendered natively
  bool parse_tool_calls = false;         // whether the reply should be searched for tool calls
};
ToolPrompt prepare_tool_prompt(ToolFormat format, const nlohmann::ordered_json& messages,
                               const nlohmann::ordered_json& tools,
                               const nlohmann::ordered_json& tool_choice);

// Whether a rendered prompt ends inside an open <think> block (Qwen3.5 opens it for the model), so
// the reply starts with reasoning; pass it as ReplyOptions::in_reasoning.
bool prompt_opens_reasoning(const std::string& prompt);

struct ToolCall {
  std::string id;         // "call_" + 24 random letters and digits
  std::string name;
  std::string arguments;  // a JSON object, compact, as OpenAI sends it
};

struct ParsedReply {
  std::string content;    // what remains for message.content (may be empty)
  std::string reasoning;  // the <think> block's text, trimmed; empty when none
  std::vector<ToolCall> tool_calls;
};

struct ReplyOptions {
  bool in_reasoning = false;               // the reply starts inside <think> (prompt_opens_reasoning)
  nlohmann::ordered_json tools = nullptr;  // the request's tools: kQwenXml values of parameters
                                           // declared "type": "string" stay strings
};

// Splits a finished reply. A leading <think>...</think> block becomes `reasoning` (the content after
// it loses its leading whitespace). With tools enabled, well-formed calls are taken out of the
// content and the content loses its trailing whitespace; malformed call text stays in the content.
// Never throws on model output.
ParsedReply parse_reply(ToolFormat format, const std::string& text, bool tools_enabled,
                        const ReplyOptions& opts = {});

// parse_reply for text that arrives in pieces. push() returns what may be shown now: it holds back
// text that could start "<think>", "</think>" or a tool-call opening, trailing whitespace (dropped if
// calls follow), and everything after a tool-call opening. finish() returns the rest and the calls.
// The concatenated pieces equal parse_reply's content and reasoning for the same text.
struct StreamDelta {
  std::string content, reasoning;
};
class ToolCallStream {
 public:
  ToolCallStream(ToolFormat format, bool tools_enabled, ReplyOptions opts = {});
  StreamDelta push(const std::string& piece);
  ParsedReply finish();

 private:
  enum class Phase { kStart, kReasoning, kContent, kCalls };
  // A release channel that can drop leading whitespace and holds trailing whitespace back.
  struct Channel {
    bool strip_leading = false, hold_trailing = false;
    std::string held_ws;
    void emit(std::string text, std::string& out);
  };
  void step(StreamDelta& out);

  ToolFormat format_;
  bool tools_enabled_;
  ReplyOptions opts_;
  Phase phase_;
  std::string pending_;  // text not yet classified
  Channel reasoning_, content_;
  bool content_seen_ = false;  // non-whitespace content was released (kLlamaJson calls must lead)
  bool finished_ = false;
};

// OpenAI message.tool_calls: [{id, type: "function", function: {name, arguments}}]; stream deltas
// also carry "index".
nlohmann::ordered_json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index = false);

// Request validation: each throws std::invalid_argument "FIELD: problem" (e.g. "tools[1].function.name:
// must be a non-empty string"). Null means absent and is accepted.
void validate_tools(const nlohmann::ordered_json& tools);
void validate_tool_choice(const nlohmann::ordered_json& tool_choice, const nlohmann::ordered_json& tools);
void validate_response_format(const nlohmann::ordered_json& response_format);

// A system-message sentence asking for the output response_format wants ("" for text or null);
// without constrained sampling this is a request to the model, not a guarantee.
std::string response_format_instruction(const nlohmann::ordered_json& response_format);

}  // namespace ztvm::server
