// The OpenAI API's request and error shapes: a request body is checked field by field (wrong types
// and out-of-range values are a 400 naming the field, unknown fields are ignored, as OpenAI and
// llama-server do) and turned into what the engine needs.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/sampling.h"
#include "text/tokenizer.h"

namespace ztvm::server {

using json = nlohmann::ordered_json;

// An error the client caused (4xx) or the server hit (5xx), answered as
// {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error {
  ApiError(int status, const std::string& message, std::string type = "invalid_request_error",
           std::string param = "", std::string code = "");
  int status;
  std::string type, param, code;
};
json error_body(const ApiError& e);

// What a completion request asks for, beyond the prompt.
struct GenOptions {
  int64_t max_tokens = -1;          // -1: until the context is full
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;       // stream_options.include_usage
  // -1: no logprobs. 0..20: each generated token's log probability and this many of the most likely
  // alternatives (chat: logprobs true + top_logprobs; completions: logprobs N).
  int top_logprobs = -1;
  bool echo = false;  // completions: the prompt before the reply (and its tokens' logprobs)
};

// One generated token's log probability (log-softmax of the model's logits, before sampling's
// temperature and penalties, as OpenAI reports them) and the most likely alternatives at its step.
struct TokenLogprob {
  int32_t id;
  float logprob;
  std::vector<std::pair<int32_t, float>> top;  // most likely first
};
TokenLogprob token_logprob(const std::vector<float>& logits, int32_t picked, int n_top);
// The response fields: chat's {"content": [{token, logprob, bytes, top_logprobs}]}, and completions'
// {"tokens", "token_logprobs", "top_logprobs", "text_offset"} (offsets counted from `offset0`). An
// entry with a NaN logprob (a text's first token, which nothing predicts) is answered with nulls.
json chat_logprobs(const Tokenizer& tok, const std::vector<TokenLogprob>& lps);
json completion_logprobs(const Tokenizer& tok, const std::vector<TokenLogprob>& lps, size_t offset0 = 0);

// Parses the body text: invalid JSON (broken UTF-8 included) or a non-object is a 400.
json parse_body(const std::string& body);

// Fields shared by /v1/chat/completions and /v1/completions.
GenOptions parse_gen_options(const json& body);

// Chat messages in the form templates expect: roles checked, "developer" read as "system", content
// given as a list of text parts joined into one string, tool-call arguments (a JSON string in the
// API) parsed into objects, which is what templates iterate over.
json normalize_messages(const json& messages);

// The legacy completions prompt: a string, or a list holding one string.
std::string completion_prompt(const json& body);

}  // namespace ztvm::server
