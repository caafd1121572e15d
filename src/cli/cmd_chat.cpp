// ztvm chat: interactive multi-turn chat with the model's own template. Replies stream to stdout;
// status (load, stats, notices) goes to stderr. Works the same with stdin from a pipe, minus the
// prompt and colors.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/chat_session.h"
#include "cli/command.h"
#include "cli/engine_setup.h"

namespace ztvm::cli {
namespace {

// Ctrl-C count since the last reset; the handler only touches this lock-free atomic.
std::atomic<int> g_sigints{0};
void on_sigint(int) { g_sigints.fetch_add(1, std::memory_order_relaxed); }

// While a reply runs, SA_RESTART keeps the GPU waits inside Dawn from seeing EINTR. At the prompt the
// handler is installed without it, so a blocked read returns and the loop can exit.
void install_sigint(bool restart) {
  struct sigaction sa{};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart ? SA_RESTART : 0;
  sigaction(SIGINT, &sa, nullptr);
}

enum class Input { Line, Eof, Interrupted };

// One line from stdin without its newline.
Input read_line(std::string& line) {
  line.clear();
  for (;;) {
    int c = std::fgetc(stdin);
    if (c == EOF) {
      if (std::ferror(stdin) && errno == EINTR) {
        std::clearerr(stdin);
        return Input::Interrupted;
      }
      return line.empty() ? Input::Eof : Input::Line;  // a last line without '\n' still counts
    }
    if (c == '\n') break;
    line += (char)c;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return Input::Line;
}

void write_out(std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

const char* kHelp = "commands: /reset (forget the conversation), /exit (or Ctrl-D); Ctrl-C stops a reply";

int run_chat(int argc, char** argv) {
  CLI::App app{"Chat with a model, one turn per line of input", argv[0]};
  EngineOptions eo;
  eo.add_to(app, /*model_required=*/false);
  ChatConfig cfg;
  SamplingParams& sp = cfg.sampling;
  app.add_option("--system", cfg.system, "system message");
  app.add_option("-n,--n-predict", cfg.n_max, "tokens per reply at most")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--temp", sp.temperature, "sampling temperature (0: greedy)")->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", sp.top_k, "sample among the k most likely tokens (0: all)")->check(CLI::Range(0, 1 << 30));
  app.add_option("--top-p", sp.top_p, "nucleus sampling threshold (1: off)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", sp.min_p, "drop tokens below min-p times the top probability (0: off)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", sp.seed, "sampling seed");
  app.add_flag("--think", cfg.think, "let the model think first (templates with enable_thinking)");
  CLI11_PARSE(app, argc, argv);

  Engine e = load_engine(eo);
  auto tok = Tokenizer::from_model_path(e.model->path);
  ModelChatTemplate mt = load_model_chat_template(e.model->path);
  ChatSession chat(*e.generator, *tok, e.forward->max_context(), mt, cfg);
  if (chat.uses_fallback_template())
    std::fprintf(stderr, "note: %s has no chat template; using the ChatML fallback\n", e.model->path.c_str());

  const bool tty_in = isatty(STDIN_FILENO), color = tty_in && isatty(STDOUT_FILENO);
  if (tty_in) std::fprintf(stderr, "%s\n", kHelp);
  std::string line;
  for (;;) {
    install_sigint(/*restart=*/false);
    g_sigints.store(0);
    if (tty_in) write_out(color ? "\x1b[1;32m> \x1b[0m" : "> ");
    Input in = read_line(line);
    // Ctrl-C at the prompt (or while typing) ends the session, like EOF.
    if (in == Input::Interrupted || g_sigints.load() > 0) {
      if (tty_in) write_out("\n");
      break;
    }
    if (in == Input::Eof) {
      if (tty_in) write_out("\n");
      break;
    }
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      chat.reset();
      std::fprintf(stderr, "(conversation cleared)\n");
      continue;
    }
    if (line == "/help" || (line[0] == '/' && line.find(' ') == std::string::npos)) {
      std::fprintf(stderr, "%s\n", kHelp);
      continue;
    }

    install_sigint(/*restart=*/true);
    g_sigints.store(0);
    if (color) write_out("\x1b[36m");
    TurnResult r;
    try {
      r = chat.reply(line, write_out, [] { return g_sigints.load(std::memory_order_relaxed) > 0; });
    } catch (const std::exception& ex) {
      // A message that cannot fit, or a template that refuses the conversation: this turn is skipped
      // and the session goes on.
      if (color) write_out("\x1b[0m");
      std::fprintf(stderr, "ztvm: %s\n", ex.what());
      continue;
    }
    if (color) write_out("\x1b[0m");
    write_out("\n");
    if (r.dropped)
      std::fprintf(stderr, "(context full: dropped the %u oldest messages of the conversation)\n", r.dropped);
    if (r.interrupted) std::fprintf(stderr, "(reply stopped by Ctrl-C)\n");
    else if (!r.ended) std::fprintf(stderr, "(reply cut at %u tokens)\n", r.stats.n_generated);
    const GenerateStats& st = r.stats;
    double tps = st.n_generated > 1 && st.decode_ms > 0 ? (st.n_generated - 1) / (st.decode_ms / 1e3) : 0;
    std::fprintf(stderr, "(prefilled %u of %u prompt tokens, TTFT %.1f ms, %.1f tok/s)\n", st.n_prefilled,
                 st.n_prompt, st.ttft_ms, tps);
  }
  std::signal(SIGINT, SIG_DFL);
  return 0;
}

}  // namespace

static Command reg("chat", "interactive chat with the model's template (-m MODEL [--system TEXT])", run_chat);

}  // namespace ztvm::cli
