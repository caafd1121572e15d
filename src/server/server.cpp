#include "server/server.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <set>

#include "engine/embedding.h"
#include "server/chat_prompt.h"
#include "server/embeddings.h"
#include "server/job.h"
#include "server/openai.h"
#include "server/tool_calls.h"
#include "server/web_assets.h"

namespace ztvm::server {

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status, error_body(e)); }
// Ollama's paths answer errors in Ollama's shape, {"error": "..."}, which its clients read.
void send_error(const httplib::Request& req, httplib::Response& res, const ApiError& e) {
  if (req.path.rfind("/api/", 0) == 0) send_json(res, e.status, {{"error", e.what()}});
  else send_error(res, e);
}

std::string sse(const json& chunk) {
  return "data: " + chunk.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

// API paths, to tell a wrong method (405) from an unknown path (404).
const std::set<std::string> kRoutes = {"/health", "/v1/models", "/models", "/v1/chat/completions", "/chat/completions",
                                       "/v1/completions", "/completions", "/v1/embeddings", "/embeddings",
                                       "/tokenize", "/detokenize", "/apply-template", "/api/chat", "/api/generate",
                                       "/api/embed", "/api/embeddings", "/api/tags", "/api/ps", "/api/show",
                                       "/api/version", "/metrics"};

int64_t now_s() { return (int64_t)std::time(nullptr); }

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* abc = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string s = prefix;
  for (int i = 0; i < 24; i++) s += abc[rng() % 62];
  return s;
}

}  // namespace

Server::Server(ServerOptions opts, const ModelFile& model, const Tokenizer& tok, const ModelChatTemplate& tmpl,
               Scheduler& sched, uint32_t max_context)
    : opts_(std::move(opts)), model_(model), tok_(tok), tmpl_src_(tmpl), sched_(sched), max_context_(max_context),
      http_(std::make_unique<httplib::Server>()) {
  tmpl_ = std::make_unique<ChatTemplate>(tmpl_src_.source);
  routes();
}

Server::~Server() = default;

bool Server::authorized(const httplib::Request& req) const {
  if (opts_.api_key.empty()) return true;
  return req.get_header_value("Authorization") == "Bearer " + opts_.api_key;
}

void Server::routes() {
  httplib::Server& s = *http_;
  // Streams hold a thread each: enough threads that 16+ streaming clients and /health all get one.
  s.new_task_queue = [] { return new httplib::ThreadPool(64); };
  s.set_payload_max_length(opts_.max_body);
  s.set_read_timeout(15, 0);
  s.set_write_timeout(30, 0);

  // Browser apps on other origins may call the API (as with llama-server); the key still applies.
  s.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
  s.Options(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    res.status = 204;
  });
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // The page and /health are public (a browser cannot send a Bearer header to load a page; the
    // page asks for the key and sends it with its API calls).
    const bool is_public = req.path == "/health" || (req.method == "GET" && req.path.rfind("/v1", 0) != 0 && req.path.rfind("/api/", 0) != 0 &&
                                                     req.path != "/models" && req.path != "/props" && req.path != "/metrics");
    if (req.method == "OPTIONS") return httplib::Server::HandlerResponse::Unhandled;
    // A body announced far over the limit is refused before it is read: httplib would read and
    // discard all of it, holding a thread while a client that never sends it waits. Bodies a little
    // over the limit are still read, so their sender gets the 413 rather than a reset connection.
    if (req.has_header("Content-Length")) {
      const std::string len = req.get_header_value("Content-Length");
      const bool digits = !len.empty() && len.size() <= 19 && len.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoull(len) > 4 * opts_.max_body) {
        send_error(req, res, digits ? ApiError(413, "the request body is too large (limit " + std::to_string(opts_.max_body) + " bytes)",
                                          "invalid_request_error", "", "payload_too_large")
                               : ApiError(400, "invalid Content-Length"));
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (!is_public && !authorized(req)) {
      send_error(req, res, ApiError(401, "invalid or missing API key: send 'Authorization: Bearer <key>'",
                               "authentication_error", "", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Anything that ends with an empty error body (no route, body too large, bad request line) gets
  // the OpenAI error shape too.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404 && kRoutes.count(req.path)) res.status = 405;
    switch (res.status) {
      case 404:
        if (kRoutes.count(req.path))  // the path exists, for another method
          send_error(req, res, ApiError(405, "method " + req.method + " is not allowed on " + req.path));
        else
          send_error(req, res, ApiError(404, "no such endpoint: " + req.method + " " + req.path, "not_found_error"));
        break;
      case 413: send_error(req, res, ApiError(413, "the request body is too large", "invalid_request_error", "", "payload_too_large")); break;
      case 405: send_error(req, res, ApiError(405, "method not allowed", "invalid_request_error")); break;
      default:
        send_error(req, res, ApiError(res.status, "bad request", res.status >= 500 ? "server_error" : "invalid_request_error"));
    }
  });
  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_error(req, res, e);
    } catch (const std::exception& e) {
      send_error(req, res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
    } catch (...) {
      send_error(req, res, ApiError(500, "internal error", "server_error"));
    }
  });
  if (opts_.verbose)
    s.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "ztvm serve: %s %s -> %d\n", req.method.c_str(), req.path.c_str(), res.status);
    });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const std::string lost = sched_.device_lost();
    if (!lost.empty()) return send_json(res, 503, {{"status", "error"}, {"error", lost}});
    Scheduler::Load l = sched_.load();
    send_json(res, 200, {{"status", "ok"}, {"slots_busy", l.active}, {"slots", l.slots}, {"queued", l.queued},
                         {"kv_pages_free", l.pages_free}, {"kv_pages", l.pages_total}});
  });
  // Prometheus' text format, as llama-server's --metrics gives (names prefixed ztvm_).
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const Scheduler::Totals t = sched_.totals();
    const Scheduler::Load l = sched_.load();
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, double v) {
      char num[64];
      std::snprintf(num, sizeof num, "%.17g", v);
      out += std::string("# HELP ztvm_") + name + " " + help + "\n# TYPE ztvm_" + name + " " + type + "\nztvm_" + name + " " + num + "\n";
    };
    metric("requests_total", "counter", "Requests that ended (generations and embeddings).", (double)t.requests);
    metric("requests_failed_total", "counter", "Requests that ended in an error.", (double)t.failed);
    metric("requests_cancelled_total", "counter", "Requests whose client went away.", (double)t.cancelled);
    metric("embeddings_total", "counter", "Embedding inputs computed.", (double)t.embeddings);
    metric("prompt_tokens_total", "counter", "Prompt tokens of ended requests, reused from a cache or not.", (double)t.prompt_tokens);
    metric("prompt_tokens_computed_total", "counter", "Prompt tokens computed (not reused from a cache).", (double)t.prompt_computed);
    metric("tokens_predicted_total", "counter", "Tokens generated.", (double)t.generated);
    metric("prompt_seconds_total", "counter", "Time to first token, summed.", t.prefill_ms / 1000);
    metric("decode_seconds_total", "counter", "Time from first to last token, summed.", t.decode_ms / 1000);
    metric("requests_processing", "gauge", "Requests holding a slot.", l.active);
    metric("requests_queued", "gauge", "Requests waiting for a slot.", l.queued);
    metric("kv_cache_usage_ratio", "gauge", "Share of KV cache pages in use or kept for reuse.",
           l.pages_total ? 1.0 - (double)l.pages_free / l.pages_total : 0.0);
    res.set_content(out, "text/plain; version=0.0.4");
  });
  auto models = [this](const httplib::Request&, httplib::Response& res) {
    const ModelConfig& c = model_.config;
    json m = {{"id", opts_.model_name}, {"object", "model"}, {"created", now_s()}, {"owned_by", "ztvm"},
              {"meta", {{"arch", c.arch_name}, {"n_ctx", max_context_}, {"n_vocab", c.vocab_size},
                        {"n_layer", c.num_hidden_layers}, {"n_embd", c.hidden_size},
                        {"pooling", pooling_name(opts_.pooling)}}}};
    send_json(res, 200, {{"object", "list"}, {"data", json::array({m})}});
  };
  s.Get("/v1/models", models);
  s.Get("/models", models);
  auto chat = [this](const httplib::Request& req, httplib::Response& res) { this->chat(req, res); };
  s.Post("/v1/chat/completions", chat);
  s.Post("/chat/completions", chat);
  auto complete = [this](const httplib::Request& req, httplib::Response& res) { this->complete(req, res); };
  s.Post("/v1/completions", complete);
  s.Post("/completions", complete);

  ollama_routes();
  auto embed = [this](const httplib::Request& req, httplib::Response& res) {
    const EmbeddingRequest r = parse_embedding_request(parse_body(req.body), tok_, max_context_, model_.config.hidden_size);
    send_json(res, 200, run_embeddings(sched_, r, opts_.pooling, opts_.model_name));
  };
  s.Post("/v1/embeddings", embed);
  s.Post("/embeddings", embed);

  s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    json b = parse_body(req.body);
    if (!b.contains("content") || !b["content"].is_string()) throw ApiError(400, "'content' must be a string", "invalid_request_error", "content");
    bool special = b.value("add_special", false);
    send_json(res, 200, {{"tokens", tok_.encode(b["content"].get<std::string>(), special, true)}});
  });
  s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    json b = parse_body(req.body);
    std::vector<int32_t> ids;
    if (!b.contains("tokens") || !b["tokens"].is_array()) throw ApiError(400, "'tokens' must be a list of token ids", "invalid_request_error", "tokens");
    for (const auto& t : b["tokens"]) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= (int64_t)tok_.vocab_size())
        throw ApiError(400, "'tokens' must hold ids in 0.." + std::to_string(tok_.vocab_size() - 1), "invalid_request_error", "tokens");
      ids.push_back(t.get<int32_t>());
    }
    send_json(res, 200, {{"content", tok_.decode(ids)}});
  });
  s.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
    json b = parse_body(req.body);
    send_json(res, 200, {{"prompt", render_chat_prompt(b).prompt}});
  });

  for (const WebAsset& a : web_assets()) {
    auto serve = [&a](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(a.body), a.content_type);
      res.set_header("Cache-Control", "no-cache");
    };
    s.Get(a.path, serve);
    if (std::string(a.path) == "/index.html") s.Get("/", serve);
  }
}

ChatPrompt Server::render_chat_prompt(const json& b) const { return server::render_chat_prompt(b, *tmpl_, tmpl_src_); }

std::vector<int32_t> Server::encode_chat(const std::string& prompt) const {
  return server::encode_chat(tok_, tmpl_src_, prompt);
}

void Server::chat(const httplib::Request& req, httplib::Response& res) {
  json b = parse_body(req.body);
  GenOptions o = parse_gen_options(b);
  if (o.echo) throw ApiError(400, "'echo' is for /v1/completions", "invalid_request_error", "echo");
  ChatPrompt cp = render_chat_prompt(b);
  respond(res, encode_chat(cp.prompt), o, &cp);
}

void Server::complete(const httplib::Request& req, httplib::Response& res) {
  json b = parse_body(req.body);
  GenOptions o = parse_gen_options(b);
  const json format = b.contains("response_format") ? b["response_format"] : json();
  try {
    validate_response_format(nlohmann::json(format));
  } catch (const std::invalid_argument& e) {
    throw field_error(e);
  }
  if (o.echo && o.stream) throw ApiError(400, "'echo' with 'stream' is not supported", "invalid_request_error", "echo");
  const std::string prompt = completion_prompt(b);
  respond(res, tok_.encode(prompt, /*add_special=*/true, /*parse_special=*/true), o, nullptr, json_rule_schema(format),
          o.echo ? &prompt : nullptr);
}

namespace {

// The pieces of one response that both the whole and the streamed form are made of.
struct Reply {
  bool chat;
  std::string id, model;
  int64_t created;
  json envelope(const char* object) const { return {{"id", id}, {"object", object}, {"created", created}, {"model", model}}; }
  // A streamed chunk: for chat a delta, for completions a text piece.
  json chunk(const json& delta_or_text, const json& finish = nullptr) const {
    json c = envelope(chat ? "chat.completion.chunk" : "text_completion");
    json choice = {{"index", 0}};
    if (chat) choice["delta"] = delta_or_text;
    else {
      choice["text"] = delta_or_text;
      choice["logprobs"] = nullptr;
    }
    choice["finish_reason"] = finish;
    c["choices"] = json::array({choice});
    return c;
  }
};

json usage(const Job& job) {
  const uint32_t p = job.prompt_tokens(), c = job.completion_tokens();
  return {{"prompt_tokens", p}, {"completion_tokens", c}, {"total_tokens", p + c},
          {"prompt_tokens_details", {{"cached_tokens", job.result().n_reused}}}};
}

ApiError job_error(const Job& job) { return failure(job.result(), "generation failed"); }

}  // namespace

void Server::respond(httplib::Response& res, std::vector<int32_t> ids, const GenOptions& o, const ChatPrompt* cp,
                     std::shared_ptr<const JsonSchema> json_rule, const std::string* echo) {
  if (ids.empty()) throw ApiError(400, "the prompt is empty", "invalid_request_error", cp ? "messages" : "prompt");
  if (ids.size() >= max_context_)
    throw ApiError(400, "the prompt is " + std::to_string(ids.size()) + " tokens but the context holds " +
                            std::to_string(max_context_) + " (prompt and reply together)",
                   "invalid_request_error", cp ? "messages" : "prompt", "context_length_exceeded");
  const uint32_t room = max_context_ - (uint32_t)ids.size();
  const uint32_t n_max = o.max_tokens < 0 ? room : (uint32_t)std::min<int64_t>(o.max_tokens, room);
  std::vector<TokenLogprob> echoed;  // the prompt's entries, before the reply's
  if (echo && o.top_logprobs >= 0) echoed = Job::score_prompt(sched_, tok_, ids, o.top_logprobs);
  auto job = Job::start(sched_, tok_, std::move(ids), n_max, o, cp ? cp->json_output : std::move(json_rule));
  Reply r{cp != nullptr, random_id(cp ? "chatcmpl-" : "cmpl-"), opts_.model_name, now_s()};

  if (!o.stream) {
    std::string text;
    while (!job->take(text, std::chrono::milliseconds(1000))) {}
    if (job->result().finish == Finish::Error) throw job_error(*job);
    json body;
    if (cp) {
      ParsedReply pr = parse_reply(cp->format, text, cp->tools_enabled, cp->reply);
      json msg = {{"role", "assistant"}, {"content", pr.content}};
      if (!pr.reasoning.empty()) msg["reasoning_content"] = pr.reasoning;
      const char* finish = job->finish_reason();
      if (!pr.tool_calls.empty()) {
        msg["tool_calls"] = tool_calls_json(pr.tool_calls);
        if (pr.content.empty()) msg["content"] = nullptr;
        finish = "tool_calls";
      }
      body = r.envelope("chat.completion");
      body["choices"] = json::array({{{"index", 0}, {"message", msg}, {"logprobs", nullptr}, {"finish_reason", finish}}});
    } else {
      body = r.envelope("text_completion");
      body["choices"] = json::array({{{"index", 0}, {"text", echo ? *echo + text : text}, {"logprobs", nullptr},
                                      {"finish_reason", job->finish_reason()}}});
    }
    if (o.top_logprobs >= 0) {
      std::vector<TokenLogprob> lps = std::move(echoed);
      job->take_logprobs(lps);
      body["choices"][0]["logprobs"] = cp ? chat_logprobs(tok_, lps) : completion_logprobs(tok_, lps);
    }
    body["usage"] = usage(*job);
    body["timings"] = job->timings();
    send_json(res, 200, body);
    return;
  }

  // Streaming: httplib calls the provider until it says done; each call sends what is new.
  struct Stream {
    std::shared_ptr<Job> job;
    Reply r;
    GenOptions o;
    std::unique_ptr<ToolCallStream> tools;  // chat only
    bool started = false;
    std::vector<TokenLogprob> lps;  // taken from the job, not yet sent (top_logprobs >= 0)
    size_t lp_offset = 0;           // completions: bytes of the tokens already sent
    // The logprobs field of the next chunk, with every entry taken so far (null when none are asked).
    json logprobs(const Tokenizer& tok) {
      if (o.top_logprobs < 0) return nullptr;
      json j = r.chat ? chat_logprobs(tok, lps) : completion_logprobs(tok, lps, lp_offset);
      for (const TokenLogprob& t : lps) lp_offset += r.chat ? 0 : tok.token_text(t.id).size();
      lps.clear();
      return j;
    }
  };
  auto st = std::make_shared<Stream>();
  st->job = job;
  st->r = r;
  st->o = o;
  if (cp) st->tools = std::make_unique<ToolCallStream>(cp->format, cp->tools_enabled, cp->reply);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st, this](size_t, httplib::DataSink& sink) {
        auto send = [&](const json& chunk) {
          std::string s = sse(chunk);
          return sink.write(s.data(), s.size());
        };
        auto with_logprobs = [&](json c) {
          if (st->o.top_logprobs >= 0) c["choices"][0]["logprobs"] = st->logprobs(tok_);
          return c;
        };
        auto send_delta = [&](const StreamDelta& d) {
          if (d.content.empty() && d.reasoning.empty()) return true;
          if (!st->r.chat) return send(with_logprobs(st->r.chunk(d.content)));
          json delta = json::object();
          if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
          if (!d.content.empty()) delta["content"] = d.content;
          return send(with_logprobs(st->r.chunk(delta)));
        };
        if (!st->started) {
          st->started = true;
          if (st->r.chat && !send(st->r.chunk({{"role", "assistant"}, {"content", ""}}))) return false;
        }
        std::string text;
        const bool done = st->job->take(text, std::chrono::milliseconds(200));
        if (st->o.top_logprobs >= 0) st->job->take_logprobs(st->lps);
        if (!text.empty()) {
          StreamDelta d = st->tools ? st->tools->push(text) : StreamDelta{text, ""};
          if (!send_delta(d)) return false;  // the client is gone: the job's owner lets go, generation stops
        }
        if (!done) return true;
        const Job& job = *st->job;
        if (job.result().finish == Finish::Error) {
          send(error_body(job_error(job)));
        } else {
          const char* finish = job.finish_reason();
          if (st->tools) {
            ParsedReply rest = st->tools->finish();
            if (!send_delta({rest.content, rest.reasoning})) return false;
            if (!rest.tool_calls.empty()) {
              if (!send(st->r.chunk({{"tool_calls", tool_calls_json(rest.tool_calls, true)}}))) return false;
              finish = "tool_calls";
            }
          }
          json last = with_logprobs(st->r.chunk(st->r.chat ? json::object() : json(""), finish));
          last["timings"] = job.timings();
          if (!send(last)) return false;
          if (st->o.include_usage) {
            json u = st->r.envelope(st->r.chat ? "chat.completion.chunk" : "text_completion");
            u["choices"] = json::array();
            u["usage"] = usage(job);
            if (!send(u)) return false;
          }
        }
        static const std::string kDone = "data: [DONE]\n\n";
        sink.write(kDone.data(), kDone.size());
        sink.done();
        return true;
      },
      [st](bool) { st->job->cancel(); });  // ends generation if still running (a no-op when finished)
}

void Server::run() {
  httplib::Server& s = *http_;
  int port = opts_.port;
  if (port == 0) {
    port = s.bind_to_any_port(opts_.host);
    if (port < 0) throw std::runtime_error("cannot listen on " + opts_.host + " (no free port)");
  } else if (!s.bind_to_port(opts_.host, port)) {
    throw std::runtime_error("cannot listen on " + opts_.host + ":" + std::to_string(port) +
                             " (address in use, or not an address of this machine)");
  }
  std::printf("ztvm serve: listening on http://%s:%d\n", opts_.host.find(':') != std::string::npos ? ("[" + opts_.host + "]").c_str() : opts_.host.c_str(), port);
  std::fflush(stdout);
  s.listen_after_bind();
}

void Server::stop() { http_->stop(); }

}  // namespace ztvm::server
