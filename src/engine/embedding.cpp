#include "engine/embedding.h"

#include <cmath>
#include <stdexcept>

namespace ztvm {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
    case Pooling::Unset: break;
  }
  return "none";
}

Pooling parse_pooling(const std::string& name) {
  for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last})
    if (name == pooling_name(p)) return p;
  throw std::invalid_argument("pooling '" + name + "' (expected mean, cls or last)");
}

Pooling choose_pooling(const ModelConfig& c, Pooling asked) {
  if (asked != Pooling::Unset) return asked;
  return c.pooling != Pooling::Unset ? c.pooling : Pooling::Mean;
}

Pooler::Pooler(Pooling p, uint32_t dim, uint32_t n_tokens) : p_(p), dim_(dim), n_(n_tokens), sum_(dim, 0.0) {
  if (p == Pooling::Unset) throw std::invalid_argument("Pooler: no pooling chosen");
  if (n_tokens == 0) throw std::invalid_argument("an embedding of no tokens");
}

void Pooler::wanted(uint32_t pos0, uint32_t n, uint32_t& first, uint32_t& count) const {
  first = pos0, count = 0;
  if (p_ == Pooling::Mean) count = n;
  else if (p_ == Pooling::Cls && pos0 == 0) count = 1;
  else if (p_ == Pooling::Last && pos0 + n == n_) first = n_ - 1, count = 1;
}

void Pooler::add(const float* rows, uint32_t count) {
  for (uint32_t r = 0; r < count; r++)
    for (uint32_t i = 0; i < dim_; i++) sum_[i] += rows[(size_t)r * dim_ + i];
  added_ += count;
}

std::vector<float> Pooler::finish() const {
  const uint32_t expect = p_ == Pooling::Mean ? n_ : 1;
  if (added_ != expect)
    throw std::logic_error("pooling read " + std::to_string(added_) + " rows of " + std::to_string(expect));
  // The mean's 1/n does not survive the unit length; kept so that an unnormalized use would be right.
  std::vector<float> v(dim_);
  for (uint32_t i = 0; i < dim_; i++) v[i] = (float)(sum_[i] / added_);
  normalize_l2(v);
  return v;
}

void normalize_l2(std::vector<float>& v) {
  double ss = 0;
  for (float x : v) ss += (double)x * x;
  if (ss <= 0) return;
  const double inv = 1.0 / std::sqrt(ss);
  for (float& x : v) x = (float)(x * inv);
}

void keep_dimensions(std::vector<float>& v, uint32_t n) {
  if (n == 0 || n > v.size())
    throw std::invalid_argument("dimensions " + std::to_string(n) + ": the model's embeddings have " +
                                std::to_string(v.size()));
  v.resize(n);
  normalize_l2(v);
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

}  // namespace ztvm
