// `ztvm chat` driven through a pipe on stories260K (no chat template: the ChatML fallback). The
// model's words do not matter here; the mechanics do: turns, prefix reuse read from the stats line
// on stderr, /reset, EOF, and context overflow.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace {

const std::string kModel = std::string(ZTVM_TESTDATA) + "/stories260K/stories260K-f32.gguf";

struct Turn {
  uint32_t prefilled, prompt;
};

struct ChatRun {
  int status;
  std::string out, err;
  std::vector<Turn> turns;  // from the "(prefilled X of Y prompt tokens, ...)" lines
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `ztvm chat -m stories260K <args>` with `input` as its stdin (a file, so not a terminal).
ChatRun chat(const std::string& input, const std::string& args) {
  const char* bin = std::getenv("ZTVM_BIN");
  EXPECT_NE(bin, nullptr) << "ZTVM_BIN is not set (CTest sets it)";
  const std::string tag = std::to_string(::getpid());
  const fs::path tmp = fs::temp_directory_path();
  fs::path in = tmp / ("ztvm_chat_in_" + tag), out = tmp / ("ztvm_chat_out_" + tag), err = tmp / ("ztvm_chat_err_" + tag);
  std::ofstream(in, std::ios::binary) << input;
  std::string cmd = std::string(bin ? bin : "ztvm") + " chat -m " + kModel + " " + args + " <" + in.string() + " >" +
                    out.string() + " 2>" + err.string();
  int st = std::system(cmd.c_str());
  ChatRun r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(in);
  fs::remove(out);
  fs::remove(err);
  static const std::regex stats(R"(\(prefilled (\d+) of (\d+) prompt tokens, TTFT [0-9.]+ ms, [0-9.]+ tok/s\))");
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), stats), end; it != end; ++it)
    r.turns.push_back({(uint32_t)std::stoul((*it)[1]), (uint32_t)std::stoul((*it)[2])});
  return r;
}

}  // namespace

TEST(CliChat, HelloThenExit) {
  ChatRun r = chat("Hello\n/exit\n", "-n 16");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  ASSERT_EQ(r.turns.size(), 1u) << r.err;
  EXPECT_EQ(r.turns[0].prefilled, r.turns[0].prompt);  // a fresh cache: everything is computed
  EXPECT_NE(r.err.find("ChatML fallback"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("> "), std::string::npos) << "no prompt when stdin is not a terminal: " << r.out;
}

// Each turn re-renders the whole conversation; only what follows the cached prefix is prefilled.
TEST(CliChat, LaterTurnsReuseTheCachedPrefix) {
  ChatRun r = chat("Hello\nTell me about the cat\nWhat happened next?\n/exit\n",
                   "-n 16 -c 512 --system 'You tell stories.'");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.turns.size(), 3u) << r.err;
  EXPECT_EQ(r.turns[0].prefilled, r.turns[0].prompt);
  for (int t : {1, 2}) {
    EXPECT_GT(r.turns[t].prompt, r.turns[t - 1].prompt) << "turn " << t + 1 << " holds the conversation so far";
    EXPECT_LT(r.turns[t].prefilled, r.turns[t].prompt) << "turn " << t + 1 << ": " << r.err;
    // At least the whole previous prompt is reused, since the history renders to the same text.
    EXPECT_LE(r.turns[t].prefilled, r.turns[t].prompt - r.turns[t - 1].prompt + 1) << r.err;
  }
  EXPECT_EQ(r.err.find("dropped"), std::string::npos) << r.err;
}

// After /reset the same message renders to the same prompt as the first turn; the cache holds it.
TEST(CliChat, ResetForgetsTheConversation) {
  ChatRun r = chat("Hello\n/reset\nHello\n/exit\n", "-n 16 -c 512");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.turns.size(), 2u) << r.err;
  EXPECT_EQ(r.turns[1].prompt, r.turns[0].prompt);
  EXPECT_LT(r.turns[1].prefilled, r.turns[1].prompt);
  EXPECT_NE(r.err.find("cleared"), std::string::npos) << r.err;
  // Without /reset the second prompt also holds the first exchange.
  ChatRun no_reset = chat("Hello\nHello\n/exit\n", "-n 16 -c 512");
  ASSERT_EQ(no_reset.turns.size(), 2u) << no_reset.err;
  EXPECT_GT(no_reset.turns[1].prompt, r.turns[1].prompt);
}

// EOF ends the session like /exit; a last line without a newline is still a turn.
TEST(CliChat, EndOfInputWithoutExit) {
  ChatRun r = chat("Hello\nHi there", "-n 8 -c 512");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.turns.size(), 2u) << r.err;
  ChatRun empty = chat("", "-n 8");
  EXPECT_EQ(empty.status, 0) << empty.err;
  EXPECT_TRUE(empty.turns.empty());
}

// stories260K's context is 128 tokens: a few turns overflow it. Old turns are dropped (said on
// stderr), every prompt plus its reply fits, and a message too long on its own is refused without
// ending the session.
TEST(CliChat, ContextOverflowDropsOldTurns) {
  ChatRun r = chat("Hello\nTell me a story\nWhat about the dog?\nAnd then?\n/exit\n", "-n 16");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.turns.size(), 4u) << r.err;
  EXPECT_NE(r.err.find("dropped"), std::string::npos) << r.err;
  for (const Turn& t : r.turns) EXPECT_LE(t.prompt + 16, 128u) << r.err;

  std::string long_line;
  for (int i = 0; i < 60; i++) long_line += "the cat sat on the mat ";
  ChatRun too_long = chat(long_line + "\nHello\n", "-n 16");
  ASSERT_EQ(too_long.status, 0) << too_long.err;
  EXPECT_NE(too_long.err.find("does not fit the context"), std::string::npos) << too_long.err;
  EXPECT_EQ(too_long.turns.size(), 1u) << too_long.err;
}

// Ctrl-C while a reply streams stops that reply only: the next line is still answered, with the
// cut reply kept in the history (its prompt reuses the cache).
TEST(CliChat, CtrlCStopsTheReplyNotTheSession) {
  const char* bin = std::getenv("ZTVM_BIN");
  ASSERT_NE(bin, nullptr) << "ZTVM_BIN is not set (CTest sets it)";
  fs::path err = fs::temp_directory_path() / ("ztvm_chat_sigint_" + std::to_string(::getpid()));
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(fd, 2);
    ::close(in[1]);
    ::close(out[0]);
    ::execl(bin, bin, "chat", "-m", kModel.c_str(), "-n", "64", "-c", "512", (char*)nullptr);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  auto send = [&](const std::string& s) { ASSERT_EQ(::write(in[1], s.data(), s.size()), (ssize_t)s.size()); };
  send("Once upon a time\n");
  char c;
  std::string got;
  ASSERT_EQ(::read(out[0], &c, 1), 1) << "no reply started";  // the reply is streaming now
  got += c;
  ::kill(pid, SIGINT);
  send("Hello\n/exit\n");
  ::close(in[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) got.append(buf, (size_t)n);
  ::close(out[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  std::string e = slurp(err);
  fs::remove(err);
  ASSERT_TRUE(WIFEXITED(st)) << e;
  EXPECT_EQ(WEXITSTATUS(st), 0) << e;
  EXPECT_NE(e.find("stopped by Ctrl-C"), std::string::npos) << e;
  std::regex stats(R"(\(prefilled (\d+) of (\d+) prompt tokens)");
  std::vector<Turn> turns;
  for (std::sregex_iterator it(e.begin(), e.end(), stats), end; it != end; ++it)
    turns.push_back({(uint32_t)std::stoul((*it)[1]), (uint32_t)std::stoul((*it)[2])});
  ASSERT_EQ(turns.size(), 2u) << e;
  EXPECT_LT(turns[1].prefilled, turns[1].prompt) << e;
}
