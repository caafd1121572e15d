// Jinja interpreter and chat templates. Three layers:
//  1. small semantics checks, each the documented Jinja2 / Python result (the whitespace cases are
//     the examples from Jinja's "Whitespace Control" docs);
//  2. every real template in testdata/chat-templates parses and renders;
//  3. every render in tests/fixtures/chat/expected (made by transformers with
//     tools/make_template_renders.py) is reproduced byte for byte, and errors where it errored.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "text/chat_template.h"
#include "text/jinja_template.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using namespace ztvm;

namespace {

const std::string kTemplates = ZTVM_TESTDATA "/chat-templates";
const std::string kChat = ZTVM_SOURCE_DIR "/tests/fixtures/chat";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string render(const std::string& src, const ojson& vars = ojson::object()) {
  return jinja::Template(src).render(vars);
}

std::string error_of(const std::string& src, const ojson& vars = ojson::object()) {
  try {
    render(src, vars);
  } catch (const jinja::TemplateError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- 1. semantics ----

TEST(Jinja, WhitespaceControlDocExamples) {
  // trim_blocks + lstrip_blocks (what transformers sets): the block lines vanish entirely.
  EXPECT_EQ(render("<div>\n    {% if true %}\n        yay\n    {% endif %}\n</div>"), "<div>\n        yay\n</div>");
  // `-` strips all whitespace on that side of the tag.
  EXPECT_EQ(render("{% for item in seq -%}\n    {{ item }}\n{%- endfor %}", {{"seq", {1, 2, 3, 4, 5, 6, 7, 8, 9}}}),
            "123456789");
  // lstrip_blocks does not touch {{ }} and `+` disables it for one tag.
  EXPECT_EQ(render("  {{ 'a' }}\n  {%+ if true %}b{% endif %}"), "  a\n  b");
  // One trailing newline of the template is dropped (keep_trailing_newline=False).
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("a{# note #}b\n{# line comment #}\nc"), "ab\nc");
}

TEST(Jinja, LiteralsAndPrinting) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, 2.5] }}"), "[1, 'a', None, True, 2.5]");
  EXPECT_EQ(render("{{ {'k': \"it's\"} }}"), "{'k': \"it's\"}");
  EXPECT_EQ(render("{{ 'a\\tb\\n' ~ \"\\u00e9\" }}"), "a\tb\né");
  EXPECT_EQ(render("{{ 3.0 }} {{ 10 / 4 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-7 }}"),
            "3.0 2.5 0.30000000000000004 1e+20 1.5e-07");
  EXPECT_EQ(render("{{ none }}|{{ missing }}|{{ true }}"), "None||True");
  EXPECT_EQ(render("{{ 'con' 'cat' }}"), "concat");
  EXPECT_EQ(render("{{ (1, 'a') }} {{ (1,) }} {{ () }} {{ (1, 2) == [1, 2] }}"), "(1, 'a') (1,) () False");
}

// Found by fuzz_jinja: literals and indexes past 64 bits were std::out_of_range, which no caller catches.
TEST(Jinja, NumbersPast64BitsAreErrorsNotCrashes) {
  EXPECT_THROW(render("{{ 99999999999999999999 }}"), jinja::TemplateError);
  EXPECT_EQ(render("{{ 1e999 }} {{ -1e999 }}"), "inf -inf");
  EXPECT_NO_THROW(render("{{ [[1]] | map(attribute='99999999999999999999') | list | length }}"));
  EXPECT_THROW(render("{{ '{99999999999999999999}'.format(1) }}"), jinja::TemplateError);
}

TEST(Jinja, Arithmetic) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }}"), "3 -4 1 2 1024 3.5");
  EXPECT_EQ(render("{{ 1 + 1.5 }} {{ 'ab' * 2 }} {{ [1] + [2] }} {{ 'a' + 'b' }} {{ 1 ~ 2 }}"), "2.5 abab [1, 2] ab 12");
  EXPECT_EQ(render("{{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ -2 ** 2 }}"), "14 20 4");
  EXPECT_EQ(render("{{ [1, 2, 3] | length - 1 }}"), "2");  // filters bind tighter than arithmetic
}

TEST(Jinja, LogicAndComparisons) {
  EXPECT_EQ(render("{{ '' or 'x' }} {{ 'a' and 'b' }} {{ not 0 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}"), "x b True True False");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }}"), "True True True True");
  EXPECT_EQ(render("{{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ [1, 2] == [1, 2] }} {{ 'abc' < 'abd' }}"), "True False True True");
  EXPECT_EQ(render("{{ 'y' if x else 'n' }}|{{ 'y' if not x }}|{{ 'y' if x }}", {{"x", false}}), "n|y|");
}

TEST(Jinja, Tests) {
  ojson v = {{"s", "str"}, {"d", {{"a", 1}}}, {"l", {1}}, {"n", nullptr}, {"b", false}, {"i", 3}};
  EXPECT_EQ(render("{{ s is defined }}{{ nope is defined }}{{ nope is undefined }}{{ n is none }}{{ n is not none }}", v),
            "TrueFalseTrueTrueFalse");
  EXPECT_EQ(render("{{ s is string }}{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ i is iterable }}", v),
            "TrueTrueFalseTrueFalse");
  EXPECT_EQ(render("{{ s is sequence }}{{ d is sequence }}{{ i is sequence }}{{ b is false }}{{ i is false }}", v),
            "TrueTrueFalseTrueFalse");
  EXPECT_EQ(render("{{ i is equalto 3 }}{{ i is equalto(4) }}{{ 2 is in [1, 2] }}{{ i is odd }}{{ i is divisibleby 3 }}", v),
            "TrueFalseTrueTrueTrue");
  EXPECT_EQ(render("{{ not nope is defined }}{{ i is number }}{{ s is number }}{{ b is boolean }}", v), "TrueTrueFalseTrue");
}

TEST(Jinja, Loops) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }}{{ x }} {% endfor %}"),
            "103TrueFalse3a 212FalseFalse3b 321FalseTrue3c ");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {% endfor %}"),
            "<1>2 1<2>3 2<3> ");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ loop.index }}:{{ x }} {% endfor %}"), "1:2 2:4 ");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2} | items %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(render("{% for k in {'z': 1, 'a': 2} %}{{ k }}{% endfor %}"), "za");  // insertion order
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}"
                   "{{ x }}{% endfor %}"),
            "013");
  EXPECT_EQ(render("{% for x in range(4) %}{{ loop.cycle('a', 'b') }}{% endfor %}"), "abab");
  EXPECT_EQ(render("{% for x in missing %}x{% endfor %}"), "");
}

TEST(Jinja, ScopingAndNamespace) {
  // A set inside a loop does not leak out (Jinja docs, "Assignments"); namespace() is the way out.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}"), "21");
  EXPECT_EQ(render("{% set ns = namespace(found=false) %}{% for i in [1, 2] %}{% if i == 2 %}{% set ns.found = true %}"
                   "{% endif %}{% endfor %}{{ ns.found }}"),
            "True");
  EXPECT_EQ(render("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");  // if has no scope
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set t %}in {{ 1 + 1 }}{% endset %}[{{ t }}]"), "[in 2]");
}

TEST(Jinja, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Bo') }} {{ greet('Al', punct='?') }} {{ greet(name='Cy') | upper }}"),
            "Hi Bo! Hi Al? HI CY!");
  EXPECT_EQ(render("{% set g = 'top' %}{% macro m() %}{{ g }}{% endmacro %}{{ m() }}"), "top");
}

TEST(Jinja, Filters) {
  EXPECT_EQ(render("{{ '  x y  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'Ab' | upper }}{{ 'Ab' | lower }}"), "x y|a|ABab");
  EXPECT_EQ(render("{{ 'héllo' | length }} {{ [1, 2] | length }} {{ {'a': 1} | count }} {{ missing | length }}"), "5 2 1 0");
  EXPECT_EQ(render("{{ 'a-b-c' | replace('-', '+') }} {{ [1, 2, 3] | join(', ') }} {{ [1, 2] | first }}{{ [1, 2] | last }}"),
            "a+b+c 1, 2, 3 12");
  EXPECT_EQ(render("{{ missing | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }}"), "d None d");
  EXPECT_EQ(render("{{ [1, 'a'] | string }} {{ 42 | string }} {{ 'x' | safe }} {{ [3, 1, 2] | sort }}"), "[1, 'a'] 42 x [1, 2, 3]");
  ojson v = {{"users", {{{"name", "a"}, {"on", true}}, {{"name", "b"}, {"on", false}}, {{"name", "c"}, {"on", true}}}}};
  EXPECT_EQ(render("{{ users | selectattr('on') | map(attribute='name') | join }}", v), "ac");
  EXPECT_EQ(render("{{ users | rejectattr('on') | map(attribute='name') | list }}", v), "['b']");
  EXPECT_EQ(render("{{ users | selectattr('name', 'equalto', 'c') | list | length }}", v), "1");
  EXPECT_EQ(render("{{ ['a', 'b'] | map('upper') | join('/') }} {{ [1, 2, 3, 4] | select('odd') | list }}"), "A/B [1, 3]");
  EXPECT_EQ(render("{{ none | selectattr('a') | list }} {{ none | map(attribute='a') | list }}"), "[] []");
  // |safe makes markupsafe's Markup, which HTML-escapes a plain string added to it.
  EXPECT_EQ(render("{{ '<b>' | safe + '<i>' }} {{ '<i>' ~ '<b>' | safe }} {{ '\"&' | e }}"), "<b>&lt;i&gt; <i><b> &#34;&amp;");
  EXPECT_EQ(render("{{ 'hello world' | title }} {{ 'x' | capitalize }} {{ '5' | int + 1 }} {{ -3 | abs }}"), "Hello World X 6 3");
}

TEST(Jinja, ToJsonMatchesPythonJsonDumps) {
  // transformers' tojson is json.dumps(x, ensure_ascii=False, indent=indent, ...).
  EXPECT_EQ(render("{{ {'a': [1, 2.5, true, none, 'é\"\\n'], 'b': {}} | tojson }}"),
            "{\"a\": [1, 2.5, true, null, \"é\\\"\\n\"], \"b\": {}}");
  EXPECT_EQ(render("{{ {'a': [1, {}], 'b': []} | tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true, separators=(',', ':')) }}"), "{\"a\":2,\"b\":1}");
  EXPECT_EQ(render("{{ 'é\\u0001' | tojson(ensure_ascii=true) }}"), "\"\\u00e9\\u0001\"");
  EXPECT_EQ(render("{{ x | tojson }}", {{"x", ojson::parse("{\"z\": 1, \"a\": 1.0}")}}), "{\"z\": 1, \"a\": 1.0}");
}

TEST(Jinja, StringAndDictMethods) {
  EXPECT_EQ(render("{{ '  a b  '.strip() }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ 'x\\n\\n'.rstrip('\\n') }}|"
                   "{{ 'a<t>b<t>c'.split('<t>') }}|{{ ' a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}"),
            "a b|x\n|x|['a', 'b', 'c']|['a', 'b']|['a', 'b,c']");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', 'a')) }}"
                   "{{ 'aXbX'.replace('X', '-') }}{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ \"they're bill's\".title() }}"),
            "TrueTrueTruea-b-ABabThey'Re Bill'S");
  EXPECT_EQ(render("{{ '{} and {}'.format(1, 'x') }} {{ '{0}{0}{name}'.format('a', name='b') }} {{ '{{}}{!r}'.format('q') }}"),
            "1 and x aab {}'q'");
  ojson v = {{"d", {{"a", 1}, {"b", 2}}}};
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 9) }} {{ d.items() | list }} {{ d.keys() | list }}", v),
            "1 None 9 [('a', 1), ('b', 2)] ['a', 'b']");
  EXPECT_EQ(render("{{ d.a }}{{ d['b'] }}{{ d.zz }}|{{ d['zz'] is defined }}", v), "12|False");
  EXPECT_EQ(render("{{ {1: 'a', 2: 'b'}[2] }} {{ {1: 'x', 1.0: 'y'} }} {{ {2: 0} | tojson }}"), "b {1: 'y'} {\"2\": 0}");
}

TEST(Jinja, Slicing) {
  ojson v = {{"l", {1, 2, 3, 4}}, {"s", "héllo"}};
  EXPECT_EQ(render("{{ l[::-1] }} {{ l[1:] }} {{ l[:-1] }} {{ l[-1] }} {{ l[::2] }} {{ l[10] is defined }}", v),
            "[4, 3, 2, 1] [2, 3, 4] [1, 2, 3] 4 [1, 3] False");
  EXPECT_EQ(render("{{ s[1] }} {{ s[::-1] }} {{ s[1:3] }}", v), "é olléh él");
}

TEST(Jinja, GlobalsAndRaise) {
  EXPECT_EQ(render("{{ range(3) | list }} {{ range(1, 7, 2) | list }}"), "[0, 1, 2] [1, 3, 5]");
  EXPECT_FALSE(render("{{ strftime_now('%Y-%m-%d') }}").empty());
  try {
    render("{{ raise_exception('bad input: ' ~ 3) }}");
    FAIL() << "raise_exception did not throw";
  } catch (const jinja::RaisedError& e) {
    EXPECT_STREQ(e.what(), "bad input: 3");
  }
  EXPECT_EQ(render("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
}

TEST(Jinja, UndefinedFailsOnlyWhenUsed) {
  EXPECT_EQ(render("{% if missing %}x{% endif %}{{ missing }}{{ missing is defined }}"), "False");
  EXPECT_NE(error_of("{{ missing + 1 }}").find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ missing.attr }}").find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ d.x.y }}", {{"d", ojson::object()}}).find("has no attribute 'x'"), std::string::npos);
  EXPECT_NE(error_of("{{ 'a' + 1 }}").find("unsupported operand"), std::string::npos);
}

TEST(Jinja, ErrorsCarryLineAndColumn) {
  EXPECT_EQ(error_of("line one\n{% if %}x{% endif %}").rfind("2:7: ", 0), 0u) << error_of("line one\n{% if %}");
  EXPECT_EQ(error_of("{% for x in y %}").rfind("1:17: ", 0), 0u) << error_of("{% for x in y %}");
  EXPECT_EQ(error_of("ab\n  {{ 'unterminated }}").rfind("2:6: ", 0), 0u) << error_of("ab\n  {{ 'unterminated }}");
  EXPECT_EQ(error_of("{% endif %}").rfind("1:4: ", 0), 0u);
  EXPECT_EQ(error_of("\n\n   {{ 1 + none }}").rfind("3:9: ", 0), 0u) << error_of("\n\n   {{ 1 + none }}");
}

// ---- 2. the real templates ----

TEST(ChatTemplate, EveryTemplateFileParsesAndRenders) {
  ASSERT_TRUE(fs::is_directory(kTemplates)) << kTemplates;
  ojson messages = ojson::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
                                    {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}])");
  int n = 0;
  for (auto& entry : fs::directory_iterator(kTemplates)) {
    if (entry.path().extension() != ".jinja") continue;
    n++;
    SCOPED_TRACE(entry.path().filename().string());
    ChatTemplate t(read_file(entry.path()));
    std::string out = t.render(messages, ChatOptions{});
    EXPECT_NE(out.find("Bye"), std::string::npos);
  }
  EXPECT_GE(n, 5);
}

TEST(ChatTemplate, FallbackIsChatML) {
  ojson messages = ojson::parse(R"([{"role": "user", "content": "Hi"}])");
  EXPECT_EQ(render_chat("", messages, ChatOptions{}), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

// ---- 3. transformers' renders ----

namespace {

struct Conversation {
  ojson messages, tools = nullptr;
};

Conversation load_conversation(const std::string& name) {
  ojson j = ojson::parse(read_file(kChat + "/conversations/" + name));
  Conversation c;
  c.messages = j.at("messages");
  if (j.contains("tools")) c.tools = j["tools"];
  return c;
}

// The first differing line, for a readable failure.
std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) i++;
  size_t line_start = want.rfind('\n', i == 0 ? 0 : i - 1);
  line_start = line_start == std::string::npos ? 0 : line_start + 1;
  auto snippet = [&](const std::string& s) { return s.substr(line_start, std::min<size_t>(120, s.size() - std::min(s.size(), line_start))); };
  return "at byte " + std::to_string(i) + "\n  expected: " + ojson(snippet(want)).dump() + "\n  got:      " + ojson(snippet(got)).dump();
}

}  // namespace

TEST(ChatTemplate, MatchesTransformersRenders) {
  const std::string manifest_path = kChat + "/expected/manifest.json";
  ASSERT_TRUE(fs::exists(manifest_path))
      << manifest_path << " is missing: run `python3 tools/make_template_renders.py` where transformers is installed "
                          "(the GPU machine) to make the expected renders";
  ojson manifest = ojson::parse(read_file(manifest_path));
  ASSERT_FALSE(manifest["renders"].empty()) << "no renders in " << manifest_path
                                            << ": run `python3 tools/make_template_renders.py`";
  EXPECT_EQ(manifest["generator"].get<std::string>().find("transformers"), 0u)
      << "expected renders were not made by transformers: " << manifest["generator"];
  int compared = 0, errors = 0;
  for (auto& r : manifest["renders"]) {
    std::string label = r["template"].get<std::string>() + " x " + r["conversation"].get<std::string>() +
                        (r["add_generation_prompt"].get<bool>() ? " (gen)" : " (nogen)");
    SCOPED_TRACE(label);
    Conversation c = load_conversation(r["conversation"]);
    ChatOptions opts;
    opts.tools = c.tools;
    opts.add_generation_prompt = r["add_generation_prompt"];
    opts.enable_thinking = std::nullopt;  // the manifest's vars say exactly what was passed
    opts.vars = r["vars"];
    std::string tmpl = read_file(kTemplates + "/" + r["template"].get<std::string>());
    if (r.contains("error")) {
      EXPECT_THROW(render_chat(tmpl, c.messages, opts), jinja::TemplateError) << "transformers raised " << r["error"];
      errors++;
      continue;
    }
    std::string want = read_file(kChat + "/expected/" + r["expected"].get<std::string>());
    std::string got;
    try {
      got = render_chat(tmpl, c.messages, opts);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "render threw: " << e.what();
      continue;
    }
    EXPECT_TRUE(got == want) << first_difference(want, got);
    compared++;
  }
  EXPECT_GT(compared, 0);
  std::printf("compared %d renders, %d expected errors\n", compared, errors);
}

// ---- the CLI ----

TEST(ChatTemplate, CliVarsAndExactOutput) {
  const char* bin = std::getenv("ZTVM_BIN");
  if (!bin || !*bin) GTEST_SKIP() << "ZTVM_BIN not set (ctest sets it to the ztvm binary)";
  std::string tmpl = kTemplates + "/Qwen-Qwen3-0.6B.jinja";
  std::string conv = kChat + "/conversations/reasoning_history.json";
  std::string cmd = std::string(bin) + " template --template '" + tmpl + "' --messages '" + conv +
                    "' --var bos_token='<s>' --var eos_token='</s>' --var 'date_string=26 Jul 2024'"
                    " --var enable_thinking=true --no-generation-prompt";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << cmd;
  // The same request through the library (enable_thinking=true comes from the file's chat_template_kwargs
  // and from --var; the CLI must not add a newline).
  Conversation c = load_conversation("reasoning_history.json");
  ChatOptions opts;
  opts.add_generation_prompt = false;
  opts.vars = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"date_string", "26 Jul 2024"}, {"enable_thinking", true}};
  EXPECT_EQ(out, render_chat(read_file(tmpl), c.messages, opts));
  // And it is transformers' render, when the expected renders exist.
  std::string expected = kChat + "/expected/Qwen-Qwen3-0.6B__reasoning_history__nogen.txt";
  if (fs::exists(expected)) {
    EXPECT_EQ(out, read_file(expected));
  }
}
