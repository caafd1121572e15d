// Subcommands register themselves: each src/cli/cmd_<name>.cpp defines one static Command.
// main.cpp looks the name up, so adding a command never touches another file.
#pragma once
#include <functional>
#include <map>
#include <string>

namespace ztvm::cli {

struct Command {
  using Fn = std::function<int(int argc, char** argv)>;  // argv[0] is "ztvm <name>"
  Command(const char* name, const char* summary, Fn fn);
};

struct CommandInfo {
  std::string summary;
  Command::Fn fn;
};
std::map<std::string, CommandInfo>& command_table();

}  // namespace ztvm::cli
