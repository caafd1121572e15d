// Tool calls for the chat endpoint: dialect detection on the real templates, the messages the server
// renders (tool lists, earlier calls, tool replies), parsing model replies whole and streamed, and
// request validation.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "server/tool_calls.h"
#include "text/chat_template.h"

using namespace ztvm::server;
using ojson = nlohmann::ordered_json;
using ztvm::ChatOptions;
using ztvm::ChatTemplate;

namespace {

const std::string kTemplates = ZTVM_TESTDATA "/chat-templates/";

std::string read_template(const std::string& name) {
  std::ifstream in(kTemplates + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing " << kTemplates + name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TemplateCase {
  const char* file;  // "" for a model without a template (the ChatML fallback)
  ToolFormat format;
};
const TemplateCase kCases[] = {
    {"Qwen-Qwen3-0.6B.jinja", ToolFormat::kHermes},
    {"Qwen3-Coder.jinja", ToolFormat::kQwenXml},
    {"Qwen3.5-4B.jinja", ToolFormat::kQwenXml},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolFormat::kLlamaJson},
    {"microsoft-Phi-3.5-mini-instruct.jinja", ToolFormat::kInjected},
    {"", ToolFormat::kInjected},
};
std::string source_of(const TemplateCase& c) { return *c.file ? read_template(c.file) : ""; }

const ojson kWeatherTool = ojson::parse(R"({
  "type": "function",
  "function": {
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city"]}
  }
})");
const ojson kTimeTool = ojson::parse(R"({"type": "function", "function": {"name": "get_time",
  "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}})");
const ojson kTools = ojson::array({kWeatherTool, kTimeTool});

// A finished tool round as an OpenAI client sends it: arguments as a JSON string, content null.
const ojson kToolRound = ojson::parse(R"([
  {"role": "system", "content": "You are terse."},
  {"role": "user", "content": "Weather in Jerusalem?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": "{\"city\":\"Jerusalem\",\"days\":2}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "Sunny and 23 degrees"}
])");

ChatOptions options_for(const ToolPrompt& p) {
  ChatOptions o;
  o.tools = p.tools;
  o.bos_token = "<s>";
  o.eos_token = "</s>";
  return o;
}

std::string render(const std::string& source, const ToolPrompt& p) {
  return ChatTemplate(source).render(p.messages, options_for(p));
}

// What a client sees of a reply: comparable regardless of the random call ids.
struct Seen {
  std::string content, reasoning;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  bool operator==(const Seen&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Seen& s) {
  os << "content=" << ojson(s.content) << " reasoning=" << ojson(s.reasoning) << " calls=";
  for (auto& [n, a] : s.calls) os << n << a << ";";
  return os;
}
Seen seen(const ParsedReply& r) {
  Seen s{r.content, r.reasoning, {}};
  for (const auto& c : r.tool_calls) s.calls.emplace_back(c.name, c.arguments);
  return s;
}
Seen stream_pieces(ToolFormat f, const std::vector<std::string>& pieces, bool tools,
                   const ReplyOptions& opts) {
  ToolCallStream stream(f, tools, opts);
  Seen s;
  for (const auto& p : pieces) {
    StreamDelta d = stream.push(p);
    s.content += d.content;
    s.reasoning += d.reasoning;
  }
  ParsedReply end = stream.finish();
  s.content += end.content;
  s.reasoning += end.reasoning;
  for (const auto& c : end.tool_calls) s.calls.emplace_back(c.name, c.arguments);
  return s;
}

}  // namespace

// ---- detection ----

TEST(ToolFormat, DetectedFromEachRealTemplate) {
  for (const auto& c : kCases) {
    std::string src = source_of(c);
    EXPECT_EQ(detect_tool_format(src), c.format) << c.file << ": " << tool_format_name(detect_tool_format(src));
    EXPECT_EQ(template_renders_tools(src), c.format != ToolFormat::kInjected) << c.file;
  }
  EXPECT_EQ(detect_tool_format(ztvm::fallback_chat_template()), ToolFormat::kInjected);
}

// The text cues agree with what the templates do: exactly the "native" ones print a tool passed in.
TEST(ToolFormat, NativeMeansTheTemplatePrintsTheTools) {
  ojson messages = ojson::parse(R"([{"role": "user", "content": "hi"}])");
  for (const auto& c : kCases) {
    ChatOptions o;
    o.tools = ojson::array({kWeatherTool});
    std::string prompt = ChatTemplate(source_of(c)).render(messages, o);
    EXPECT_EQ(prompt.find("get_weather") != std::string::npos, template_renders_tools(source_of(c))) << c.file;
  }
}

// ---- the prompt side ----

TEST(ToolPrompt, ToolRoundRendersInEveryTemplate) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(*c.file ? c.file : "fallback");
    ToolPrompt p = prepare_tool_prompt(c.format, kToolRound, kTools, nullptr);
    EXPECT_TRUE(p.parse_tool_calls);
    EXPECT_EQ(p.tools.is_null(), c.format == ToolFormat::kInjected);
    std::string prompt;
    ASSERT_NO_THROW(prompt = render(source_of(c), p));
    EXPECT_NE(prompt.find("get_weather"), std::string::npos) << prompt;  // tool list and earlier call
    EXPECT_NE(prompt.find("get_time"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("Jerusalem"), std::string::npos) << prompt;    // the call's argument
    EXPECT_NE(prompt.find("Sunny and 23 degrees"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("You are terse."), std::string::npos) << prompt;
    // The reply comes after the tool result.
    EXPECT_LT(prompt.find("Sunny and 23 degrees"), prompt.rfind("assistant")) << prompt;
  }
}

TEST(ToolPrompt, EarlierCallsAreWrittenInTheModelsOwnDialect) {
  auto prompt_for = [](const char* file) {
    std::string src = read_template(file);
    return render(src, prepare_tool_prompt(detect_tool_format(src), kToolRound, kTools, nullptr));
  };
  EXPECT_NE(prompt_for("Qwen-Qwen3-0.6B.jinja").find(R"({"name": "get_weather", "arguments": {"city")"),
            std::string::npos);
  EXPECT_NE(prompt_for("Qwen3-Coder.jinja").find("<function=get_weather>\n<parameter=city>\nJerusalem\n</parameter>"),
            std::string::npos);
  EXPECT_NE(prompt_for("Qwen3.5-4B.jinja").find("<parameter=days>\n2\n</parameter>"), std::string::npos);
  EXPECT_NE(prompt_for("meta-llama-Llama-3.2-3B-Instruct.jinja")
                .find(R"({"name": "get_weather", "parameters": {"city": "Jerusalem", "days": 2}})"),
            std::string::npos);
  // Phi-3.5 knows no tools: the server's description and Hermes-style history instead.
  std::string phi = prompt_for("microsoft-Phi-3.5-mini-instruct.jinja");
  EXPECT_NE(phi.find("<|system|>\nYou are terse.\n\n# Tools"), std::string::npos) << phi;
  EXPECT_NE(phi.find(R"(<tool_call>
{"name":"get_weather","arguments":{"city":"Jerusalem","days":2}}
</tool_call>)"), std::string::npos) << phi;
  EXPECT_NE(phi.find("<|user|>\n<tool_response>\nSunny and 23 degrees\n</tool_response>"), std::string::npos) << phi;
}

// Without prepare_tool_prompt, OpenAI-shaped messages break templates that iterate the arguments.
TEST(ToolPrompt, RawOpenAIArgumentsDoNotRenderInXmlTemplates) {
  std::string src = read_template("Qwen3-Coder.jinja");
  ChatOptions o;
  o.tools = kTools;
  std::string raw;
  try {
    raw = ChatTemplate(src).render(kToolRound, o);
  } catch (const std::exception&) {
    raw = "(threw)";
  }
  EXPECT_EQ(raw.find("<parameter=city>\nJerusalem"), std::string::npos);
}

TEST(ToolPrompt, InjectedToolsPromptDescribesEveryTool) {
  std::string s = tools_system_prompt(kTools);
  EXPECT_NE(s.find(R"("name":"get_weather")"), std::string::npos);
  EXPECT_NE(s.find("Current weather in a city"), std::string::npos);
  EXPECT_NE(s.find(R"("name":"get_time")"), std::string::npos);
  EXPECT_NE(s.find("<tool_call>"), std::string::npos);
  // The example call in the prompt is itself a call the Hermes parser accepts.
  size_t a = s.find("<tool_call>\n"), b = s.find("</tool_call>", a);
  ParsedReply r = parse_reply(ToolFormat::kInjected, s.substr(a, b + 12 - a), true);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "function_name");
}

TEST(ToolPrompt, ToolChoice) {
  ojson user = ojson::parse(R"([{"role": "user", "content": "hi"}])");
  ToolPrompt none = prepare_tool_prompt(ToolFormat::kHermes, user, kTools, "none");
  EXPECT_TRUE(none.tools.is_null());
  EXPECT_FALSE(none.parse_tool_calls);
  EXPECT_EQ(none.messages, user);

  ToolPrompt required = prepare_tool_prompt(ToolFormat::kHermes, user, kTools, "required");
  EXPECT_EQ(required.tools.size(), 2u);
  ASSERT_EQ(required.messages.size(), 2u);
  EXPECT_EQ(required.messages[0]["role"], "system");
  EXPECT_NE(required.messages[0]["content"].get<std::string>().find("must call"), std::string::npos);

  ojson named = ojson::parse(R"({"type": "function", "function": {"name": "get_time"}})");
  ToolPrompt one = prepare_tool_prompt(ToolFormat::kInjected, user, kTools, named);
  EXPECT_TRUE(one.tools.is_null());
  std::string sys = one.messages[0]["content"];
  EXPECT_NE(sys.find("get_time"), std::string::npos);
  EXPECT_EQ(sys.find("get_weather"), std::string::npos);  // narrowed to the named tool
  EXPECT_TRUE(one.parse_tool_calls);

  ToolPrompt no_tools = prepare_tool_prompt(ToolFormat::kInjected, user, nullptr, nullptr);
  EXPECT_FALSE(no_tools.parse_tool_calls);
  EXPECT_EQ(no_tools.messages, user);
}

TEST(ToolPrompt, ReasoningOpenedByThePrompt) {
  ojson user = ojson::parse(R"([{"role": "user", "content": "hi"}])");
  ChatOptions think;
  think.enable_thinking = true;
  EXPECT_TRUE(prompt_opens_reasoning(ChatTemplate(read_template("Qwen3.5-4B.jinja")).render(user, think)));
  EXPECT_FALSE(prompt_opens_reasoning(ChatTemplate(read_template("Qwen3.5-4B.jinja")).render(user, {})));
  EXPECT_FALSE(prompt_opens_reasoning(ChatTemplate(read_template("Qwen-Qwen3-0.6B.jinja")).render(user, think)));
}

// ---- parsing replies ----

TEST(ParseReply, Hermes) {
  auto r = parse_reply(ToolFormat::kHermes,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", true);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(r.content, "");
  EXPECT_TRUE(std::regex_match(r.tool_calls[0].id, std::regex("call_[A-Za-z0-9]{24}"))) << r.tool_calls[0].id;

  // Text first, then two calls; arguments given as a JSON string are accepted too.
  r = parse_reply(ToolFormat::kHermes,
                  "Let me check both.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n"
                  "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"zone\\\": \\\"CET\\\"}\"}\n</tool_call>",
                  true);
  EXPECT_EQ(seen(r), (Seen{"Let me check both.", "",
                           {{"get_weather", R"({"city":"Rome"})"}, {"get_time", R"({"zone":"CET"})"}}}));
  EXPECT_NE(r.tool_calls[0].id, r.tool_calls[1].id);
}

TEST(ParseReply, HermesMalformedStaysContent) {
  const std::string broken = "Trying.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>";
  EXPECT_EQ(seen(parse_reply(ToolFormat::kHermes, broken, true)), (Seen{broken, "", {}}));
  const std::string no_name = "<tool_call>{\"arguments\": {}}</tool_call>";
  EXPECT_EQ(seen(parse_reply(ToolFormat::kHermes, no_name, true)), (Seen{no_name, "", {}}));
  // A good call next to a broken one: the good one is taken, the broken one stays.
  auto r = parse_reply(ToolFormat::kHermes,
                       "<tool_call>{\"name\": 5}</tool_call><tool_call>{\"name\": \"get_time\"}</tool_call>", true);
  EXPECT_EQ(seen(r), (Seen{"<tool_call>{\"name\": 5}</tool_call>", "", {{"get_time", "{}"}}}));
  // Cut off before </tool_call> (max_tokens): the complete JSON still counts.
  r = parse_reply(ToolFormat::kHermes, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n", true);
  EXPECT_EQ(seen(r), (Seen{"", "", {{"get_time", "{}"}}}));
}

TEST(ParseReply, ThinkBlockIsReasoning) {
  auto r = parse_reply(ToolFormat::kHermes,
                       "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n"
                       "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
                       true);
  EXPECT_EQ(seen(r), (Seen{"", "The user wants weather.", {{"get_weather", R"({"city":"Oslo"})"}}}));
  // A call written while thinking is not a call.
  r = parse_reply(ToolFormat::kHermes, "<think>I could use <tool_call>{\"name\": \"x\"}</tool_call></think>\n\nNo.", true);
  EXPECT_EQ(seen(r), (Seen{"No.", "I could use <tool_call>{\"name\": \"x\"}</tool_call>", {}}));
  // Qwen3.5 opens <think> in the prompt, so the reply starts inside it.
  ReplyOptions open;
  open.in_reasoning = true;
  r = parse_reply(ToolFormat::kQwenXml, "Easy.\n</think>\n\nHello!", false, open);
  EXPECT_EQ(seen(r), (Seen{"Hello!", "Easy.", {}}));
  // An unclosed block (cut off) is all reasoning.
  EXPECT_EQ(seen(parse_reply(ToolFormat::kHermes, "<think>\nhmm", false)), (Seen{"", "hmm", {}}));
}

TEST(ParseReply, QwenXml) {
  ReplyOptions opts;
  opts.tools = ojson::parse(R"([{"type": "function", "function": {"name": "lookup", "parameters":
      {"type": "object", "properties": {"zip": {"type": "string"}, "n": {"type": "integer"}}}}}])");
  auto r = parse_reply(ToolFormat::kQwenXml,
                       "I will look it up.\n\n<tool_call>\n<function=lookup>\n<parameter=zip>\n12345\n</parameter>\n"
                       "<parameter=n>\n3\n</parameter>\n<parameter=filter>\n{\"open\": true}\n</parameter>\n"
                       "<parameter=note>\nline one\nline two\n</parameter>\n</function>\n</tool_call>\n"
                       "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
                       true, opts);
  // zip is declared a string so stays one; n and filter read as JSON; note is plain text.
  EXPECT_EQ(seen(r), (Seen{"I will look it up.", "",
                           {{"lookup", R"({"zip":"12345","n":3,"filter":{"open":true},"note":"line one\nline two"})"},
                            {"get_time", "{}"}}}));
}

TEST(ParseReply, QwenXmlMalformedStaysContent) {
  for (const std::string bad : {"<tool_call>\n<function=f>\n<parameter=a>\n1\n</function>\n</tool_call>",
                                "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
                                "<tool_call>\n<function=>\n</function>\n</tool_call>",
                                "<tool_call>\n<function=f>\n</function>\ntrailing\n</tool_call>"})
    EXPECT_EQ(seen(parse_reply(ToolFormat::kQwenXml, bad, true)), (Seen{bad, "", {}}));
}

TEST(ParseReply, LlamaJson) {
  auto r = parse_reply(ToolFormat::kLlamaJson, R"({"name": "get_weather", "parameters": {"city": "Lima"}})", true);
  EXPECT_EQ(seen(r), (Seen{"", "", {{"get_weather", R"({"city":"Lima"})"}}}));
  r = parse_reply(ToolFormat::kLlamaJson,
                  "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"a}b\"}}; "
                  "{\"name\": \"get_time\", \"parameters\": {}}",
                  true);
  EXPECT_EQ(seen(r), (Seen{"", "", {{"get_weather", R"({"city":"a}b"})"}, {"get_time", "{}"}}}));
  r = parse_reply(ToolFormat::kLlamaJson, "Checking.<|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}", true);
  EXPECT_EQ(seen(r), (Seen{"Checking.", "", {{"get_time", "{}"}}}));
  // JSON that is not a call, broken JSON, JSON after text, text after the call: all content.
  for (const std::string plain : {R"({"answer": 42})", R"({"name": "get_time", "parameters": {)",
                                  R"(Use {"name": "get_time", "parameters": {}})",
                                  R"({"name": "get_time", "parameters": {}} is what I would call)"})
    EXPECT_EQ(seen(parse_reply(ToolFormat::kLlamaJson, plain, true)), (Seen{plain, "", {}})) << plain;
}

TEST(ParseReply, ToolsDisabledLeavesCallsInContent) {
  const std::string text = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  EXPECT_EQ(seen(parse_reply(ToolFormat::kHermes, text, false)), (Seen{text, "", {}}));
  EXPECT_EQ(parse_reply(ToolFormat::kHermes, "  plain  ", true).content, "  plain  ");  // no calls: untouched
}

// ---- streaming ----

struct StreamCase {
  ToolFormat format;
  std::string text;
  bool tools = true, in_reasoning = false;
};
const std::vector<StreamCase> kStreamCases = {
    {ToolFormat::kHermes, "Hello there, friend.\n"},
    {ToolFormat::kHermes, "Let me check.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n"
                          "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
    {ToolFormat::kHermes, "  <think>\nplan it\n</think>\n\n<tool_call>{\"name\": \"get_time\"}</tool_call>\n"},
    {ToolFormat::kHermes, "<thinking> is not a tag here <tool_ca and < tool_call> neither"},
    {ToolFormat::kHermes, "Broken: <tool_call>{\"name\": }</tool_call> end \n"},
    {ToolFormat::kHermes, "<think>unclosed </thi"},
    {ToolFormat::kHermes, "<thi"},
    {ToolFormat::kHermes, "\n\n"},
    {ToolFormat::kHermes, "<tool_call>{\"name\": \"x\"}</tool_call>", false},
    {ToolFormat::kInjected, "ok <tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>"},
    {ToolFormat::kQwenXml, "Sure.\n\n<tool_call>\n<function=lookup>\n<parameter=q>\nsome text\n</parameter>\n"
                           "<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>"},
    {ToolFormat::kQwenXml, "Weighing it up.\n</think>\n\n<tool_call>\n<function=f>\n</function>\n</tool_call>", true, true},
    {ToolFormat::kLlamaJson, " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lima\"}}; {\"name\": \"g\", \"parameters\": {}}"},
    {ToolFormat::kLlamaJson, "Answer: {\"name\": \"g\", \"parameters\": {}}"},
    {ToolFormat::kLlamaJson, "Looking.<|python_tag|>{\"name\": \"g\", \"parameters\": {}}"},
    {ToolFormat::kLlamaJson, "{\"not\": \"a call\"} trailing "},
};

TEST(ToolCallStream, EverySplitGivesTheWholeTextsResult) {
  for (const auto& c : kStreamCases) {
    SCOPED_TRACE(c.text);
    ReplyOptions opts;
    opts.in_reasoning = c.in_reasoning;
    Seen whole = seen(parse_reply(c.format, c.text, c.tools, opts));
    EXPECT_EQ(stream_pieces(c.format, {c.text}, c.tools, opts), whole);
    for (size_t i = 0; i <= c.text.size(); i++)
      EXPECT_EQ(stream_pieces(c.format, {c.text.substr(0, i), c.text.substr(i)}, c.tools, opts), whole) << "split at " << i;
    std::vector<std::string> bytes;
    for (char ch : c.text) bytes.emplace_back(1, ch);
    EXPECT_EQ(stream_pieces(c.format, bytes, c.tools, opts), whole) << "byte by byte";
  }
}

TEST(ToolCallStream, ShowsTextEarlyAndHoldsOnlyWhatCouldBeACall) {
  ToolCallStream s(ToolFormat::kHermes, true);
  EXPECT_EQ(s.push("Hello world").content, "Hello world");
  EXPECT_EQ(s.push(", and <tool").content, ", and");  // " <tool" may begin a call
  EXPECT_EQ(s.push("box> more").content, " <toolbox> more");
  EXPECT_EQ(s.push("\n<tool_call>{\"name\": \"get_time\"}").content, "");
  EXPECT_EQ(s.push("</tool_call> trailing").content, "");  // after a call everything waits
  ParsedReply end = s.finish();
  EXPECT_EQ(end.content, "\n trailing");  // the text around the call, as parse_reply gives it
  ASSERT_EQ(end.tool_calls.size(), 1u);
  EXPECT_EQ(end.tool_calls[0].name, "get_time");
}

TEST(ToolCallStream, ReasoningIsStreamedApart) {
  ToolCallStream s(ToolFormat::kHermes, false);
  EXPECT_EQ(s.push("<thi").reasoning, "");
  StreamDelta d = s.push("nk>\nStep one.");
  EXPECT_EQ(d.reasoning, "Step one.");
  EXPECT_EQ(d.content, "");
  d = s.push("\n</think>\n\nAnswer");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Answer");
}

TEST(ToolCallStream, ToolsDisabledPassesStraightThrough) {
  ToolCallStream s(ToolFormat::kHermes, false);
  EXPECT_EQ(s.push("And God said ").content, "And God said ");
  EXPECT_EQ(s.push("<tool_call>").content, "<tool_call>");
  ParsedReply end = s.finish();
  EXPECT_EQ(end.content, "");
  EXPECT_TRUE(end.tool_calls.empty());
}

// ---- output shape ----

TEST(ToolCallsJson, OpenAIShape) {
  std::vector<ToolCall> calls = {{"call_a", "f", "{}"}, {"call_b", "g", R"({"x":1})"}};
  ojson j = tool_calls_json(calls);
  EXPECT_EQ(j, ojson::parse(R"([{"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
      {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{\"x\":1}"}}])"));
  EXPECT_EQ(tool_calls_json(calls, true)[1]["index"], 1);
}

// ---- validation ----

void expect_rejected(const std::function<void()>& f, const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected an error naming " << field;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(field + ":", 0), 0u) << e.what();
  }
}

TEST(Validate, Tools) {
  EXPECT_NO_THROW(validate_tools(kTools));
  EXPECT_NO_THROW(validate_tools(nullptr));
  EXPECT_NO_THROW(validate_tools(ojson::array()));
  EXPECT_NO_THROW(validate_tools(ojson::parse(R"([{"type": "function", "function": {"name": "f"}}])")));
  expect_rejected([] { validate_tools("get_weather"); }, "tools");
  expect_rejected([] { validate_tools(ojson::parse(R"([{"type": "retrieval", "function": {"name": "f"}}])")); },
                  "tools[0].type");
  expect_rejected([] { validate_tools(ojson::parse(R"([{"function": {"name": "f"}}])")); }, "tools[0].type");
  expect_rejected([] { validate_tools(ojson::parse(R"([{"type": "function"}])")); }, "tools[0].function");
  auto bad_fn = [](const char* fn) { return ojson::array({{{"type", "function"}, {"function", ojson::parse(fn)}}}); };
  expect_rejected([&] { validate_tools(ojson::array({kWeatherTool, bad_fn(R"({"name": ""})")[0]})); },
                  "tools[1].function.name");
  expect_rejected([&] { validate_tools(bad_fn(R"({"description": "x"})")); }, "tools[0].function.name");
  expect_rejected([&] { validate_tools(bad_fn(R"({"name": 3})")); }, "tools[0].function.name");
  expect_rejected([&] { validate_tools(bad_fn(R"({"name": "f", "parameters": "none"})")); },
                  "tools[0].function.parameters");
  expect_rejected([&] { validate_tools(bad_fn(R"({"name": "f", "description": 1})")); },
                  "tools[0].function.description");
  expect_rejected([] { validate_tools(ojson::array({kTimeTool, kTimeTool})); }, "tools[1].function.name");
}

TEST(Validate, ToolChoice) {
  for (const char* s : {"none", "auto", "required"}) EXPECT_NO_THROW(validate_tool_choice(s, kTools)) << s;
  EXPECT_NO_THROW(validate_tool_choice(nullptr, nullptr));
  EXPECT_NO_THROW(validate_tool_choice("auto", nullptr));
  EXPECT_NO_THROW(validate_tool_choice(ojson::parse(R"({"type": "function", "function": {"name": "get_time"}})"), kTools));
  expect_rejected([] { validate_tool_choice("always", kTools); }, "tool_choice");
  expect_rejected([] { validate_tool_choice("required", nullptr); }, "tool_choice");
  expect_rejected([] { validate_tool_choice(3, kTools); }, "tool_choice");
  expect_rejected([] { validate_tool_choice(ojson::parse(R"({"type": "function", "function": {"name": "nope"}})"), kTools); },
                  "tool_choice.function.name");
  expect_rejected([] { validate_tool_choice(ojson::parse(R"({"type": "function"})"), kTools); }, "tool_choice.function");
  expect_rejected([] { validate_tool_choice(ojson::parse(R"({"type": "tool", "function": {"name": "get_time"}})"), kTools); },
                  "tool_choice.type");
}

TEST(Validate, ResponseFormat) {
  for (const char* ok : {R"({"type": "text"})", R"({"type": "json_object"})",
                         R"({"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}, "strict": true}})"})
    EXPECT_NO_THROW(validate_response_format(ojson::parse(ok))) << ok;
  EXPECT_NO_THROW(validate_response_format(nullptr));
  std::vector<std::pair<const char*, const char*>> bad = {
      {R"("json")", "response_format"},
      {R"({})", "response_format.type"},
      {R"({"type": "yaml"})", "response_format.type"},
      {R"({"type": "json_schema"})", "response_format.json_schema"},
      {R"({"type": "json_schema", "json_schema": {"schema": {}}})", "response_format.json_schema.name"},
      {R"({"type": "json_schema", "json_schema": {"name": "r"}})", "response_format.json_schema.schema"},
      {R"({"type": "json_schema", "json_schema": {"name": "r", "schema": "x"}})", "response_format.json_schema.schema"},
  };
  for (auto& [body, field] : bad) expect_rejected([&] { validate_response_format(ojson::parse(body)); }, field);
}

TEST(Validate, ResponseFormatInstruction) {
  EXPECT_EQ(response_format_instruction(ojson::parse(R"({"type": "text"})")), "");
  EXPECT_EQ(response_format_instruction(nullptr), "");
  EXPECT_NE(response_format_instruction(ojson::parse(R"({"type": "json_object"})")).find("JSON object"), std::string::npos);
  std::string s = response_format_instruction(ojson::parse(
      R"({"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object", "required": ["zeta", "alpha"]}}})"));
  EXPECT_NE(s.find(R"({"type":"object","required":["zeta","alpha"]})"), std::string::npos) << s;
}
