#include "server/embeddings.h"

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "engine/embedding.h"
#include "server/job.h"

namespace ztvm::server {

namespace {

constexpr size_t kMaxInputs = 2048;  // OpenAI's limit on inputs a request

ApiError input_error(const std::string& msg) { return ApiError(400, msg, "invalid_request_error", "input"); }

// A list of token ids, checked against the vocabulary.
std::vector<int32_t> token_list(const json& a, const Tokenizer& tok, const std::string& where) {
  std::vector<int32_t> ids;
  for (const json& t : a) {
    if (!t.is_number_integer()) throw input_error(where + " must hold token ids (integers)");
    const int64_t id = t.get<int64_t>();
    if (id < 0 || (uint64_t)id >= tok.vocab_size())
      throw input_error(where + " holds token id " + std::to_string(id) + ", outside 0.." + std::to_string(tok.vocab_size() - 1));
    ids.push_back((int32_t)id);
  }
  return ids;
}

}  // namespace

EmbeddingRequest parse_embedding_request(const json& body, const Tokenizer& tok, uint32_t max_context,
                                         uint32_t hidden_size) {
  EmbeddingRequest r;
  // llama-server's own endpoint calls it `content`; OpenAI's `input`.
  const char* key = body.contains("input") ? "input" : body.contains("content") ? "content" : nullptr;
  if (!key) throw input_error("'input' is required: a string, a list of strings or a list of token id lists");
  const json& in = body[key];
  auto text = [&](const std::string& s, const std::string& where) {
    // As llama-server: BOS/EOS as the model adds them, special-token text such as <|endoftext|> parsed.
    std::vector<int32_t> ids = tok.encode(s, /*add_special=*/true, /*parse_special=*/true);
    if (s.empty() || ids.empty()) throw input_error(where + " is empty");
    return ids;
  };
  if (in.is_string()) {
    r.inputs.push_back(text(in.get<std::string>(), "'input'"));
  } else if (in.is_array() && !in.empty() && in[0].is_number_integer()) {
    r.inputs.push_back(token_list(in, tok, "'input'"));
  } else if (in.is_array() && !in.empty()) {
    if (in.size() > kMaxInputs)
      throw input_error("'input' holds " + std::to_string(in.size()) + " items; at most " + std::to_string(kMaxInputs));
    for (size_t i = 0; i < in.size(); i++) {
      const std::string where = "input[" + std::to_string(i) + "]";
      if (in[i].is_string()) r.inputs.push_back(text(in[i].get<std::string>(), where));
      else if (in[i].is_array() && !in[i].empty()) r.inputs.push_back(token_list(in[i], tok, where));
      else throw input_error(where + " must be a non-empty string or list of token ids");
    }
  } else {
    throw input_error("'input' must be a non-empty string, list of strings or list of token id lists");
  }
  for (size_t i = 0; i < r.inputs.size(); i++)
    if (r.inputs[i].size() > max_context)
      throw input_error("input " + std::to_string(i) + " is " + std::to_string(r.inputs[i].size()) +
                        " tokens but the context holds " + std::to_string(max_context));

  if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
    const json& f = body["encoding_format"];
    if (!f.is_string() || (f != "float" && f != "base64"))
      throw ApiError(400, "'encoding_format' must be \"float\" or \"base64\"", "invalid_request_error", "encoding_format");
    r.base64 = f == "base64";
  }
  if (body.contains("dimensions") && !body["dimensions"].is_null()) {
    const json& d = body["dimensions"];
    if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > hidden_size)
      throw ApiError(400, "'dimensions' must be an integer in 1.." + std::to_string(hidden_size), "invalid_request_error",
                     "dimensions");
    r.dimensions = d.get<uint32_t>();
  }
  return r;
}

json run_embeddings(Scheduler& sched, const EmbeddingRequest& r, Pooling pooling, const std::string& model_name) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0;
    std::vector<SeqResult> results;
  };
  auto sh = std::make_shared<Shared>();
  sh->results.resize(r.inputs.size());
  std::vector<std::shared_ptr<SeqRequest>> reqs;
  for (size_t i = 0; i < r.inputs.size(); i++) {
    auto q = std::make_shared<SeqRequest>();
    q->prompt = r.inputs[i];
    q->embed = pooling;
    q->on_token = [](int32_t) { return false; };
    q->on_done = [sh, i](const SeqResult& res) {
      std::lock_guard<std::mutex> lk(sh->mu);
      sh->results[i] = res;
      sh->done++;
      sh->cv.notify_all();
    };
    if (!sched.submit(q)) {
      for (auto& earlier : reqs) earlier->cancelled = true;  // nobody will read them
      throw ApiError(503, "the server is busy: too many queued requests", "server_error");
    }
    reqs.push_back(q);
  }
  {
    std::unique_lock<std::mutex> lk(sh->mu);
    sh->cv.wait(lk, [&] { return sh->done == r.inputs.size(); });
  }
  json data = json::array();
  size_t n_tokens = 0;
  for (size_t i = 0; i < r.inputs.size(); i++) {
    SeqResult& res = sh->results[i];
    if (res.finish != Finish::Stopped || res.embedding.empty())
      throw failure(res, "embedding failed");
    if (r.dimensions) keep_dimensions(res.embedding, r.dimensions);
    json e = {{"object", "embedding"}, {"index", i}};
    e["embedding"] = r.base64 ? json(base64_floats(res.embedding)) : json(res.embedding);
    data.push_back(std::move(e));
    n_tokens += r.inputs[i].size();
  }
  return {{"object", "list"}, {"data", std::move(data)}, {"model", model_name},
          {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
}

std::string base64_floats(const std::vector<float>& v) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());  // the host is little-endian (as every GPU host we run on)
  std::string out;
  out.reserve((b.size() + 2) / 3 * 4);
  for (size_t i = 0; i < b.size(); i += 3) {
    const uint32_t n = (uint32_t)b[i] << 16 | (i + 1 < b.size() ? (uint32_t)b[i + 1] << 8 : 0) |
                       (i + 2 < b.size() ? (uint32_t)b[i + 2] : 0);
    out += abc[n >> 18 & 63];
    out += abc[n >> 12 & 63];
    out += i + 1 < b.size() ? abc[n >> 6 & 63] : '=';
    out += i + 2 < b.size() ? abc[n & 63] : '=';
  }
  return out;
}

}  // namespace ztvm::server
