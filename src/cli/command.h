// Subcommands register themselves: each src/cli/cmd_<name>.cpp defines one static Command.
// main.cpp looks the name up, so adding a command never touches another file.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
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

// Commands that write a file refuse to replace one they read: the output is written beside and then
// renamed over its path, which would throw the input away (an F32 original converted to Q8_0 onto itself).
inline void refuse_output_over_input(const std::string& out, const std::string& in, const char* in_option) {
  std::error_code ec;
  if (!in.empty() && std::filesystem::equivalent(out, in, ec))
    throw std::runtime_error("-o " + out + " is the " + in_option + " file itself; write to another path");
}

}  // namespace ztvm::cli
