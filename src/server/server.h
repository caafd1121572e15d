// `ztvm serve`: the OpenAI-compatible HTTP API (cpp-httplib) over the Scheduler, and the chat page.
// HTTP threads parse and render requests; the scheduler's worker owns the GPU; they meet in a Job
// (job.h), through which generated text flows back to the HTTP thread that streams it.
#pragma once
#include <atomic>
#include <memory>
#include <string>

#include "engine/scheduler.h"
#include "model/model_file.h"
#include "text/chat_template.h"
#include "text/json_schema.h"
#include "server/chat_prompt.h"
#include "server/openai.h"
#include "server/tool_calls.h"
#include "text/tokenizer.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace ztvm::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0: any free port
  std::string api_key;             // non-empty: Bearer auth on everything but /health and the page
  std::string model_name;          // the id /v1/models reports
  uint32_t max_queue = 256;        // queued requests beyond this get a 503
  size_t max_body = 8u << 20;      // bytes; larger bodies get a 413
  bool verbose = false;            // log every request to stderr
  Pooling pooling = Pooling::Mean; // /v1/embeddings (choose_pooling: the model's unless asked)
};

class Server {
 public:
  // Everything is borrowed and must outlive the server.
  Server(ServerOptions opts, const ModelFile& model, const Tokenizer& tok, const ModelChatTemplate& tmpl,
         Scheduler& sched, uint32_t max_context);
  ~Server();

  // Binds, prints "ztvm serve: listening on http://HOST:PORT" on stdout, and serves until stop().
  // Throws std::runtime_error when the address cannot be bound.
  void run();
  void stop();  // callable from any thread

 private:
  ChatPrompt render_chat_prompt(const json& body) const;
  std::vector<int32_t> encode_chat(const std::string& prompt) const;
  // Generates for `ids` and answers, streamed or whole; `chat` selects the response shape.
  // json_rule: for /v1/completions' response_format (a chat's is in ChatPrompt).
  // echo: completions with `echo`, the prompt's text (the reply follows it, and with logprobs so do
  // the prompt tokens' entries).
  void respond(httplib::Response& res, std::vector<int32_t> ids, const GenOptions& o, const ChatPrompt* chat,
               std::shared_ptr<const JsonSchema> json_rule = nullptr, const std::string* echo = nullptr);

  void routes();
  // Ollama's API (server/ollama.cpp): its generate and chat through the same prompt and Job as ours.
  void ollama_routes();
  void ollama_generate(const httplib::Request& req, httplib::Response& res, bool chat);
  json ollama_model_entry() const;
  void chat(const httplib::Request& req, httplib::Response& res);
  void complete(const httplib::Request& req, httplib::Response& res);
  bool authorized(const httplib::Request& req) const;

  ServerOptions opts_;
  const ModelFile& model_;
  const Tokenizer& tok_;
  ModelChatTemplate tmpl_src_;
  std::unique_ptr<ChatTemplate> tmpl_;
  Scheduler& sched_;
  uint32_t max_context_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace ztvm::server
