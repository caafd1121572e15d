// A read-only memory mapping of a whole file. Tensor views point into it, so it is shared by every
// object that hands out views and lives as long as the longest of them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace ztvm {

class MappedFile {
 public:
  // Throws ModelError naming the path when the file cannot be opened or mapped.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace ztvm
