// Shared by the CLI tests: run the ztvm binary (ctest passes its path in ZTVM_BIN) and capture
// stdout, stderr and the exit status separately.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ztvm::test {

struct CliRun {
  int status;
  std::string out, err;
};

// Runs `ztvm ARGS` (shell syntax).
inline CliRun run_ztvm(const std::string& args) {
  namespace fs = std::filesystem;
  const char* bin = std::getenv("ZTVM_BIN");
  EXPECT_NE(bin, nullptr) << "ZTVM_BIN is not set (CTest sets it)";
  fs::path err_file = fs::temp_directory_path() / ("ztvm_cli_err_" + std::to_string(::getpid()));
  std::string cmd = std::string(bin ? bin : "ztvm") + " " + args + " 2>" + err_file.string();
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream f(err_file);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  fs::remove(err_file);
  return r;
}

}  // namespace ztvm::test
