#include "hub/pull.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

namespace fs = std::filesystem;

namespace ztvm::hub {

namespace {

using Clock = std::chrono::steady_clock;

// Transport errors (a dropped connection, a stalled CDN) are retried this many times, each resuming
// where the last stopped, before the pull gives up with its part file kept.
constexpr int kRetries = 3;

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

// Ctrl-C stops the transfer between two chunks (the part file stays); the previous handler returns
// when the pull ends.
struct InterruptGuard {
  struct sigaction old {};
  InterruptGuard() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
  }
  ~InterruptGuard() { sigaction(SIGINT, &old, nullptr); }
};

// One line of progress: rewritten in place on a terminal, a line each 10% in a log.
class Meter {
 public:
  Meter(FILE* log, std::string label, uint64_t total, uint64_t have)
      : log_(log), tty_(log && isatty(fileno(log))), label_(std::move(label)), total_(total), first_(have) {}
  void update(uint64_t have, uint64_t total) {
    if (!log_) return;
    if (total) total_ = total;
    const auto now = Clock::now();
    const int decile = total_ ? (int)(have * 10 / total_) : 0;
    if (tty_ ? now - shown_ < std::chrono::milliseconds(100) : decile == decile_) return;
    shown_ = now;
    decile_ = decile;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = s > 0 ? (have - std::min(have, first_)) / s : 0;
    char eta[32] = "";
    if (rate > 0 && total_ > have) {
      const uint64_t left = (uint64_t)((total_ - have) / rate);
      std::snprintf(eta, sizeof eta, "  ETA %llu:%02llu", (unsigned long long)(left / 60), (unsigned long long)(left % 60));
    }
    std::fprintf(log_, "%s  %s  %5.1f%%  %s / %s  %.1f MB/s%s%s", tty_ ? "\r\033[K" : "", label_.c_str(),
                 total_ ? 100.0 * have / total_ : 0.0, size_text(have).c_str(), size_text(total_).c_str(), rate / 1e6, eta,
                 tty_ ? "" : "\n");
    std::fflush(log_);
  }
  void end() {
    if (log_ && tty_) std::fprintf(log_, "\r\033[K");
  }

 private:
  FILE* log_;
  bool tty_;
  std::string label_;
  uint64_t total_, first_;
  Clock::time_point start_ = Clock::now(), shown_{};
  int decile_ = -1;
};

// Hex digest of a file (sha256, or git's blob id: sha1 over "blob SIZE\0" and the bytes).
std::string digest_file(const std::string& path, bool git_blob) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), git_blob ? EVP_sha1() : EVP_sha256(), nullptr);
  if (git_blob) {
    const std::string head = "blob " + std::to_string(fs::file_size(path));
    EVP_DigestUpdate(ctx.get(), head.c_str(), head.size() + 1);  // with its '\0'
  }
  std::ifstream f(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), buf.size());
    EVP_DigestUpdate(ctx.get(), buf.data(), (size_t)f.gcount());
  }
  if (f.bad()) throw HubError("cannot read " + path);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; i++) out += {hex[md[i] >> 4], hex[md[i] & 15]};
  return out;
}

struct Session {
  Http http;
  const RepoSpec& spec;
  const PullOptions& o;
  std::string endpoint = hub_endpoint();
  std::vector<std::string> headers;

  void note(const std::string& s) const {
    if (o.log) std::fprintf(o.log, "pull: %s\n", s.c_str()), std::fflush(o.log);
  }
  // An HTTP status the hub answered instead of what was asked, as something to do about it.
  std::string problem(long status, const std::string& what, bool listing = false) const {
    switch (status) {
      case 401:  // the hub also answers 401, not 404, for a repository that does not exist
        if (!headers.empty()) return what + " refused the token (HTTP 401): check the name, and HF_TOKEN";
        return what + ": not found or not public (HTTP 401); check the name; a private or gated model needs a token: "
                      "set HF_TOKEN or log in with `huggingface-cli login`";
      case 403: return what + ": access denied (HTTP 403); for a gated model, accept its terms on its page first";
      case 404:
        if (!listing) return what + ": not found on " + endpoint + " (HTTP 404)";
        return "no model " + spec.repo + (o.revision == "main" ? "" : " at revision " + o.revision) + " on " + endpoint +
               " (HTTP 404)";
      case 429: return what + ": the hub is limiting requests (HTTP 429); wait a minute and run again";
      default: return what + ": HTTP " + std::to_string(status);
    }
  }

  std::vector<RepoFile> list() {
    std::string url = endpoint + "/api/models/" + spec.repo + "/tree/" + url_path_escape(o.revision) + "?recursive=true";
    std::vector<RepoFile> files;
    for (int page = 0; !url.empty() && page < 100; page++) {  // the listing comes in pages (Link: rel="next")
      HttpResponse r = http.get(url, headers);
      if (r.status != 200) throw HubError(problem(r.status, "listing " + spec.repo, true));
      for (auto& f : parse_tree_listing(r.body)) files.push_back(std::move(f));
      url.clear();
      const std::string link = r.headers["link"];
      const size_t rel = link.find("rel=\"next\"");
      if (rel != std::string::npos) {
        const size_t open = link.rfind('<', rel), close = link.find('>', open);
        if (open != std::string::npos && close != std::string::npos) url = link.substr(open + 1, close - open - 1);
      }
    }
    return files;
  }

  // Makes `f` present and whole at `dest`.
  void fetch(const RepoFile& f, const fs::path& dest) {
    std::error_code ec;
    if (fs::is_regular_file(dest, ec) && fs::file_size(dest, ec) == f.size) {
      note(f.path + ": here already (" + size_text(f.size) + ")");
      return;
    }
    fs::create_directories(dest.parent_path());
    const fs::path part = dest.string() + ".part";
    uint64_t have = fs::is_regular_file(part, ec) ? fs::file_size(part, ec) : 0;
    if (have > f.size) fs::remove(part, ec), have = 0;  // left by another revision of the file
    const auto space = fs::space(dest.parent_path(), ec);
    if (!ec && space.available < f.size - have)
      throw HubError(f.path + " needs " + size_text(f.size - have) + " more in " + dest.parent_path().string() + ", which has " +
                     size_text(space.available) + " free");
    note(f.path + ", " + size_text(f.size) + (have ? " (resuming at " + size_text(have) + ")" : ""));
    const std::string url = endpoint + "/" + spec.repo + "/resolve/" + url_path_escape(o.revision) + "/" + url_path_escape(f.path);
    for (int attempt = 0;; attempt++) {
      Meter meter(o.log, f.path, f.size, have);
      DownloadResult r = http.download(url, headers, part.string(), [&](uint64_t h, uint64_t t) { meter.update(h, t); },
                                       [] { return !g_interrupted; });
      meter.end();
      have = fs::is_regular_file(part, ec) ? fs::file_size(part, ec) : 0;
      if (r.interrupted)
        throw HubError("interrupted; " + size_text(have) + " of " + f.path + " kept in " + part.string() +
                       ": run the same command to resume");
      if (r.status == 416) {  // asked for bytes past the end
        if (have == f.size) break;  // the part file was whole already
        if (have == 0) throw HubError(problem(r.status, f.path));
        fs::remove(part, ec);  // longer than this file: not a part of it
        have = 0;
        continue;
      }
      std::string error = r.error;
      if (r.complete && have == f.size) break;
      if (r.status >= 500) error = "HTTP " + std::to_string(r.status) + " from the server";  // retried below
      else if (r.status >= 400 || (!r.complete && r.status >= 300 && r.error.empty()))
        throw HubError(problem(r.status, f.path));
      if (r.complete && have > f.size) {
        fs::remove(part, ec);
        throw HubError(f.path + ": the hub sent " + std::to_string(have) + " bytes for a file it lists as " +
                       std::to_string(f.size) + "; the download was deleted");
      }
      if (r.complete) error = "the transfer ended at " + size_text(have) + " of " + size_text(f.size);
      if (error.rfind("writing ", 0) == 0) throw HubError(error + "; " + size_text(have) + " kept in " + part.string());
      if (attempt >= kRetries)
        throw HubError(f.path + ": " + error + "; " + size_text(have) + " kept in " + part.string() +
                       ": run the same command to resume");
      note(error + "; resuming at " + size_text(have) + " (retry " + std::to_string(attempt + 1) + " of " +
           std::to_string(kRetries) + ")");
      std::this_thread::sleep_for(std::chrono::seconds(1 << attempt));
    }
    verify(f, part);
    fs::rename(part, dest);
  }

  // The hub's hash of the content: sha256 for Git LFS files (weights), the git blob id otherwise.
  void verify(const RepoFile& f, const fs::path& part) const {
    const bool lfs = !f.sha256.empty();
    if (!lfs && f.git_oid.size() != 40) return;  // nothing to check against
    const std::string want = lfs ? f.sha256 : f.git_oid;
    const std::string got = digest_file(part.string(), !lfs);
    if (got != want) {
      std::error_code ec;
      fs::remove(part, ec);
      throw HubError(f.path + ": checksum mismatch (" + (lfs ? "sha256 " : "git blob ") + got + ", the hub lists " + want +
                     "); the download was deleted: run again");
    }
    if (lfs) note(f.path + ": sha256 verified");
  }
};

}  // namespace

std::string pull(const RepoSpec& spec, const PullOptions& options) {
  PullOptions o = options;
  if (o.dir.empty()) o.dir = models_dir();
  InterruptGuard guard;
  Session s{Http(), spec, o};
  const std::string token = hub_token();
  if (!token.empty()) s.headers.push_back("Authorization: Bearer " + token);
  s.note(spec.text() + " from " + s.endpoint + (o.revision == "main" ? "" : " at " + o.revision));
  Choice choice = choose_files(s.list(), spec);
  const fs::path root = fs::path(o.dir) / spec.repo;
  // A directory's small files first: its weights index says which of the weights files to fetch.
  auto weights = [](const RepoFile& f) { return f.path.ends_with(".safetensors"); };
  for (const RepoFile& f : choice.files)
    if (!weights(f)) s.fetch(f, root / f.path);
  if (choice.directory) {
    std::ifstream index(root / "model.safetensors.index.json");
    keep_indexed_weights(choice, index ? std::string(std::istreambuf_iterator<char>(index), {}) : "");
  }
  for (const RepoFile& f : choice.files)
    if (weights(f)) s.fetch(f, root / f.path);
  return (choice.directory ? root : root / choice.files[0].path).string();
}

std::string resolve_model(const std::string& arg, FILE* log) {
  std::error_code ec;
  if (arg.empty() || fs::exists(arg, ec)) return arg;
  const std::optional<RepoSpec> spec = parse_repo_spec(arg);
  if (!spec) return arg;
  const std::string dir = models_dir();
  if (std::optional<std::string> here = find_pulled(*spec, dir)) return *here;
  if (log) std::fprintf(log, "ztvm: %s is not a file here: pulling it from %s\n", arg.c_str(), hub_endpoint().c_str());
  try {
    return pull(*spec, PullOptions{dir, "main", log});
  } catch (const HubError& e) {
    throw HubError("'" + arg + "' is not a file here, and pulling it failed: " + e.what());
  }
}

}  // namespace ztvm::hub
