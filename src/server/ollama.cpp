// Ollama's API beside OpenAI's, for the clients written against it (Open WebUI, editors' plugins, the
// ollama libraries): /api/chat and /api/generate (NDJSON streams by default), /api/embed and the older
// /api/embeddings, /api/tags, /api/show, /api/ps, /api/version. Requests are translated into the
// OpenAI request the rest of the server reads (same template, sampling, tools and JSON rules); replies
// come back in Ollama's shape, errors as {"error": "..."}.
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "engine/embedding.h"
#include "model/quant.h"
#include "server/embeddings.h"
#include "server/job.h"
#include "server/server.h"
#include "server/tool_calls.h"

namespace ztvm::server {

namespace {

void send(httplib::Response& res, const json& body) {
  res.status = 200;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const unsigned ns = (unsigned)(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000);
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, ns);
  return buf;
}

// A true/false field: absent or null gives `dflt`, another type is a 400 naming it.
bool flag(const json& in, const char* key, bool dflt) {
  auto it = in.find(key);
  if (it == in.end() || it->is_null()) return dflt;
  if (!it->is_boolean()) throw ApiError(400, std::string("'") + key + "' must be true or false");
  return it->get<bool>();
}

// Ollama's `options` and top-level fields as the OpenAI fields parse_gen_options reads.
json translate_request(const json& in) {
  json b = json::object();
  if (in.contains("model")) b["model"] = in["model"];
  b["stream"] = flag(in, "stream", true);  // Ollama streams unless told not to
  if (auto it = in.find("options"); it != in.end() && !it->is_null()) {
    if (!it->is_object()) throw ApiError(400, "'options' must be an object");
    for (const char* k : {"temperature", "top_p", "top_k", "min_p", "seed", "stop", "repeat_penalty",
                          "presence_penalty", "frequency_penalty", "repeat_last_n"})
      if (it->contains(k)) b[k] = (*it)[k];
    if (it->contains("num_predict")) {  // -1: until the end, -2: until the context is full: both ours
      const json& n = (*it)["num_predict"];
      if (!n.is_number_integer()) throw ApiError(400, "'options.num_predict' must be an integer");
      b["max_tokens"] = n.get<int64_t>() < 0 ? json(nullptr) : n;
    }
  }
  if (auto it = in.find("format"); it != in.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
    if (it->is_string() && *it == "json") b["response_format"] = {{"type", "json_object"}};
    else if (it->is_object()) b["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", *it}}}};
    else throw ApiError(400, "'format' must be \"json\" or a JSON schema object");
  }
  if (in.contains("tools")) b["tools"] = in["tools"];
  if (auto it = in.find("think"); it != in.end() && it->is_boolean())
    b["chat_template_kwargs"] = {{"enable_thinking", it->get<bool>()}};
  if (in.contains("images") || in.contains("suffix"))
    throw ApiError(400, in.contains("images") ? "images are not supported" : "'suffix' (fill-in-the-middle) is not supported");
  return b;
}

json tool_calls_ollama(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const ToolCall& c : calls) {
    json args = json::parse(c.arguments, nullptr, false);
    out.push_back({{"function", {{"name", c.name}, {"arguments", args.is_discarded() ? json::object() : args}}}});
  }
  return out;
}

// Ollama's closing fields: counts and nanosecond durations.
void add_metrics(json& j, const Job& job) {
  const GenerateStats& s = job.result().stats;
  const auto ns = [](double ms) { return (int64_t)(ms * 1e6); };
  j["done"] = true;
  j["done_reason"] = job.finish_reason();
  j["total_duration"] = ns(job.result().queue_ms + s.ttft_ms + s.decode_ms);
  j["load_duration"] = 0;
  j["prompt_eval_count"] = job.prompt_tokens();
  j["prompt_eval_duration"] = ns(s.ttft_ms);
  j["eval_count"] = job.completion_tokens();
  j["eval_duration"] = ns(s.decode_ms);
}

}  // namespace

void Server::ollama_generate(const httplib::Request& req, httplib::Response& res, bool chat) {
  const json in = parse_body(req.body);
  json b = translate_request(in);
  ChatPrompt cp;
  std::vector<int32_t> ids;
  if (chat) {
    if (in.contains("messages")) {
      b["messages"] = in["messages"];
      for (const json& m : in["messages"])
        if (m.is_object() && m.contains("images")) throw ApiError(400, "images are not supported");
    }
    cp = render_chat_prompt(b);
    ids = encode_chat(cp.prompt);
  } else {
    if (!in.contains("prompt") || !in["prompt"].is_string()) throw ApiError(400, "'prompt' must be a string");
    const std::string prompt = in["prompt"].get<std::string>();
    if (flag(in, "raw", false)) {
      ids = tok_.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
    } else {  // the model's template around one user turn, with `system` before it when given
      json msgs = json::array();
      if (in.contains("system") && in["system"].is_string()) msgs.push_back({{"role", "system"}, {"content", in["system"]}});
      msgs.push_back({{"role", "user"}, {"content", prompt}});
      b["messages"] = msgs;
      cp = render_chat_prompt(b);
      ids = encode_chat(cp.prompt);
    }
  }
  GenOptions o = parse_gen_options(b);
  if (ids.empty()) throw ApiError(400, "the prompt is empty");
  if (ids.size() >= max_context_)
    throw ApiError(400, "the prompt is " + std::to_string(ids.size()) + " tokens but the context holds " + std::to_string(max_context_));
  const uint32_t room = max_context_ - (uint32_t)ids.size();
  const uint32_t n_max = o.max_tokens < 0 ? room : (uint32_t)std::min<int64_t>(o.max_tokens, room);
  const bool templated = chat || !flag(in, "raw", false);
  std::shared_ptr<const JsonSchema> rule = cp.json_output;
  if (!templated && b.contains("response_format")) {  // raw prompts: the format as on /v1/completions
    const json& f = b["response_format"];
    rule = f["type"] == "json_object" ? std::make_shared<JsonSchema>()
                                      : std::make_shared<JsonSchema>(JsonSchema::compile(nlohmann::json(f["json_schema"]["schema"])));
  }
  auto job = Job::start(sched_, tok_, std::move(ids), n_max, o, rule);
  const std::string model = opts_.model_name;
  // One NDJSON object: the new text as the message (chat) or the response (generate).
  auto piece = [model, chat](const std::string& content, const std::string& thinking, const json& calls) {
    json j = {{"model", model}, {"created_at", now_rfc3339()}};
    if (chat) {
      json msg = {{"role", "assistant"}, {"content", content}};
      if (!thinking.empty()) msg["thinking"] = thinking;
      if (!calls.empty()) msg["tool_calls"] = calls;
      j["message"] = msg;
    } else {
      j["response"] = content;
      if (!thinking.empty()) j["thinking"] = thinking;
    }
    j["done"] = false;
    return j;
  };

  if (!o.stream) {
    std::string text;
    while (!job->take(text, std::chrono::milliseconds(1000))) {}
    if (job->result().finish == Finish::Error) throw failure(job->result(), "generation failed");
    ParsedReply pr{text, "", {}};
    if (templated) pr = parse_reply(cp.format, text, cp.tools_enabled, cp.reply);
    json j = piece(pr.content, pr.reasoning, tool_calls_ollama(pr.tool_calls));
    add_metrics(j, *job);
    send(res, j);
    return;
  }
  struct Stream {
    std::shared_ptr<Job> job;
    std::unique_ptr<ToolCallStream> parse;
  };
  auto st = std::make_shared<Stream>();
  st->job = job;
  if (templated) st->parse = std::make_unique<ToolCallStream>(cp.format, cp.tools_enabled, cp.reply);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "application/x-ndjson",
      [st, piece](size_t, httplib::DataSink& sink) {
        auto line = [&](const json& j) {
          const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
          return sink.write(s.data(), s.size());
        };
        std::string text;
        const bool done = st->job->take(text, std::chrono::milliseconds(200));
        if (!text.empty()) {
          const StreamDelta d = st->parse ? st->parse->push(text) : StreamDelta{text, ""};
          if ((!d.content.empty() || !d.reasoning.empty()) && !line(piece(d.content, d.reasoning, json::array()))) return false;
        }
        if (!done) return true;
        const Job& job = *st->job;
        if (job.result().finish == Finish::Error) {
          line({{"error", failure(job.result(), "generation failed").what()}});
        } else {
          ParsedReply rest = st->parse ? st->parse->finish() : ParsedReply{};
          json last = piece(rest.content, rest.reasoning, tool_calls_ollama(rest.tool_calls));
          add_metrics(last, job);
          if (!line(last)) return false;
        }
        sink.done();
        return true;
      },
      [st](bool) { st->job->cancel(); });
}

// One entry of /api/tags and /api/ps: the served model's name, size and what it is.
json Server::ollama_model_entry() const {
  namespace fs = std::filesystem;
  std::error_code ec;
  uint64_t size = 0;
  if (fs::is_directory(model_.path, ec)) {
    for (const auto& e : fs::recursive_directory_iterator(model_.path, ec))
      if (e.is_regular_file(ec)) size += e.file_size(ec);
  } else {
    size = fs::file_size(model_.path, ec);
  }
  uint64_t params = 0;
  std::map<std::string, uint64_t> by_type;  // matrix elements per type: the most common names the quantization
  for (const auto& [name, t] : model_.tensors) {
    uint64_t n = 1;
    for (uint64_t e : t.ne) n *= e;
    params += n;
    if (t.ne.size() == 2) by_type[type_name(t.type)] += n;
  }
  std::string quant;
  uint64_t most = 0;
  for (const auto& [type, n] : by_type)
    if (n > most) most = n, quant = type;
  char psize[32];
  std::snprintf(psize, sizeof psize, params >= 1000000000ull ? "%.1fB" : "%.0fM", params >= 1000000000ull ? params / 1e9 : params / 1e6);
  const ModelConfig& c = model_.config;
  return {{"name", opts_.model_name}, {"model", opts_.model_name}, {"modified_at", now_rfc3339()}, {"size", size},
          {"digest", ""},
          {"details", {{"parent_model", ""}, {"format", model_.from_hf() ? "safetensors" : "gguf"}, {"family", c.arch_name},
                       {"families", json::array({c.arch_name})}, {"parameter_size", psize}, {"quantization_level", quant}}}};
}

void Server::ollama_routes() {
  httplib::Server& s = *http_;
  s.Post("/api/chat", [this](const httplib::Request& req, httplib::Response& res) { ollama_generate(req, res, true); });
  s.Post("/api/generate", [this](const httplib::Request& req, httplib::Response& res) { ollama_generate(req, res, false); });
  s.Get("/api/version", [](const httplib::Request&, httplib::Response& res) { send(res, {{"version", "0.12.0"}}); });
  s.Get("/api/tags", [this](const httplib::Request&, httplib::Response& res) {
    send(res, {{"models", json::array({ollama_model_entry()})}});
  });
  s.Get("/api/ps", [this](const httplib::Request&, httplib::Response& res) {
    json m = ollama_model_entry();
    m["expires_at"] = "2318-01-01T00:00:00Z";  // loaded for as long as the server runs
    m["size_vram"] = m["size"];
    send(res, {{"models", json::array({m})}});
  });
  s.Post("/api/show", [this](const httplib::Request&, httplib::Response& res) {
    const ModelConfig& c = model_.config;
    const std::string a = c.arch_name + ".";
    json caps = json::array({"completion", "embedding"});
    if (detect_tool_format(tmpl_->source()) != ToolFormat::kInjected) caps.push_back("tools");
    send(res, {{"modelfile", ""}, {"parameters", ""}, {"template", tmpl_->source()},
               {"details", ollama_model_entry()["details"]}, {"capabilities", caps},
               {"model_info", {{"general.architecture", c.arch_name}, {a + "context_length", max_context_},
                               {a + "embedding_length", c.hidden_size}, {a + "block_count", c.num_hidden_layers},
                               {a + "attention.head_count", c.num_attention_heads},
                               {a + "attention.head_count_kv", c.num_key_value_heads}}}});
  });
  // /api/embed: {"input": string or strings} -> {"embeddings": [[...]]}; /api/embeddings (older):
  // {"prompt": string} -> {"embedding": [...]}.
  s.Post("/api/embed", [this](const httplib::Request& req, httplib::Response& res) {
    json in = parse_body(req.body);
    json b = {{"input", in.contains("input") ? in["input"] : json()}};
    if (in.contains("dimensions")) b["dimensions"] = in["dimensions"];
    if (!in.contains("input")) b.erase("input");
    const auto t0 = std::chrono::steady_clock::now();
    const json r = run_embeddings(sched_, parse_embedding_request(b, tok_, max_context_, model_.config.hidden_size),
                                  opts_.pooling, opts_.model_name);
    json vecs = json::array();
    for (const json& d : r["data"]) vecs.push_back(d["embedding"]);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    send(res, {{"model", opts_.model_name}, {"embeddings", vecs}, {"total_duration", ns}, {"load_duration", 0},
               {"prompt_eval_count", r["usage"]["prompt_tokens"]}});
  });
  s.Post("/api/embeddings", [this](const httplib::Request& req, httplib::Response& res) {
    json in = parse_body(req.body);
    if (!in.contains("prompt") || !in["prompt"].is_string()) throw ApiError(400, "'prompt' must be a string", "invalid_request_error", "prompt");
    const json r = run_embeddings(sched_, parse_embedding_request({{"input", in["prompt"]}}, tok_, max_context_,
                                                                  model_.config.hidden_size),
                                  opts_.pooling, opts_.model_name);
    send(res, {{"embedding", r["data"][0]["embedding"]}});
  });
}

}  // namespace ztvm::server
