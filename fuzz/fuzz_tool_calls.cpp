// The tool-call parser on arbitrary model output, in each dialect (server/tool_calls.h): parse_reply
// on the whole text, and a ToolCallStream fed the same text in pieces, whose concatenated deltas
// must equal parse_reply's content and reasoning and whose calls must be the same (the documented
// contract the streaming API relies on). It never throws on model output.
#include <string>

#include "server/tool_calls.h"

namespace {

const nlohmann::ordered_json& tools() {
  static const auto j = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f",
    "parameters": {"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "number"}}}}}])");
  return j;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ztvm::server;
  if (size < 2) return 0;
  // Byte 0: dialect, tools on/off, starting inside <think>; byte 1: the stream's piece length.
  const auto format = static_cast<ToolFormat>(data[0] % 4);
  const bool tools_enabled = data[0] & 4;
  ReplyOptions opts;
  opts.in_reasoning = data[0] & 8;
  opts.tools = tools();
  const size_t piece = 1 + data[1] % 16;
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);

  ParsedReply whole = parse_reply(format, text, tools_enabled, opts);
  (void)tool_calls_json(whole.tool_calls, true);

  ToolCallStream stream(format, tools_enabled, opts);
  std::string content, reasoning;
  for (size_t at = 0; at < text.size(); at += piece) {
    StreamDelta d = stream.push(text.substr(at, piece));
    content += d.content;
    reasoning += d.reasoning;
  }
  ParsedReply rest = stream.finish();
  content += rest.content;
  reasoning += rest.reasoning;
  if (content != whole.content || reasoning != whole.reasoning) std::abort();
  if (rest.tool_calls.size() != whole.tool_calls.size()) std::abort();
  for (size_t i = 0; i < whole.tool_calls.size(); ++i)  // ids are random: names and arguments must agree
    if (rest.tool_calls[i].name != whole.tool_calls[i].name || rest.tool_calls[i].arguments != whole.tool_calls[i].arguments)
      std::abort();
  return 0;
}
