// Chat template rendering with transformers' variable conventions, and finding a model's template.
#include "text/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/gguf.h"
#include "model/model_error.h"

namespace ztvm {

namespace fs = std::filesystem;

const std::string& fallback_chat_template() {
  static const std::string tmpl =
      "{%- for message in messages %}\n"
      "    {{- '<|im_start|>' + message.role + '\\n' }}\n"
      "    {%- if message.content is string %}\n"
      "        {{- message.content }}\n"
      "    {%- else %}\n"
      "        {%- for part in message.content if part.text is defined %}{{- part.text }}{%- endfor %}\n"
      "    {%- endif %}\n"
      "    {{- '<|im_end|>\\n' }}\n"
      "{%- endfor %}\n"
      "{%- if add_generation_prompt %}\n"
      "    {{- '<|im_start|>assistant\\n' }}\n"
      "{%- endif %}\n";
  return tmpl;
}

ChatTemplate::ChatTemplate(const std::string& source) : source_(source.empty() ? fallback_chat_template() : source) {
  try {
    tmpl_ = std::make_shared<const jinja::Template>(source_);
  } catch (const jinja::TemplateError& e) {
    throw jinja::TemplateError(std::string("chat template: ") + e.what());
  }
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const ChatOptions& opts) const {
  if (!messages.is_array()) throw jinja::TemplateError("chat template: messages must be a JSON array");
  if (!opts.tools.is_null() && !opts.tools.is_array()) throw jinja::TemplateError("chat template: tools must be a JSON array or null");
  // The same variables apply_chat_template passes: tools and documents are always defined.
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  vars["messages"] = messages;
  vars["tools"] = opts.tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = opts.add_generation_prompt;
  if (opts.bos_token) vars["bos_token"] = *opts.bos_token;
  if (opts.eos_token) vars["eos_token"] = *opts.eos_token;
  if (opts.enable_thinking) vars["enable_thinking"] = *opts.enable_thinking;
  for (auto& [k, v] : opts.vars.items()) vars[k] = v;
  try {
    return tmpl_->render(vars);
  } catch (const jinja::RaisedError&) {
    throw;  // the template's own message, e.g. "This model only supports single tool-calls at once!"
  } catch (const jinja::TemplateError& e) {
    throw jinja::TemplateError(std::string("chat template: ") + e.what());
  }
}

std::string render_chat(const std::string& template_src, const nlohmann::ordered_json& messages,
                        const ChatOptions& opts) {
  return ChatTemplate(template_src).render(messages, opts);
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ModelError(p.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tokenizer_config.json writes special tokens as "text" or {"content": "text", ...} (AddedToken).
std::optional<std::string> token_text(const nlohmann::json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}

ModelChatTemplate from_hf_dir(const fs::path& dir) {
  ModelChatTemplate out;
  nlohmann::json cfg = nlohmann::json::object();
  fs::path cfg_path = dir / "tokenizer_config.json";
  if (fs::exists(cfg_path)) {
    try {
      cfg = nlohmann::json::parse(read_text(cfg_path));
    } catch (const nlohmann::json::exception& e) {
      throw ModelError(cfg_path.string() + ": invalid JSON: " + e.what());
    }
    out.bos_token = token_text(cfg, "bos_token");
    out.eos_token = token_text(cfg, "eos_token");
  }
  // transformers saves the template beside the config in newer versions; that file wins.
  if (fs::exists(dir / "chat_template.jinja")) {
    out.source = read_text(dir / "chat_template.jinja");
    return out;
  }
  auto it = cfg.find("chat_template");
  if (it != cfg.end() && it->is_string()) {
    out.source = it->get<std::string>();
  } else if (it != cfg.end() && it->is_array()) {  // named templates: "default", else the first
    for (auto& named : *it) {
      if (!named.is_object() || !named.contains("template") || !named["template"].is_string()) continue;
      if (out.source.empty() || named.value("name", "") == "default") out.source = named["template"].get<std::string>();
    }
  }
  return out;
}

ModelChatTemplate from_gguf(const std::string& path) {
  auto gguf = GgufFile::open(path);
  ModelChatTemplate out;
  out.source = gguf->find_string("tokenizer.chat_template").value_or("");
  const GgufValue* tokens = gguf->find_value("tokenizer.ggml.tokens");
  auto token = [&](const char* key) -> std::optional<std::string> {
    if (!tokens || !gguf->has(key)) return std::nullopt;
    uint64_t id = gguf->get_uint(key);
    if (id >= tokens->strings.size()) return std::nullopt;
    return tokens->strings[id];
  };
  out.bos_token = token("tokenizer.ggml.bos_token_id");
  out.eos_token = token("tokenizer.ggml.eos_token_id");
  return out;
}

}  // namespace

ModelChatTemplate load_model_chat_template(const std::string& model_path) {
  if (!fs::exists(model_path)) throw ModelError(model_path + ": no such file or directory");
  if (fs::is_directory(model_path)) return from_hf_dir(model_path);
  return from_gguf(model_path);
}

}  // namespace ztvm
