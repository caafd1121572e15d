// Picking the next token on the host, for generations under a TokenConstraint (sampling.h): the
// same steps as the GPU's argmax and sample.wgsl (penalties over recent tokens; top-k, top-p and
// min-p judged on the untempered distribution; a draw from softmax(logits / temperature) of what is
// left), with the rule asked about the pick. Only when it refuses is every token asked and the pick
// made again among those allowed, so most steps cost one question.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/sampling.h"

namespace ztvm {

// `logits` of one position (penalties are applied in place); `recent`: tokens generated so far,
// for the penalties; `step` keys the random draw (same seed and step, same draw). Returns -1 when
// the rule allows no token.
int32_t sample_cpu(std::vector<float>& logits, const SamplingParams& p, const std::vector<int32_t>& recent,
                   uint64_t step, const TokenConstraint* rule = nullptr);

}  // namespace ztvm
