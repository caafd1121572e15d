// Stop strings for streamed generation: text is released as soon as it cannot be the start of a
// stop string, and generation ends at the first stop string, which is not printed.
#pragma once
#include <string>
#include <vector>

namespace ztvm {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);
  // Adds generated text; returns what may be shown now. After a stop string was seen, stopped() is
  // true and the returned text ends right before it.
  std::string push(const std::string& text);
  std::string flush();  // at the end of generation: whatever was held back
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  size_t max_len_ = 0;
  bool stopped_ = false;
};

}  // namespace ztvm
