// The physical KV-cache pages of one Forward, shared by the sequences a server runs at once. A
// sequence holds the pages its positions need (Forward::kPage tokens each) and gives them back when
// it is dropped, so memory follows the tokens actually cached, not sequences x context.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace ztvm {

class PagePool {
 public:
  explicit PagePool(uint32_t n_pages) {
    for (uint32_t i = n_pages; i-- > 0;) free_.push_back(i);
    total_ = n_pages;
  }
  uint32_t total() const { return total_; }
  uint32_t available() const { return (uint32_t)free_.size(); }
  uint32_t take() {
    if (free_.empty()) throw std::runtime_error("KV cache full: no free page");
    uint32_t p = free_.back();
    free_.pop_back();
    return p;
  }
  void give(std::vector<uint32_t>& pages) {
    free_.insert(free_.end(), pages.rbegin(), pages.rend());
    pages.clear();
  }

 private:
  std::vector<uint32_t> free_;
  uint32_t total_;
};

}  // namespace ztvm
