// ztvm: one binary, many subcommands (see `ztvm help`). Errors a user can cause end as one line
// on stderr and exit status 1; nothing here prints a stack trace.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/command.h"

namespace ztvm::cli {

std::map<std::string, CommandInfo>& command_table() {
  static std::map<std::string, CommandInfo> table;
  return table;
}

Command::Command(const char* name, const char* summary, Fn fn) {
  command_table()[name] = CommandInfo{summary, std::move(fn)};
}

static void print_help() {
  std::printf("ztvm — LLM inference on hand-written WebGPU kernels\n\nusage: ztvm <command> [options]\n\n");
  for (auto& [name, info] : command_table()) std::printf("  %-10s %s\n", name.c_str(), info.summary.c_str());
  std::printf("\n`ztvm <command> --help` shows a command's options.\n");
}

}  // namespace ztvm::cli

int main(int argc, char** argv) {
  using namespace ztvm::cli;
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_help();
    return argc < 2 ? 1 : 0;
  }
  auto it = command_table().find(argv[1]);
  if (it == command_table().end()) {
    std::fprintf(stderr, "ztvm: unknown command '%s' (try `ztvm help`)\n", argv[1]);
    return 1;
  }
  std::string prog = std::string("ztvm ") + argv[1];
  std::vector<char*> args(argv + 1, argv + argc);
  args[0] = prog.data();
  try {
    return it->second.fn((int)args.size(), args.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ztvm %s: error: %s\n", argv[1], e.what());
    return 1;
  }
}
