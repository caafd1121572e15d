// POST /v1/embeddings in OpenAI's shape (also /embeddings): `input` is a string, a list of strings, a
// list of token ids or a list of such lists; each becomes one vector (engine/embedding.h), computed by
// the scheduler's worker between other requests' bursts. encoding_format "base64" (the openai SDKs'
// default) sends each vector's little-endian float32 bytes; `dimensions` shortens them.
#pragma once
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "server/openai.h"
#include "text/tokenizer.h"

namespace ztvm::server {

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;  // tokenized, each non-empty and within the context
  bool base64 = false;
  uint32_t dimensions = 0;  // 0: all
};

// Reads and tokenizes a request body; ApiError 400 naming the field for anything malformed.
EmbeddingRequest parse_embedding_request(const json& body, const Tokenizer& tok, uint32_t max_context,
                                         uint32_t hidden_size);

// Queues every input, waits for all of them and renders the response (ApiError 503 when the queue is
// full, 500 when a pass fails).
json run_embeddings(Scheduler& sched, const EmbeddingRequest& r, Pooling pooling, const std::string& model_name);

// The bytes of v (float32, little-endian) in standard base64 with padding.
std::string base64_floats(const std::vector<float>& v);

}  // namespace ztvm::server
