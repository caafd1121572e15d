// ztvm template: render a chat prompt with a model's chat template and print it byte for byte
// (no newline added), to check what the model will see.
//
//   ztvm template -m model.gguf --messages chat.json
//   ztvm template --template tmpl.jinja --messages chat.json --tools tools.json --var enable_thinking=true
//
// --messages takes a JSON array of messages, or an object shaped like an OpenAI request:
// {"messages": [...], "tools": [...], "chat_template_kwargs": {...}}.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cli/command.h"
#include "hub/pull.h"
#include "text/chat_template.h"

namespace ztvm::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ojson read_json(const std::string& path) {
  try {
    return ojson::parse(read_file(path));
  } catch (const ojson::exception& e) {
    throw std::runtime_error(path + ": invalid JSON: " + e.what());
  }
}

// NAME=VALUE: VALUE is JSON when it parses as JSON (true, 3, "x", [..]), otherwise plain text.
std::pair<std::string, ojson> parse_var(const std::string& arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) throw std::runtime_error("--var expects NAME=VALUE, got '" + arg + "'");
  std::string value = arg.substr(eq + 1);
  ojson parsed = ojson::parse(value, nullptr, /*allow_exceptions=*/false);
  return {arg.substr(0, eq), parsed.is_discarded() ? ojson(value) : parsed};
}

int run_template(int argc, char** argv) {
  CLI::App app{"Print the prompt a chat template makes from messages (exactly, no newline added)", argv[0]};
  std::string model, template_file, messages_file, tools_file;
  std::vector<std::string> vars;
  bool no_gen = false;
  auto* m = app.add_option("-m,--model", model, "take the template and BOS/EOS text from this .gguf file, HF directory or ORG/REPO[:TAG]");
  auto* t = app.add_option("--template", template_file, "a .jinja chat template file");
  app.add_option("--messages", messages_file,
                 "JSON file: an array of messages, or {\"messages\", \"tools\", \"chat_template_kwargs\"}")
      ->required();
  app.add_option("--tools", tools_file, "JSON file with an array of tool schemas (overrides \"tools\" in --messages)");
  app.add_flag("--no-generation-prompt", no_gen, "do not open the assistant's turn at the end");
  app.add_option("--var", vars, "NAME=VALUE template variable (repeatable); VALUE is parsed as JSON if it can be")
      ->take_all()
      ->expected(1);
  m->excludes(t);
  CLI11_PARSE(app, argc, argv);

  ChatOptions opts;
  opts.add_generation_prompt = !no_gen;
  std::string source;
  if (!model.empty()) {
    model = hub::resolve_model(model);  // ORG/REPO[:TAG]: pulled on first use
    ModelChatTemplate mt = load_model_chat_template(model);
    if (mt.source.empty()) std::fprintf(stderr, "note: %s has no chat template; using the ChatML fallback\n", model.c_str());
    source = mt.source;
    opts.bos_token = mt.bos_token;
    opts.eos_token = mt.eos_token;
  } else if (!template_file.empty()) {
    source = read_file(template_file);
  }  // neither: the fallback template

  ojson input = read_json(messages_file);
  ojson messages = input;
  if (input.is_object()) {
    if (!input.contains("messages")) throw std::runtime_error(messages_file + ": object has no \"messages\" key");
    messages = input["messages"];
    if (input.contains("tools")) opts.tools = input["tools"];
    if (input.contains("chat_template_kwargs")) {
      if (!input["chat_template_kwargs"].is_object())
        throw std::runtime_error(messages_file + ": chat_template_kwargs must be an object");
      for (auto& [k, v] : input["chat_template_kwargs"].items()) opts.vars[k] = v;
    }
  }
  if (!messages.is_array()) throw std::runtime_error(messages_file + ": expected an array of messages");
  if (!tools_file.empty()) opts.tools = read_json(tools_file);
  for (auto& v : vars) {
    auto [name, value] = parse_var(v);
    opts.vars[name] = value;
  }

  std::string prompt = render_chat(source, messages, opts);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  return 0;
}

}  // namespace

static Command reg("template", "render a chat prompt with a model's chat template", run_template);

}  // namespace ztvm::cli
