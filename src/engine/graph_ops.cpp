// How each op family picks its variant for a pass (graph_ops.h). The rules of when a variant pays,
// and the measurements behind them, are where the builder makes it (graph_matmul.cpp, graph_gemm.cpp,
// graph_attention.cpp).
#include "engine/graph_ops.h"

#include <algorithm>
#include <stdexcept>

#include "engine/graph.h"

namespace ztvm {

void Graph::encode(gpu::Recorder& rec, uint32_t pos0, uint32_t n_tokens, bool embedded) const {
  if (!finished) throw std::logic_error("graph replayed before GraphBuilder::finish made its ops");
  const Pass p{pos0, n_tokens, embedded};
  for (const auto& op : ops) op->encode(rec, p);
}

void RowOp::encode(gpu::Recorder& rec, const Pass& p) const {
  const uint32_t n = p.n_tokens;
  if (p.embedded && skip_embedded) return;
  if (skip_decode_max && n == 1 && p.pos0 + 1 <= skip_decode_max) return;
  if (skip_long && p.long_step(long_after)) return;
  if (skip_one_token && n == 1) return;
  if (skip_min && n >= skip_min && !(unless_flash_split && flash_split_span(p.positions(), n, a))) return;
  const bool use_single = single && (n <= single_max || always_single);
  if (single_only && !use_single) return;
  const bool use_long = long_main && n >= long_min;
  if (use_single) return (use_long ? long_main : single).run(rec, single_groups * n);
  if (use_long) return long_main.run(rec, (long_a ? long_a : a) * n);
  main.run(rec, a * n);
}

uint32_t MatmulOp::main_min() const {
  if (always_single) return UINT32_MAX;
  uint32_t m = single ? single_max : 0;
  if (few) m = std::max(m, few_max);
  if (split) m = std::max(m, split_max);
  return m + 1;
}

void MatmulOp::encode(gpu::Recorder& rec, const Pass& p) const {
  const uint32_t n = p.n_tokens, tiles = one_token ? 1 : p.token_tiles();
  if (skip_one_token && n == 1) return;
  if (single && (n <= single_max || always_single))
    return (long_single && p.long_step(long_after) ? long_single : single).run(rec, single_groups, bytes);
  if (few && n <= few_max) return few.run(rec, few_blocks * ((n + few_tokens - 1) / few_tokens), bytes);
  if (split && n <= split_max) {
    split.run(rec, ksplit * a * tiles, bytes);
    return reduce.run(rec, reduce_blocks * n);
  }
  if (long_main && n >= long_min) return long_main.run(rec, a * tiles, bytes);
  if (wide && (wide_always || GraphBuilder::gemm_wide_pays(a, wide_a, n))) return wide.run(rec, wide_a * tiles, bytes);
  main.run(rec, a * tiles, bytes);
}

void AttentionOp::encode(gpu::Recorder& rec, const Pass& p) const {
  const uint32_t n = p.n_tokens, positions = p.positions();
  const uint32_t span = attention_split(split, positions, n);
  const uint32_t splits = (positions + span - 1) / span;
  const uint64_t kv_bytes = bytes_per_position * positions;  // the cache, read once
  if (decode && n == 1 && positions <= decode_max) return (decode_q8 ? decode_q8 : decode).run(rec, nh, kv_bytes);
  if (flash && n >= flash_min) {
    const uint32_t groups = flash_a * ((n + flash_tq - 1) / flash_tq);
    if (const uint32_t fs = flash_split ? flash_split_span(positions, n, nh) : 0)
      return flash_split.run(rec, groups * ((positions + fs - 1) / fs), kv_bytes);
    if (flash_q8_only && n >= flash_q8_only_min && n <= flash_q8_max) return flash_q8_only.run(rec, groups, kv_bytes);
    if (flash_q8 && n <= flash_q8_max) return flash_q8.run(rec, groups, kv_bytes);
    return flash.run(rec, groups, kv_bytes);
  }
  if (decode_split && n == 1) return decode_split.run(rec, nh * splits, kv_bytes);
  if (blocked && n >= blocked_min)
    return blocked.run(rec, blocked_a * ((n + blocked_tq - 1) / blocked_tq) * splits, kv_bytes);
  main.run(rec, nh * n * splits, kv_bytes);
}

void MoeMatmulOp::encode(gpu::Recorder& rec, const Pass& p) const {
  const uint32_t n = p.n_tokens;
  if (n == 1 || !grouped) return main.run(rec, (by_token ? 1 : k) * n * main_row_groups, bytes_per_expert * k * n);
  const uint32_t jobs = std::min(experts, k * n);
  if (gemm && gemm_min && n >= gemm_min)
    return gemm.run(rec, GraphBuilder::moe_max_tiles(experts, k, n) * gemm_row_tiles, bytes_per_expert * jobs);
  grouped.run(rec, jobs * row_groups, bytes_per_expert * jobs);
}

void CopyRowOp::encode(gpu::Recorder& rec, const Pass& p) const {
  if (skip_one_token && p.n_tokens == 1) return;
  rec.copy(*src, (uint64_t)(p.n_tokens - 1) * width * 4, *dst, 0, (uint64_t)width * 4);
}

}  // namespace ztvm
