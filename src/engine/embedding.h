// One vector for a text (ztvm embed, /v1/embeddings): the states the final norm gives its tokens —
// the LM head's input — pooled into one (their mean, the first token's or the last token's) and
// scaled to unit length, as sentence-transformers, llama.cpp and OpenAI's API give embeddings.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace ztvm {

const char* pooling_name(Pooling p);             // "mean", "cls", "last" ("none" for Unset)
Pooling parse_pooling(const std::string& name);  // throws std::invalid_argument on another name

// The pooling asked for, else the model's own, else mean: a chat model names none, and the mean of
// its states is the usual choice for one (llama.cpp would refuse; Ollama embeds with any model).
Pooling choose_pooling(const ModelConfig& c, Pooling asked = Pooling::Unset);

// Accumulates the rows a pooling reads as the passes of a text come (Generator::embedding).
class Pooler {
 public:
  Pooler(Pooling p, uint32_t dim, uint32_t n_tokens);
  // The rows of positions [pos0, pos0 + n) that this pooling reads: [first, first + count).
  void wanted(uint32_t pos0, uint32_t n, uint32_t& first, uint32_t& count) const;
  // The rows wanted() named: `count` rows of `dim` floats.
  void add(const float* rows, uint32_t count);
  std::vector<float> finish() const;  // pooled and of unit length (a zero vector stays zero)

 private:
  Pooling p_;
  uint32_t dim_, n_;
  std::vector<double> sum_;
  uint32_t added_ = 0;
};

// Scales v to unit Euclidean length (left as is when all zero).
void normalize_l2(std::vector<float>& v);

// OpenAI's `dimensions`: the first n components, scaled back to unit length (how Matryoshka-trained
// models such as Qwen3-Embedding are shortened). Throws std::invalid_argument unless 0 < n <= size.
void keep_dimensions(std::vector<float>& v, uint32_t n);

// Cosine similarity of two vectors of one length (0 when either is zero).
double cosine(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace ztvm
