// Shared by the fuzz targets (fuzz/README.md): the readers under test take paths, so an input is
// written to an in-memory file (memfd) and handed over as /proc/self/fd/N; directories go to a
// per-process folder under /dev/shm.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace ztvm::fuzz {

// An anonymous in-memory file holding `data`; closed (and freed) when this goes out of scope.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = memfd_create("ztvm-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) std::abort();
    for (size_t done = 0; done < size;) {
      ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  ~MemFile() { close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_ = -1;
};

inline void write_file(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) std::abort();
}

// A folder of this process's own under /dev/shm (tmpfs: no disk writes at a million runs).
inline std::filesystem::path scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::path("/dev/shm") / ("ztvm-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// The data folder of the build that made the target (cmake/testdata.cmake stages it there), or
// $ZTVM_TESTDATA where the binary runs elsewhere (a long campaign on another machine).
inline std::string testdata(const std::string& rel) {
  const char* env = std::getenv("ZTVM_TESTDATA");
  return std::string(env && *env ? env : ZTVM_TESTDATA) + "/" + rel;
}

}  // namespace ztvm::fuzz
