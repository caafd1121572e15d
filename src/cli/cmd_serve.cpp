// ztvm serve: the OpenAI-compatible server and chat page (src/server/). Loads the model once, then
// serves until Ctrl-C / SIGTERM; status goes to stderr, the "listening on" line to stdout.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/command.h"
#include "engine/embedding.h"
#include "cli/engine_setup.h"
#include "server/server.h"

namespace ztvm::cli {
namespace {

std::atomic<bool> g_quit{false};
void on_signal(int) { g_quit = true; }

int run_serve(int argc, char** argv) {
  CLI::App app{"OpenAI-compatible HTTP server with a chat page at /"};
  EngineOptions eo;
  eo.add_to(app, /*model_required=*/false);
  server::ServerOptions so;
  uint32_t parallel = 4, kv_tokens = 0;
  std::string template_file;
  app.add_option("--host", so.host, "address to listen on (default 127.0.0.1: this machine only)");
  app.add_option("--port", so.port, "port (0: any free port)")->check(CLI::Range(0, 65535));
  app.add_option("--api-key", so.api_key, "require 'Authorization: Bearer KEY' on the API");
  app.add_option("--alias", so.model_name, "model id reported by /v1/models (default: the file name)");
  app.add_option("--np,--parallel", parallel, "requests generating at once; more wait in the queue")->check(CLI::Range(1, 64));
  app.add_option("--kv-tokens", kv_tokens, "KV cache size in tokens shared by all requests (default: ctx x parallel)");
  app.add_option("--max-queue", so.max_queue, "queued requests beyond which the server answers 503");
  app.add_option("--chat-template-file", template_file, "Jinja chat template to use instead of the model's");
  std::string pooling;
  app.add_option("--pooling", pooling, "how /v1/embeddings pools: mean | cls | last (default: the model's, else mean)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  app.add_flag("-v,--verbose", so.verbose, "log every request");
  CLI11_PARSE(app, argc, argv);

  std::string template_src;
  if (!template_file.empty()) {
    std::ifstream f(template_file, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read chat template " + template_file);
    std::stringstream ss;
    ss << f.rdbuf();
    template_src = ss.str();
  }
  eo.sequences = parallel;
  eo.kv_tokens = kv_tokens;
  Engine e = load_engine(eo);
  const uint32_t ctx = e.forward->max_context();
  e.generator.reset();  // the scheduler's sequences own the KV cache now
  auto tok = Tokenizer::from_model_path(e.model->path);
  ModelChatTemplate mt = load_model_chat_template(e.model->path);
  if (!template_file.empty()) mt.source = template_src;
  if (mt.source.empty()) std::fprintf(stderr, "ztvm serve: the model has no chat template; using the ChatML fallback\n");
  so.pooling = choose_pooling(e.model->config, pooling.empty() ? Pooling::Unset : parse_pooling(pooling));
  if (so.model_name.empty()) so.model_name = std::filesystem::path(e.model->path).filename().string();

  Scheduler sched(*e.forward, parallel, so.max_queue);
  if (const char* n = std::getenv("ZTVM_FAULT_LOSE_DEVICE_AFTER")) sched.lose_device_after(std::strtoull(n, nullptr, 10));
  server::Server srv(so, *e.model, *tok, mt, sched, ctx);
  std::fprintf(stderr, "ztvm serve: %u parallel, KV cache %u tokens, queue %u; chat page at /\n", parallel,
               e.forward->kv_pages() * Forward::kPage, so.max_queue);
  if (so.host != "127.0.0.1" && so.host != "localhost" && so.api_key.empty())
    std::fprintf(stderr, "ztvm serve: warning: listening on %s without --api-key: anyone who can reach it can use it\n",
                 so.host.c_str());

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is a failed write, not the end of the server
  // Stops the server on a signal, or when the GPU is lost: then no request can succeed again, so the
  // clients get their 503s, and the process exits non-zero for its supervisor to restart it.
  std::string lost;
  std::thread watcher([&] {
    while (!g_quit && (lost = sched.device_lost()).empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!lost.empty()) {
      std::fprintf(stderr, "ztvm serve: %s; answering 503 for 2 s, then exiting\n", lost.c_str());
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    srv.stop();
  });
  try {
    srv.run();
  } catch (...) {
    g_quit = true;
    watcher.join();
    throw;
  }
  g_quit = true;
  watcher.join();
  if (!lost.empty()) {
    std::fprintf(stderr, "ztvm serve: stopped: the GPU device was lost\n");
    return 3;
  }
  std::fprintf(stderr, "ztvm serve: stopped\n");
  return 0;
}

}  // namespace

static Command reg("serve", "OpenAI-compatible HTTP server and chat page ([-m MODEL] [--host H] [--port N] [--api-key K])", run_serve);

}  // namespace ztvm::cli
