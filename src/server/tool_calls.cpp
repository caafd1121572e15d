// Tool-call dialects: detection from the chat template, the prompt side (messages the templates can
// render) and the reply side (parse_reply, ToolCallStream). Request validation is in
// tool_calls_validate.cpp.
#include "server/tool_calls.h"

#include <optional>
#include <random>
#include <string_view>

namespace ztvm::server {
namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t npos = std::string::npos;
constexpr const char* kWs = " \t\r\n";
constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";
constexpr std::string_view kCallOpen = "<tool_call>", kCallClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kFunctionOpen = "<function=", kFunctionClose = "</function>";
constexpr std::string_view kParamOpen = "<parameter=", kParamClose = "</parameter>";

bool contains(const std::string& s, std::string_view needle) { return s.find(needle) != npos; }
bool at(const std::string& s, size_t i, std::string_view word) { return s.compare(i, word.size(), word) == 0; }

std::string ltrim(const std::string& s) {
  size_t p = s.find_first_not_of(kWs);
  return p == npos ? "" : s.substr(p);
}
std::string rtrim(const std::string& s) {
  size_t p = s.find_last_not_of(kWs);
  return p == npos ? "" : s.substr(0, p + 1);
}
std::string trim(const std::string& s) { return ltrim(rtrim(s)); }

// Length of the longest tail of `text` that is a proper prefix of `marker`: text to hold back.
size_t partial_suffix(const std::string& text, std::string_view marker) {
  for (size_t n = std::min(marker.size() - 1, text.size()); n > 0; n--)
    if (text.compare(text.size() - n, n, marker.data(), n) == 0) return n;
  return 0;
}

// Model text may hold broken UTF-8; replacing it keeps dump() from throwing.
std::string compact(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string new_call_id() {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlnum) - 2);
  std::string id = "call_";
  for (int i = 0; i < 24; i++) id += kAlnum[pick(rng)];
  return id;
}

// A call's arguments as an object: given as one, as a string holding one (OpenAI), or absent.
std::optional<ojson> arguments_object(const ojson* args) {
  if (!args || args->is_null()) return ojson::object();
  if (args->is_object()) return *args;
  if (args->is_string()) {
    ojson parsed = ojson::parse(args->get_ref<const std::string&>(), nullptr, false);
    if (parsed.is_object()) return parsed;
  }
  return std::nullopt;
}

// {"name": ..., "arguments" or "parameters": {...}} -> a call; anything else -> nothing.
std::optional<ToolCall> call_from_json(const ojson& j) {
  if (!j.is_object()) return std::nullopt;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return std::nullopt;
  const ojson* args = nullptr;
  if (auto a = j.find("arguments"); a != j.end()) args = &*a;
  else if (auto p = j.find("parameters"); p != j.end()) args = &*p;
  auto obj = arguments_object(args);
  if (!obj) return std::nullopt;
  return ToolCall{new_call_id(), name->get<std::string>(), compact(*obj)};
}

// The JSON-schema properties the request declared for function `name`, or null.
const ojson* declared_properties(const ojson& tools, const std::string& name) {
  if (!tools.is_array()) return nullptr;
  for (const auto& t : tools) {
    const ojson* fn = t.is_object() && t.contains("function") ? &t["function"] : &t;
    if (!fn->is_object() || fn->value("name", "") != name) continue;
    auto params = fn->find("parameters");
    if (params == fn->end() || !params->is_object()) return nullptr;
    auto props = params->find("properties");
    return props != params->end() && props->is_object() ? &*props : nullptr;
  }
  return nullptr;
}

bool declares_string(const ojson* props, const std::string& param) {
  if (!props || !props->contains(param)) return false;
  const ojson& schema = (*props)[param];
  if (!schema.is_object() || !schema.contains("type")) return false;
  const ojson& type = schema["type"];
  if (type.is_array())
    for (const auto& t : type)
      if (t == "string") return true;
  return type == "string";
}

// The inside of a kQwenXml block: <function=NAME> (<parameter=P>\nVALUE\n</parameter>)* </function>
std::optional<ToolCall> parse_xml_call(const std::string& inner, const ojson& tools) {
  size_t i = inner.find_first_not_of(kWs);
  if (i == npos || !at(inner, i, kFunctionOpen)) return std::nullopt;
  size_t gt = inner.find('>', i);
  if (gt == npos) return std::nullopt;
  std::string name = trim(inner.substr(i + kFunctionOpen.size(), gt - i - kFunctionOpen.size()));
  if (name.empty() || name.find_first_of(kWs) != npos) return std::nullopt;
  const ojson* props = declared_properties(tools, name);
  ojson args = ojson::object();
  for (i = gt + 1;;) {
    i = inner.find_first_not_of(kWs, i);
    if (i == npos) return std::nullopt;  // no </function>
    if (at(inner, i, kFunctionClose)) break;
    if (!at(inner, i, kParamOpen)) return std::nullopt;
    gt = inner.find('>', i);
    size_t end = gt == npos ? npos : inner.find(kParamClose, gt);
    if (end == npos) return std::nullopt;
    std::string param = trim(inner.substr(i + kParamOpen.size(), gt - i - kParamOpen.size()));
    if (param.empty()) return std::nullopt;
    // The templates write "\n" + value + "\n"; the value itself may span lines.
    std::string value = inner.substr(gt + 1, end - gt - 1);
    if (!value.empty() && value.front() == '\n') value.erase(0, 1);
    if (!value.empty() && value.back() == '\n') value.pop_back();
    // Values that read as JSON are JSON (numbers, objects...), unless the schema says "string".
    ojson parsed = declares_string(props, param) ? ojson(ojson::value_t::discarded)
                                                 : ojson::parse(value, nullptr, false);
    args[param] = parsed.is_discarded() ? ojson(value) : parsed;
    i = end + kParamClose.size();
  }
  if (inner.find_first_not_of(kWs, i + kFunctionClose.size()) != npos) return std::nullopt;
  return ToolCall{new_call_id(), name, compact(args)};
}

// <tool_call> blocks, left to right. A block ends at </tool_call>, or unclosed at the next opening or
// the end of the text (generation cut short); blocks that do not parse stay in the content verbatim.
void parse_tagged(ToolFormat format, const std::string& text, const ojson& tools, ParsedReply& out) {
  for (size_t i = 0; i < text.size();) {
    size_t open = text.find(kCallOpen, i);
    if (open == npos) {
      out.content += text.substr(i);
      break;
    }
    out.content += text.substr(i, open - i);
    size_t body = open + kCallOpen.size();
    size_t close = text.find(kCallClose, body), next = text.find(kCallOpen, body);
    bool closed = close != npos && close < next;
    size_t body_end = closed ? close : std::min(next, text.size());
    size_t block_end = closed ? close + kCallClose.size() : body_end;
    std::string inner = text.substr(body, body_end - body);
    auto call = format == ToolFormat::kQwenXml ? parse_xml_call(inner, tools)
                                               : call_from_json(ojson::parse(inner, nullptr, false));
    if (call) out.tool_calls.push_back(*call);
    else out.content += text.substr(open, block_end - open);
    i = block_end;
  }
}

// Index just past the '}' that closes the object opening at text[start], or npos.
size_t json_object_end(const std::string& text, size_t start) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = start; i < text.size(); i++) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return npos;
}

// kLlamaJson: [<|python_tag|>] {call} [; {call}]* and nothing else, or no calls at all.
bool parse_llama(const std::string& text, ParsedReply& out) {
  size_t i = at(text, 0, kPythonTag) ? kPythonTag.size() : 0;
  std::vector<ToolCall> calls;
  while ((i = text.find_first_not_of(kWs, i)) != npos) {
    size_t end = text[i] == '{' ? json_object_end(text, i) : npos;
    if (end == npos) return false;
    auto call = call_from_json(ojson::parse(text.substr(i, end - i), nullptr, false));
    if (!call) return false;
    calls.push_back(*call);
    i = text.find_first_not_of(kWs, end);
    if (i == npos) break;
    if (text[i++] != ';') return false;
  }
  if (calls.empty()) return false;
  for (auto& c : calls) out.tool_calls.push_back(std::move(c));
  return true;
}

// Where tool calls begin in reply content, or npos. Llama's bare JSON counts only at the start, so
// that a reply quoting JSON later on is not held back as a call.
size_t first_call_opening(ToolFormat format, const std::string& content) {
  if (format != ToolFormat::kLlamaJson) return content.find(kCallOpen);
  size_t p = content.find_first_not_of(kWs);
  if (p != npos && content[p] == '{') return p;
  return content.find(kPythonTag);
}

// The content from the first call opening on: its calls go to out.tool_calls, the rest to content.
void parse_calls_section(ToolFormat format, const std::string& section, const ojson& tools,
                         ParsedReply& out) {
  if (format != ToolFormat::kLlamaJson) parse_tagged(format, section, tools, out);
  else if (!parse_llama(section, out)) out.content += section;
}

std::string content_text(const ojson& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.value("type", "text") == "text") text += part.value("text", "");
  return text;
}

// A history tool call with its arguments as an object, as the templates iterate them.
ojson template_tool_call(const ojson& call) {
  ojson c = call;
  if (c.is_object() && c.contains("function") && c["function"].is_object()) {
    ojson& fn = c["function"];
    if (auto args = arguments_object(fn.contains("arguments") ? &fn["arguments"] : nullptr))
      fn["arguments"] = *args;
  }
  return c;
}

// kInjected history: the call written the way tools_system_prompt() asks the model to write it.
std::string hermes_text(const ojson& call) {
  ojson fn = call.value("function", ojson::object());
  ojson shown = ojson::object();
  shown["name"] = fn.value("name", "");
  shown["arguments"] = fn.value("arguments", ojson::object());
  return "<tool_call>\n" + compact(shown) + "\n</tool_call>";
}

void add_to_system(ojson& messages, const std::string& text) {
  if (!messages.empty() && messages[0].value("role", "") == "system") {
    std::string old = messages[0].value("content", "");
    messages[0]["content"] = old.empty() ? text : old + "\n\n" + text;
  } else {
    ojson sys = ojson::object();
    sys["role"] = "system";
    sys["content"] = text;
    messages.insert(messages.begin(), sys);
  }
}

}  // namespace

ToolFormat detect_tool_format(const std::string& src) {
  if (!contains(src, "tools")) return ToolFormat::kInjected;
  // Qwen3-Coder and Qwen3.5 show the model "<function=example_function_name>" inside <tool_call>.
  if (contains(src, kFunctionOpen)) return ToolFormat::kQwenXml;
  // Hermes, Qwen2.5, Qwen3: a {"name", "arguments"} object inside <tool_call></tool_call>.
  if (contains(src, kCallOpen)) return ToolFormat::kHermes;
  // Llama 3.x: 'Respond in the format {"name": function name, "parameters": dictionary ...}'.
  if (contains(src, kPythonTag) || (contains(src, "{\"name\"") && contains(src, "\"parameters\"")))
    return ToolFormat::kLlamaJson;
  return ToolFormat::kInjected;
}

const char* tool_format_name(ToolFormat format) {
  switch (format) {
    case ToolFormat::kHermes: return "hermes";
    case ToolFormat::kQwenXml: return "qwen-xml";
    case ToolFormat::kLlamaJson: return "llama-json";
    case ToolFormat::kInjected: return "injected";
  }
  return "?";
}

bool template_renders_tools(const std::string& template_source) {
  return detect_tool_format(template_source) != ToolFormat::kInjected;
}

std::string tools_system_prompt(const ojson& tools) {
  std::string s =
      "# Tools\n\nYou can call the functions below. Each is described by a JSON schema on its own "
      "line:\n<tools>";
  for (const auto& t : tools) s += "\n" + compact(t.is_object() && t.contains("function") ? t["function"] : t);
  s += "\n</tools>\n\n"
       "To call a function, reply with a JSON object giving its name and arguments inside "
       "<tool_call></tool_call> tags, one block per call:\n<tool_call>\n"
       "{\"name\": \"function_name\", \"arguments\": {\"argument_name\": \"value\"}}\n</tool_call>\n"
       "Write nothing after the last block. When no function is needed, answer directly.";
  return s;
}

ToolPrompt prepare_tool_prompt(ToolFormat format, const ojson& messages, const ojson& tools,
                               const ojson& tool_choice) {
  ojson active = tools.is_array() && !tools.empty() ? tools : ojson();
  std::string instruction;
  if (tool_choice == "none") {
    active = nullptr;
  } else if (active.is_array() && tool_choice == "required") {
    instruction = "You must call at least one of the functions in this reply.";
  } else if (active.is_array() && tool_choice.is_object()) {
    std::string name = tool_choice["function"]["name"].get<std::string>();
    ojson only = ojson::array();
    for (const auto& t : tools)
      if (t["function"]["name"] == name) only.push_back(t);
    active = only;
    instruction = "You must call the function " + name + " in this reply.";
  }
  bool inject = format == ToolFormat::kInjected;

  ojson out = ojson::array();
  bool prev_tool = false;  // consecutive tool results share one user turn
  for (const auto& m : messages) {
    ojson msg = m;
    std::string role = msg.value("role", "");
    msg["content"] = content_text(msg.value("content", ojson()));
    if (role == "tool" && inject) {
      std::string block = "<tool_response>\n" + msg["content"].get<std::string>() + "\n</tool_response>";
      if (prev_tool) {
        out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + block;
      } else {
        ojson user = ojson::object();
        user["role"] = "user";
        user["content"] = block;
        out.push_back(user);
      }
      prev_tool = true;
      continue;
    }
    prev_tool = false;
    if (role == "assistant") {
      ojson calls = ojson::array();
      if (msg.contains("tool_calls") && msg["tool_calls"].is_array())
        for (const auto& c : msg["tool_calls"]) calls.push_back(template_tool_call(c));
      msg.erase("tool_calls");  // Llama's template treats any tool_calls key, even [], as calls
      if (!calls.empty() && inject) {
        std::string text = msg["content"].get<std::string>();
        for (const auto& c : calls) text += (text.empty() ? "" : "\n") + hermes_text(c);
        msg["content"] = text;
      } else if (!calls.empty()) {
        msg["tool_calls"] = calls;
      }
    }
    out.push_back(msg);
  }

  if (inject && active.is_array())
    add_to_system(out, tools_system_prompt(active) + (instruction.empty() ? "" : "\n\n" + instruction));
  else if (!instruction.empty())
    add_to_system(out, instruction);

  ToolPrompt p;
  p.messages = std::move(out);
  p.tools = inject ? ojson() : active;
  p.parse_tool_calls = active.is_array();
  return p;
}

bool prompt_opens_reasoning(const std::string& prompt) {
  std::string end = rtrim(prompt);
  return end.size() >= kThinkOpen.size() && at(end, end.size() - kThinkOpen.size(), kThinkOpen);
}

ParsedReply parse_reply(ToolFormat format, const std::string& text, bool tools_enabled,
                        const ReplyOptions& opts) {
  ParsedReply out;
  std::string content = text;
  size_t p = text.find_first_not_of(kWs);
  bool think = opts.in_reasoning || (p != npos && at(text, p, kThinkOpen));
  if (think) {
    size_t start = opts.in_reasoning ? 0 : p + kThinkOpen.size();
    size_t close = text.find(kThinkClose, start);
    out.reasoning = trim(text.substr(start, close == npos ? npos : close - start));
    content = close == npos ? "" : ltrim(text.substr(close + kThinkClose.size()));
  }
  size_t open = tools_enabled ? first_call_opening(format, content) : npos;
  if (open == npos) {
    out.content = std::move(content);
    return out;
  }
  out.content = content.substr(0, open);
  parse_calls_section(format, content.substr(open), opts.tools, out);
  if (!out.tool_calls.empty()) out.content = rtrim(out.content);
  return out;
}

void ToolCallStream::Channel::emit(std::string text, std::string& out) {
  if (strip_leading) {
    size_t p = text.find_first_not_of(kWs);
    if (p == npos) return;
    text.erase(0, p);
    strip_leading = false;
  }
  if (!hold_trailing) {
    out += text;
    return;
  }
  text.insert(0, held_ws);
  size_t end = text.find_last_not_of(kWs);
  held_ws = end == npos ? text : text.substr(end + 1);
  if (end != npos) out.append(text, 0, end + 1);
}

ToolCallStream::ToolCallStream(ToolFormat format, bool tools_enabled, ReplyOptions opts)
    : format_(format), tools_enabled_(tools_enabled), opts_(std::move(opts)),
      phase_(opts_.in_reasoning ? Phase::kReasoning : Phase::kStart) {
  reasoning_.strip_leading = reasoning_.hold_trailing = true;  // reasoning is reported trimmed
  content_.hold_trailing = tools_enabled;  // whitespace before calls is dropped
}

void ToolCallStream::step(StreamDelta& out) {
  for (;;) {
    if (phase_ == Phase::kStart) {
      size_t p = pending_.find_first_not_of(kWs);
      if (p == npos) return;
      std::string_view rest = std::string_view(pending_).substr(p);
      if (rest.starts_with(kThinkOpen)) {
        pending_.erase(0, p + kThinkOpen.size());
        phase_ = Phase::kReasoning;
      } else if (kThinkOpen.starts_with(rest)) {
        return;  // may still become <think>
      } else {
        phase_ = Phase::kContent;
      }
    } else if (phase_ == Phase::kReasoning) {
      size_t close = pending_.find(kThinkClose);
      if (close == npos) {
        size_t keep = partial_suffix(pending_, kThinkClose);
        reasoning_.emit(pending_.substr(0, pending_.size() - keep), out.reasoning);
        pending_.erase(0, pending_.size() - keep);
        return;
      }
      reasoning_.emit(pending_.substr(0, close), out.reasoning);
      reasoning_.held_ws.clear();
      pending_.erase(0, close + kThinkClose.size());
      phase_ = Phase::kContent;
      content_.strip_leading = true;
    } else if (phase_ == Phase::kContent) {
      if (!tools_enabled_) {
        content_.emit(std::move(pending_), out.content);
        pending_.clear();
        return;
      }
      size_t open = npos;
      if (format_ == ToolFormat::kLlamaJson && !content_seen_) {
        size_t p = pending_.find_first_not_of(kWs);
        if (p != npos && pending_[p] == '{') open = p;
      }
      std::string_view marker = format_ == ToolFormat::kLlamaJson ? kPythonTag : kCallOpen;
      if (open == npos) open = pending_.find(marker);
      size_t release = open != npos ? open : pending_.size() - partial_suffix(pending_, marker);
      std::string shown = pending_.substr(0, release);
      if (shown.find_first_not_of(kWs) != npos) content_seen_ = true;
      content_.emit(std::move(shown), out.content);
      pending_.erase(0, release);
      if (open == npos) return;
      phase_ = Phase::kCalls;
    } else {
      return;  // kCalls: everything waits for finish()
    }
  }
}

StreamDelta ToolCallStream::push(const std::string& piece) {
  StreamDelta out;
  if (finished_) return out;
  pending_ += piece;
  step(out);
  return out;
}

ParsedReply ToolCallStream::finish() {
  ParsedReply r;
  if (finished_) return r;
  finished_ = true;
  StreamDelta d;
  if (phase_ == Phase::kStart) phase_ = Phase::kContent;  // too short to have been <think>
  step(d);
  if (phase_ == Phase::kReasoning) {
    reasoning_.emit(pending_, d.reasoning);  // an unclosed block: all of it is reasoning
  } else if (phase_ == Phase::kContent) {
    content_.emit(pending_, d.content);
    d.content += content_.held_ws;
  } else if (phase_ == Phase::kCalls) {
    ParsedReply section;
    parse_calls_section(format_, pending_, opts_.tools, section);
    std::string rest = content_.held_ws + section.content;
    d.content += section.tool_calls.empty() ? rest : rtrim(rest);
    r.tool_calls = std::move(section.tool_calls);
  }
  pending_.clear();
  r.content = std::move(d.content);
  r.reasoning = std::move(d.reasoning);
  return r;
}

ojson tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  ojson out = ojson::array();
  for (size_t i = 0; i < calls.size(); i++) {
    ojson c = ojson::object();
    if (with_index) c["index"] = i;
    c["id"] = calls[i].id;
    c["type"] = "function";
    c["function"]["name"] = calls[i].name;
    c["function"]["arguments"] = calls[i].arguments;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ztvm::server
