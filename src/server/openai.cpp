#include "server/openai.h"

#include <algorithm>
#include <cmath>

namespace ztvm::server {

ApiError::ApiError(int status, const std::string& message, std::string type, std::string param, std::string code)
    : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)), code(std::move(code)) {}

json error_body(const ApiError& e) {
  json err = {{"message", e.what()}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return {{"error", err}};
}

static ApiError bad(const std::string& param, const std::string& msg) { return ApiError(400, msg, "invalid_request_error", param); }

json parse_body(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    // nlohmann's message names the byte offset and the reason (ill-formed UTF-8 included). A
    // number past double's range (1e999) is an out_of_range, not a parse_error: the same 400.
    std::string what = e.what();
    auto at = what.find("] ");
    throw ApiError(400, "the request body is not valid JSON: " + (at == std::string::npos ? what : what.substr(at + 2)));
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return j;
}

// Optional numeric field: absent or null keeps the default; anything else must be a number in range.
static bool number(const json& b, const char* key, double lo, double hi, double& out) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return false;
  if (!it->is_number()) throw bad(key, std::string("'") + key + "' must be a number");
  double v = it->get<double>();
  if (!(v >= lo && v <= hi))
    throw bad(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  out = v;
  return true;
}

static bool integer(const json& b, const char* key, int64_t lo, int64_t hi, int64_t& out) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return false;
  if (!it->is_number_integer() && !(it->is_number_float() && it->get<double>() == (double)(int64_t)it->get<double>()))
    throw bad(key, std::string("'") + key + "' must be an integer");
  int64_t v = it->is_number_unsigned() ? (int64_t)std::min<uint64_t>(it->get<uint64_t>(), INT64_MAX) : it->get<int64_t>();
  if (v < lo || v > hi) throw bad(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  out = v;
  return true;
}

static bool boolean(const json& b, const char* key, bool& out) {
  auto it = b.find(key);
  if (it == b.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw bad(key, std::string("'") + key + "' must be true or false");
  out = it->get<bool>();
  return true;
}

GenOptions parse_gen_options(const json& b) {
  GenOptions o;
  // llama-server's sampling defaults, so the same request samples alike on both.
  o.sampling.temperature = 0.8f;
  double d;
  int64_t i;
  if (auto it = b.find("model"); it != b.end() && !it->is_null() && !it->is_string()) throw bad("model", "'model' must be a string");
  for (const char* key : {"max_tokens", "max_completion_tokens", "n_predict"})
    if (integer(b, key, key[0] == 'n' ? -1 : 0, INT32_MAX, i)) o.max_tokens = i;
  if (number(b, "temperature", 0, 2, d)) o.sampling.temperature = (float)d;
  if (number(b, "top_p", 0, 1, d)) o.sampling.top_p = (float)d;
  if (number(b, "min_p", 0, 1, d)) o.sampling.min_p = (float)d;
  if (integer(b, "top_k", 0, INT32_MAX, i)) o.sampling.top_k = (int32_t)i;
  if (number(b, "presence_penalty", -2, 2, d)) o.sampling.presence_penalty = (float)d;
  if (number(b, "frequency_penalty", -2, 2, d)) o.sampling.frequency_penalty = (float)d;
  if (number(b, "repeat_penalty", 0, 10, d)) o.sampling.repeat_penalty = (float)d;
  if (integer(b, "seed", INT64_MIN, INT64_MAX, i)) o.sampling.seed = (uint64_t)i;
  else o.sampling.seed = 0x5eed;  // fixed: without a seed, runs are still reproducible
  if (integer(b, "n", 1, 128, i) && i != 1) throw bad("n", "only n = 1 is supported");
  if (auto it = b.find("logprobs"); it != b.end() && !it->is_null()) {
    if (it->is_boolean()) {  // chat: logprobs true, top_logprobs 0..20
      if (it->get<bool>()) o.top_logprobs = 0;
      if (integer(b, "top_logprobs", 0, 20, i)) {
        if (!it->get<bool>()) throw bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        o.top_logprobs = (int)i;
      }
    } else if (integer(b, "logprobs", 0, 20, i)) {  // completions: the number of alternatives
      o.top_logprobs = (int)i;
    }
  } else if (integer(b, "top_logprobs", 0, 20, i)) {
    throw bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  boolean(b, "echo", o.echo);
  boolean(b, "stream", o.stream);
  if (auto it = b.find("stream_options"); it != b.end() && !it->is_null()) {
    if (!it->is_object()) throw bad("stream_options", "'stream_options' must be an object");
    boolean(*it, "include_usage", o.include_usage);
  }
  if (auto it = b.find("stop"); it != b.end() && !it->is_null()) {
    if (it->is_string()) {
      o.stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      for (const auto& s : *it) {
        if (!s.is_string()) throw bad("stop", "'stop' must be a string or a list of strings");
        o.stop.push_back(s.get<std::string>());
      }
      if (o.stop.size() > 16) throw bad("stop", "at most 16 stop strings");
    } else {
      throw bad("stop", "'stop' must be a string or a list of strings");
    }
    for (const auto& s : o.stop)
      if (s.empty()) throw bad("stop", "stop strings must not be empty");
  }
  return o;
}

// Content: a string, null, or a list of {type: "text", text} parts (joined).
static std::string content_text(const json& c, size_t index) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (c.is_null()) return "";
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw bad(param, "'" + param + "' must be a string or a list of content parts");
  std::string out;
  for (const auto& part : c) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      throw bad(param, "'" + param + "': only {\"type\": \"text\", \"text\": ...} parts are supported");
    out += part["text"].get<std::string>();
  }
  return out;
}

json normalize_messages(const json& messages) {
  if (!messages.is_array()) throw bad("messages", "'messages' must be a list of messages");
  if (messages.empty()) throw bad("messages", "'messages' must not be empty");
  json out = json::array();
  for (size_t i = 0; i < messages.size(); i++) {
    const json& m = messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad(at, "'" + at + "' must be an object");
    auto role_it = m.find("role");
    if (role_it == m.end() || !role_it->is_string()) throw bad(at + ".role", "'" + at + ".role' must be a string");
    std::string role = role_it->get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      throw bad(at + ".role", "'" + at + ".role' must be system, developer, user, assistant or tool (got '" + role + "')");
    json n = {{"role", role}, {"content", content_text(m.contains("content") ? m["content"] : json(), i)}};
    if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      const json& calls = m["tool_calls"];
      if (!calls.is_array()) throw bad(at + ".tool_calls", "'" + at + ".tool_calls' must be a list");
      json conv = json::array();
      for (const auto& c : calls) {
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
            !c["function"]["name"].is_string())
          throw bad(at + ".tool_calls", "each tool call needs function.name");
        json fn = {{"name", c["function"]["name"]}};
        json args = c["function"].value("arguments", json("{}"));
        if (args.is_string()) {  // the API sends a JSON string; templates want the object
          json parsed = json::parse(args.get<std::string>(), nullptr, false);
          args = parsed.is_discarded() ? args : parsed;
        }
        fn["arguments"] = args;
        json call = {{"type", "function"}, {"function", fn}};
        if (c.contains("id") && c["id"].is_string()) call["id"] = c["id"];
        conv.push_back(call);
      }
      if (!conv.empty()) n["tool_calls"] = conv;
    }
    if (role == "tool") {
      if (auto id = m.find("tool_call_id"); id != m.end() && id->is_string()) n["tool_call_id"] = *id;
      if (auto nm = m.find("name"); nm != m.end() && nm->is_string()) n["name"] = *nm;
    }
    out.push_back(n);
  }
  return out;
}

std::string completion_prompt(const json& body) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw bad("prompt", "'prompt' is required");
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) return (*it)[0].get<std::string>();
  if (it->is_array() && it->size() > 1) throw bad("prompt", "only one prompt per request is supported");
  throw bad("prompt", "'prompt' must be a string");
}

TokenLogprob token_logprob(const std::vector<float>& logits, int32_t picked, int n_top) {
  float mx = -INFINITY;
  for (float x : logits) mx = std::max(mx, x);
  double sum = 0;
  for (float x : logits) sum += std::exp((double)x - mx);
  const double lse = mx + std::log(sum);
  TokenLogprob t{picked, (float)(logits[(size_t)picked] - lse), {}};
  if (n_top > 0) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); i++) ids[i] = (int32_t)i;
    const size_t k = std::min<size_t>((size_t)n_top, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + (std::ptrdiff_t)k, ids.end(), [&](int32_t a, int32_t b) {
      return logits[(size_t)a] > logits[(size_t)b] || (logits[(size_t)a] == logits[(size_t)b] && a < b);
    });
    for (size_t i = 0; i < k; i++) t.top.push_back({ids[i], (float)(logits[(size_t)ids[i]] - lse)});
  }
  return t;
}

static json token_entry(const Tokenizer& tok, int32_t id, float logprob) {
  const std::string& text = tok.token_text(id);
  json bytes = json::array();
  for (unsigned char c : text) bytes.push_back((int)c);
  // A piece of a multi-byte character is not valid UTF-8 on its own: its text is sent replaced.
  return {{"token", text}, {"logprob", logprob}, {"bytes", bytes}};
}

json chat_logprobs(const Tokenizer& tok, const std::vector<TokenLogprob>& lps) {
  json content = json::array();
  for (const TokenLogprob& t : lps) {
    json e = token_entry(tok, t.id, t.logprob);
    json top = json::array();
    for (const auto& [id, lp] : t.top) top.push_back(token_entry(tok, id, lp));
    e["top_logprobs"] = top;
    content.push_back(std::move(e));
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs(const Tokenizer& tok, const std::vector<TokenLogprob>& lps, size_t offset0) {
  json tokens = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
  size_t at = offset0;
  for (const TokenLogprob& t : lps) {
    const std::string& text = tok.token_text(t.id);
    tokens.push_back(text);
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[tok.token_text(id)] = lp;
    logprobs.push_back(std::isnan(t.logprob) ? json(nullptr) : json(t.logprob));
    tops.push_back(std::isnan(t.logprob) ? json(nullptr) : top);
    offsets.push_back(at);
    at += text.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

}  // namespace ztvm::server
