#include "text/stop_strings.h"

#include <algorithm>

namespace ztvm {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
  for (auto& s : stops_) max_len_ = std::max(max_len_, s.size());
}

std::string StopStrings::push(const std::string& text) {
  if (stopped_) return "";
  held_ += text;
  size_t first = std::string::npos;
  for (auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a prefix of some stop string.
  size_t keep = 0;
  for (auto& s : stops_)
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; n--)
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStrings::flush() {
  std::string out = stopped_ ? "" : held_;
  held_.clear();
  return out;
}

}  // namespace ztvm
