// An LD_PRELOAD library that records every file a test looks at outside the checkout, among the
// folders beside it: a test that reads ../shared (or any sibling of the checkout) passes on a
// developer's machine and fails for everyone who only cloned the repository. CTest runs every test
// with it loaded (CMakeLists.txt); the open_guard_check test fails if anything was recorded.
//
// Environment: ZTVM_OPEN_GUARD_ROOT, the checkout then the build folder, ':'-separated (absolute,
//              symlink-free paths: a build folder beside the checkout is allowed too);
//              ZTVM_OPEN_GUARD_LOG, the file that collects "<pid> <call> <path>" lines.
//              ZTVM_OPEN_GUARD_SIBLINGS, a file naming the entries beside the checkout when the tests
//              began, one a line (open_guard_reset writes it).
// Flagged: a path under the checkout's parent folder that is not under the checkout, except for
// hidden folders there (.cache, .npm, .config: tool state when the checkout is in $HOME, not data),
// $XDG_CACHE_HOME (Mesa's shader cache), and, with ZTVM_OPEN_GUARD_SIBLINGS, anything the tests made
// there themselves (a checkout in /tmp has the tests' temporary folders beside it).
// System paths (/usr, /proc, /tmp, ...) are not flagged unless the checkout is in them.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

thread_local bool in_guard = false;  // the guard's own getcwd/readlink/log writes are not checked

// "a/./b/../c" -> "a/c", lexically (no symlinks followed: the prefix test below is on names).
std::string normalize(const std::string& abs) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= abs.size()) {
    size_t j = abs.find('/', i);
    if (j == std::string::npos) j = abs.size();
    std::string p = abs.substr(i, j - i);
    if (p == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!p.empty() && p != ".") {
      parts.push_back(p);
    }
    i = j + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

std::string absolute(int dirfd, const char* path) {
  if (path[0] == '/') return path;
  char base[PATH_MAX];
  if (dirfd == AT_FDCWD) {
    if (!getcwd(base, sizeof base)) return path;
  } else {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, base, sizeof base - 1);
    if (n <= 0) return path;
    base[n] = 0;
  }
  return std::string(base) + "/" + path;
}

bool under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() ? path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/'
                                  : path == dir;
}

// The entries beside the checkout before the tests ran; empty with no list (then all are flagged).
const std::vector<std::string>& siblings_before() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    const char* file = getenv("ZTVM_OPEN_GUARD_SIBLINGS");
    FILE* f = file ? fopen(file, "r") : nullptr;
    if (!f) return v;
    char line[PATH_MAX];
    while (fgets(line, sizeof line, f)) {
      std::string n = line;
      while (!n.empty() && (n.back() == '\n' || n.back() == '\r')) n.pop_back();
      if (!n.empty()) v.push_back(n);
    }
    fclose(f);
    if (v.empty()) v.push_back("/");  // listed, and nothing was beside the checkout: no name matches "/"
    return v;
  }();
  return names;
}

bool made_by_the_tests(const std::string& p, const std::string& parent) {
  const std::vector<std::string>& before = siblings_before();
  if (before.empty()) return false;
  std::string first = p.substr(parent.size() + 1);
  first = first.substr(0, first.find('/'));
  for (const auto& n : before)
    if (n == first) return false;
  return true;
}

void check(const char* call, int dirfd, const char* path) {
  if (in_guard || !path || !*path) return;
  const char* root_env = getenv("ZTVM_OPEN_GUARD_ROOT");
  const char* log = getenv("ZTVM_OPEN_GUARD_LOG");
  if (!root_env || !log) return;
  in_guard = true;
  std::string roots = root_env;
  std::string checkout = normalize(roots.substr(0, roots.find(':')));
  std::string parent = normalize(checkout + "/..");
  std::string p = normalize(absolute(dirfd, path));
  bool flagged = parent != "/" && under(p, parent) && p != parent && p[parent.size() + 1] != '.' &&
                 !made_by_the_tests(p, parent);
  const char* cache = getenv("XDG_CACHE_HOME");
  if (flagged && cache && *cache == '/' && under(p, normalize(cache))) flagged = false;
  for (size_t i = 0; flagged && i <= roots.size();) {
    size_t j = roots.find(':', i);
    if (j == std::string::npos) j = roots.size();
    if (j > i && under(p, normalize(roots.substr(i, j - i)))) flagged = false;
    i = j + 1;
  }
  if (flagged) {
    std::string line = std::to_string(getpid()) + " " + call + " " + p + "\n";
    using open_fn = int (*)(const char*, int, ...);
    static auto real_open = reinterpret_cast<open_fn>(dlsym(RTLD_NEXT, "open"));
    int fd = real_open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ssize_t ignored = write(fd, line.data(), line.size());  // one write: O_APPEND keeps lines whole
      (void)ignored;
      close(fd);
    }
  }
  in_guard = false;
}

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

mode_t mode_of(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

}  // namespace

// The calls that name a file: opening it (the C and C++ libraries reach open through these symbols
// only from outside glibc, so fopen and opendir are hooked too) and asking about it (std::filesystem's
// exists/status: a test that checks for ../shared and skips is as wrong as one that reads it).
extern "C" {

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  check("open", AT_FDCWD, path);
  static auto real = next<int (*)(const char*, int, ...)>("open");
  return real(path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  check("open64", AT_FDCWD, path);
  static auto real = next<int (*)(const char*, int, ...)>("open64");
  return real(path, flags, mode);
}

int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  check("openat", dirfd, path);
  static auto real = next<int (*)(int, const char*, int, ...)>("openat");
  return real(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  check("openat64", dirfd, path);
  static auto real = next<int (*)(int, const char*, int, ...)>("openat64");
  return real(dirfd, path, flags, mode);
}

FILE* fopen(const char* path, const char* mode) {
  check("fopen", AT_FDCWD, path);
  static auto real = next<FILE* (*)(const char*, const char*)>("fopen");
  return real(path, mode);
}

FILE* fopen64(const char* path, const char* mode) {
  check("fopen64", AT_FDCWD, path);
  static auto real = next<FILE* (*)(const char*, const char*)>("fopen64");
  return real(path, mode);
}

DIR* opendir(const char* path) {
  check("opendir", AT_FDCWD, path);
  static auto real = next<DIR* (*)(const char*)>("opendir");
  return real(path);
}

int stat(const char* path, struct stat* st) {
  check("stat", AT_FDCWD, path);
  static auto real = next<int (*)(const char*, struct stat*)>("stat");
  return real(path, st);
}

int lstat(const char* path, struct stat* st) {
  check("lstat", AT_FDCWD, path);
  static auto real = next<int (*)(const char*, struct stat*)>("lstat");
  return real(path, st);
}

int stat64(const char* path, struct stat64* st) {
  check("stat64", AT_FDCWD, path);
  static auto real = next<int (*)(const char*, struct stat64*)>("stat64");
  return real(path, st);
}

int lstat64(const char* path, struct stat64* st) {
  check("lstat64", AT_FDCWD, path);
  static auto real = next<int (*)(const char*, struct stat64*)>("lstat64");
  return real(path, st);
}

int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  check("fstatat", dirfd, path);
  static auto real = next<int (*)(int, const char*, struct stat*, int)>("fstatat");
  return real(dirfd, path, st, flags);
}

int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  check("fstatat64", dirfd, path);
  static auto real = next<int (*)(int, const char*, struct stat64*, int)>("fstatat64");
  return real(dirfd, path, st, flags);
}

int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* st) {
  check("statx", dirfd, path);
  static auto real = next<int (*)(int, const char*, int, unsigned, struct statx*)>("statx");
  return real(dirfd, path, flags, mask, st);
}

int access(const char* path, int mode) {
  check("access", AT_FDCWD, path);
  static auto real = next<int (*)(const char*, int)>("access");
  return real(path, mode);
}

}  // extern "C"
