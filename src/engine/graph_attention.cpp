// The attention part of GraphBuilder (graph.h): rope_kv, the attention dispatch and its kernel
// variants (split, blocked, flash, flash over splits, decode), the combine of split partials, and
// the rules for how many positions a split takes.
#include <algorithm>
#include <cmath>

#include "engine/graph.h"
#include "model/model_error.h"

namespace ztvm {

// Passes of kAttnBlockedMinTokens+ tokens: attention workgroups of kAttnRows query rows, up to
// kAttnBlockHeads heads of a KV head x tokens (H200: 4 x 2 beat 1 x 8; prefill-1024 +17%).
static constexpr uint32_t kAttnRows = 8, kAttnBlockHeads = 4, kAttnBlockedMinTokens = 2;
// Passes of kAttnFlashMinTokens+ tokens: flash attention (attention_flash.wgsl), tiles of 32 query rows
// with no split-K and no combine, where the heads allow (HD % 32 == 0, HD <= 128, NH / NKV divides 32).
// Its workgroups are (NH / G) x T / (32 / G), few on short passes, yet it beats the blocked kernel
// and its combine dispatch on every pass length measured (H200 TTFT: -10..-14% for 4-token prompts,
// -7..-9% for 12 and 35 tokens, bench/EXPERIMENTS.md). The blocked kernel serves the other heads.
static constexpr uint32_t kAttnFlashMinTokens = 2, kAttnFlashRows = 32;
// One-token passes that see up to kAttnDecodeMax positions: attention_decode.wgsl, a workgroup per query
// head over every position, no splits and no combine dispatch. Longer ones run the same kernel over
// splits of Forward::kSplit positions, merged by attention_combine (H200 at 4096 positions: +3.5% 1B,
// +14% 4B decode against the older split kernel, bench/EXPERIMENTS.md).
static constexpr uint32_t kAttnDecodeMax = 512;

// H200, splits of 128 against 256 (bench/EXPERIMENTS.md): 128 won by 1.5-6% at 600-1,024 positions and
// by -0.4..+1.8% at ~2,100; 256 won by 3-4% at ~4,100. The turn lies between; 24 splits (3,072 positions)
// is its middle, not measured itself.
static constexpr uint32_t kAttnWideSplits = 24;

uint32_t flash_split_span(uint32_t positions, uint32_t n_tokens, uint32_t nh) {
  if (n_tokens < 2 || n_tokens > kFlashSplitMaxTokens || positions < kFlashSplitMinPositions) return 0;
  if ((uint64_t)nh * n_tokens > 32ull * kFlashSplitBelowGroups) return 0;
  return ((positions + kFlashSplits - 1) / kFlashSplits + 63) / 64 * 64;
}

uint32_t attention_split(uint32_t split, uint32_t positions, uint32_t n_tokens, uint32_t flash_nh) {
  if (const uint32_t span = flash_nh ? flash_split_span(positions, n_tokens, flash_nh) : 0) return span;
  return n_tokens == 1 && (positions + split - 1) / split > kAttnWideSplits ? 2 * split : split;
}
// The constants of a kernel that makes query heads from raw qkv rows (q_in_rope.wgsl, q_flash_rope.wgsl):
// which dims rotate and how, and the bias and QK-norm before the rotation.
static void set_rope_constants(gpu::KernelKey& key, const GraphBuilder::AttnShape& s) {
  for (auto [name, v] : std::map<std::string, double>{{"ROT", s.rot}, {"NEOX", s.neox}, {"QK_NORM", s.qk_norm},
                                                      {"HAS_BIAS", s.bias}, {"EPS", s.eps}})
    key.constants[name] = v;
}
// Block reductions through subgroup operations where the device has them (reduce_sg.wgsl).
std::string GraphBuilder::reduce_snippet() const {
  return subgroups_ && k_.device().info().subgroups ? "reduce_sg" : "reduce_wg";
}
// int8 units packed by 8 threads each where subgroups hold 8 or more threads (q8_pack8.wgsl).
std::string GraphBuilder::pack8_snippet() const {
  const gpu::AdapterInfo& i = k_.device().info();
  return subgroups_ && i.subgroups && i.subgroup_min >= 8 ? "q8_pack8" : "q8_pack8_none";
}

void GraphBuilder::rope_kv(const gpu::Buffer& q, const gpu::Buffer& k_cache, const gpu::Buffer& v_cache,
                           const gpu::Buffer& qkv, const gpu::Buffer& aux, const gpu::Buffer& rope,
                           const gpu::Buffer& pages, const AttnShape& s) {
  if (s.hd % 8 != 0 || s.hd > 128) throw ModelError("rope_kv: head size " + std::to_string(s.hd) + " is not a multiple of 8 up to 128");
  // One-token passes past the unsplit attention's positions: the QKV matvec just before stores the rows
  // as this dispatch would (y_rope.wgsl), for heads of adjacent rope pairs without QK-norm or bias
  // (Llama), and the dispatch skips them. Earlier steps keep the plain matvec: their attention makes the
  // heads itself, and the rotation in the matvec only cost there (H200: -1% decode on Llama-3.2-1B Q4_0
  // at short context, +4.7% at 4,096 positions; bench/EXPERIMENTS.md).
  // A two-type QKV's second part has a dispatch of its own in between, which one-token passes skip.
  auto next_op = [&](size_t op) { return op + 1 < g_.ops.size() && g_.ops[op + 1]->skip_one_token ? op + 2 : op + 1; };
  const bool in_matvec = !rope_matvec_.empty() && next_op(rope_matvec_[0].op) == g_.ops.size() &&
                         rope_matvec_[0].y == &qkv && !s.neox && !s.qk_norm && !s.bias && s.rot % 2 == 0;
  if (in_matvec) {
    Q8Producer& m = rope_matvec_[0];
    gpu::KernelKey key = m.key;
    key.includes["YOUT"] = "y_rope";
    for (auto [name, v] : std::map<std::string, double>{{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"ROT", s.rot}, {"PAGE", s.page}})
      key.constants[name] = v;
    std::vector<gpu::Binding> b = m.bindings;
    b[0] = q;
    for (const gpu::Buffer* x : {&k_cache, &v_cache, &pages, &rope}) b.push_back(*x);
    b.push_back(*step_);
    MatmulOp& d = g_.op<MatmulOp>(m.op);
    d.long_single = variant(key, b, "matvec_q8_rope:" + q.label(), d.single.role + "_rope");
    d.long_after = kAttnDecodeMax;
  }
  rope_matvec_.clear();
  // Passes of several tokens: kRopeSlots heads per workgroup (fewer, larger workgroups over a long
  // pass's tokens x heads); one-token passes a head each, spread over more SMs.
  const uint32_t heads = s.nh + 2 * s.nkv;
  gpu::KernelKey key{"rope_kv", {},
                     {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"ROT", s.rot}, {"PAGE", s.page}, {"NEOX", s.neox},
                      {"QK_NORM", s.qk_norm}, {"HAS_BIAS", s.bias}, {"EPS", s.eps}, {"RH_SLOTS", kRopeSlots}}};
  const std::vector<gpu::Binding> b = {q, k_cache, v_cache, qkv, aux, rope, pages, *step_};
  RowOp& d = add<RowOp>(key, b);
  d.a = (heads + kRopeSlots - 1) / kRopeSlots;
  key.constants["RH_SLOTS"] = 1;
  d.single = variant(key, b, "rope_kv_1:" + q.label());
  d.single_groups = heads, d.single_max = 1;
  if (in_matvec) d.skip_long = true, d.long_after = kAttnDecodeMax;
  key.constants["RH_SLOTS"] = kRopeSlots;
  rope_ = RopeOp{last(), &qkv, &aux, &rope, key, b};
}

void GraphBuilder::attention(const gpu::Buffer& att, const gpu::Buffer& part, const gpu::Buffer& q,
                             const gpu::Buffer& k_cache, const gpu::Buffer& v_cache, const gpu::Buffer& pages,
                             const AttnShape& s) {
  if (s.hd % 8 != 0 || s.hd > 128) throw ModelError("attention: head size " + std::to_string(s.hd) + " is not a multiple of 8 up to 128");
  auto key = [&](uint32_t g) -> gpu::KernelKey {
    return {"attention", {},
            {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"PAGE", s.page}, {"G", g},
             {"SCALE", 1.0 / std::sqrt((double)s.hd)}}};
  };
  const std::vector<gpu::Binding> b = {part, q, k_cache, v_cache, pages, *step_};
  // A workgroup per query head and split: what the variants below leave (none of them, when every
  // one-token pass takes attention_decode and every longer one the blocked or flash kernel).
  AttentionOp& d = add<AttentionOp>(key(1), b);
  d.nh = s.nh, d.split = s.split;
  // The query heads of one KV head together (up to 8: the kernel's register arrays).
  uint32_t g = s.nh / s.nkv;
  while (g > 8) g = (g % 2 == 0) ? g / 2 : 1;
  d.bytes_per_position = (uint64_t)s.nkv * s.hd * 2 * 2;  // f16 key and value of every KV head
  // Long passes: kAttnRows query rows per workgroup, blk_g heads of a KV head x the rest in tokens.
  const uint32_t blk_g = std::min(g, kAttnBlockHeads), tq = kAttnRows / blk_g;
  if (tq > 1) {
    gpu::KernelKey bk = key(blk_g);
    bk.constants["TQ"] = tq;
    bk.constants["STAGE_V"] = 0;  // many workgroups of 8 rows: staged values cost 5-19% (bench/EXPERIMENTS.md)
    d.blocked = variant(bk, b, "attention_blocked:" + part.label(), d.main.role);
    d.blocked_a = s.nh / blk_g, d.blocked_tq = tq, d.blocked_min = kAttnBlockedMinTokens;
  }
  flash_.reset();
  const uint32_t fg = s.nh / s.nkv;  // a tile is the query heads of one KV head x 32 / fg tokens
  if (flash_serves(s.hd, s.nh, s.nkv)) {
    AttnDirect f{last(),
              {"attention_flash", {{"XOUT", "x_out_none"}, {"QIN", "q_flash_plain"}},
               {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"PAGE", s.page}, {"G", fg},
                {"SCALE", 1.0 / std::sqrt((double)s.hd)}}},
              {att, q, k_cache, v_cache, pages, *step_, part}};
    // The queries made in flash attention from the raw rows, and the rope_kv just before (when it is)
    // left the keys and values only, in every pass flash attention serves (a third of its heads on
    // Qwen3-4B, and q neither written nor read back).
    const bool rope_here = rope_in_flash_ && rope_ && rope_->op + 1 == last() &&
                           k_.device().limits().maxStorageBuffersPerShaderStage >= 10;
    if (rope_here) {
      f.key.includes["QIN"] = "q_flash_rope";
      set_rope_constants(f.key, s);
      f.bindings[1] = *rope_->qkv;
      f.bindings.push_back(*rope_->aux), f.bindings.push_back(*rope_->rope);
      RowOp& r = g_.op<RowOp>(rope_->op);
      gpu::KernelKey kv = rope_->key;
      kv.constants["FIRST_HEAD"] = s.nh;
      r.long_main = variant(kv, rope_->bindings, "rope_kv_kv:" + q.label(), "rope_kv_kv");
      r.long_a = (2 * s.nkv + kRopeSlots - 1) / kRopeSlots;
      r.long_min = kAttnFlashMinTokens;
    }
    const uint32_t wg_bytes = k_.device().limits().maxComputeWorkgroupStorageSize;
    f.key.constants["TILE"] = flash_tile_force_ && flash_bytes(s.hd, flash_tile_force_) <= wg_bytes
                                  ? flash_tile_force_ : flash_tile(s.hd, wg_bytes);
    const uint32_t halves = flash_halves_force_ && flash_bytes(s.hd, 32, flash_halves_force_) <= wg_bytes
                                ? flash_halves_force_ : flash_halves(s.hd, wg_bytes);
    if (halves == 2) {  // a step of 64 positions, 32 for each half
      f.key.constants["TILE"] = 32;
      f.key.constants["HALVES"] = 2;
    }
    d.flash = variant(f.key, f.bindings, "attention_flash:" + att.label(), "attention_flash");
    d.flash_a = s.nh / fg, d.flash_tq = kAttnFlashRows / fg, d.flash_min = kAttnFlashMinTokens;
    gpu::KernelKey sk = f.key;
    sk.constants["SPLITS"] = 1;
    d.flash_split = variant(sk, f.bindings, "attention_flash_split:" + part.label(), "attention_flash_split");
    flash_ = std::move(f);
  }
  decode_.reset();
  {
    AttnDirect o{last(),
                 {"attention_decode", {{"XOUT", "x_out_none"}, {"QIN", "q_in_plain"}, {"REDUCE", "reduce_wg"}, {"PACK8", pack8_snippet()}},
                  {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"PAGE", s.page}, {"SCALE", 1.0 / std::sqrt((double)s.hd)}}},
                 {att, q, k_cache, v_cache, pages, *step_}};
    gpu::KernelKey sk = o.key;  // longer one-token passes: over splits (attention_split)
    sk.constants["SPLITS"] = 1;
    // 64 or 128 threads (up to the split), each taking span / wg positions: on the H200 a split of 256
    // positions ran 2-2.5% faster at 4k on 128 threads than on 256 (bench/EXPERIMENTS.md).
    uint32_t wg = 64;
    while (wg < 128 && 2 * wg <= s.split) wg *= 2;
    sk.constants["WG"] = wg;
    sk.includes["REDUCE"] = reduce_snippet();  // H200 at 4k: +0.5..+1.9% with subgroups (bench/EXPERIMENTS.md)
    // Softmax·V per subgroup, without the block loop's barriers, where every subgroup has one size
    // that holds whole value rows (HD / 8 lanes each). On 128-dim heads only: the H200 gained there on
    // both Qwen3-4B files (+0.6% at 1,024 positions, +1.8..+2.1% at 4,096), while Llama-3.2-1B's 64-dim
    // heads gained on Q4_0 (+1.7%, +2.6%) but lost 5.4% at 1,024 on Q4_K_M (bench/EXPERIMENTS.md).
    const gpu::AdapterInfo& ai = k_.device().info();
    const uint32_t chunks = s.hd / 8, sz = ai.subgroup_min;
    if (reduce_snippet() == "reduce_sg" && s.hd == 128 && sz == ai.subgroup_max && sz >= chunks &&
        sz % chunks == 0 && wg % sz == 0)
      sk.constants["SG_SOFT"] = 1;
    std::vector<gpu::Binding> sb = o.bindings;
    sb[0] = part;
    // The query, key and value heads made in the kernel as below (q_in_rope_split.wgsl), so that no
    // one-token pass runs rope_kv, except where the QKV matvec stores the roped heads in those passes
    // (Llama: rope_kv's skip_long).
    RowOp* rope_op = rope_ ? &g_.op<RowOp>(rope_->op) : nullptr;
    const bool rope_here = rope_in_decode_ && rope_ && rope_->op + 1 == last();
    if (rope_here && !rope_op->skip_long) {
      sk.includes["QIN"] = "q_in_rope_split";
      set_rope_constants(sk, s);
      sb = {part, *rope_->qkv, k_cache, v_cache, pages, *step_, *rope_->aux, *rope_->rope};
      rope_op->skip_long = true, rope_op->long_after = kAttnDecodeMax;
    }
    d.decode_split = variant(sk, sb, "attention_decode_split:" + part.label(), "attention_decode_split");
    // Unsplit decode steps: the query, key and value heads made here from the raw qkv row (q_in_rope.wgsl),
    // and the rope_kv just before skipped, when it is just before.
    if (rope_here) {
      o.key.includes["QIN"] = "q_in_rope";
      set_rope_constants(o.key, s);
      o.bindings = {att, *rope_->qkv, k_cache, v_cache, pages, *step_, *rope_->aux, *rope_->rope};
      rope_op->skip_decode_max = kAttnDecodeMax;
    }
    d.decode = variant(o.key, o.bindings, "attention_decode:" + att.label(), "attention_decode");
    d.decode_max = kAttnDecodeMax;
    decode_ = std::move(o);
  }
  rope_.reset();
}

// KV positions per flash attention step: 64 on heads of 128+ dims where the workgroup's memory holds
// them (the H200's 48 KB), else 32. H200 (bench/EXPERIMENTS.md): 64 gained 2% on Qwen3-4B's 1,024-token
// prefill and 10% on a 4,096-position one, and lost 4% on Llama-3.2-1B's (64 dims) 512 and 1,024.
// Where flash_halves picks two halves, each takes 32 of a 64-position step.
uint32_t GraphBuilder::flash_tile(uint32_t hd, uint32_t wg_bytes) {
  return hd >= 128 && flash_bytes(hd, 64) <= wg_bytes ? 64 : 32;
}
// Two halves of 4 warps, each 32 positions of a 64-position step, on heads of 128+ dims where their
// arrays fit: an H200 SM holds one workgroup of either (about 54 KB of workgroup memory an SM, a
// 128-dim kernel needs 30.5 KB), so the second half doubles the warps there (bench/EXPERIMENTS.md).
uint32_t GraphBuilder::flash_halves(uint32_t hd, uint32_t wg_bytes) {
  return hd >= 128 && flash_bytes(hd, 32, 2) <= wg_bytes ? 2 : 1;
}
// The kernel's arrays: 32 query rows of HD / 4 + 1 vec4s, and for each half a tile of keys or values,
// a tile of weights (8 vec4s per position) and 128 vec4s for the reductions.
uint32_t GraphBuilder::flash_bytes(uint32_t hd, uint32_t tile, uint32_t halves) {
  return 16 * (kAttnFlashRows * (hd / 4 + 1) + halves * (tile * hd / 8 + tile * 8 + 128));
}

bool GraphBuilder::flash_serves(uint32_t hd, uint32_t nh, uint32_t nkv) {
  return hd % 32 == 0 && hd <= 128 && kAttnFlashRows % (nh / nkv) == 0;
}

void GraphBuilder::attention_combine(const gpu::Buffer& att, const gpu::Buffer& part, const AttnShape& s) {
  gpu::KernelKey key{"attention_combine",
                     {{"XOUT", "x_out_none"}, {"REDUCE", reduce_snippet()}, {"PACK8", pack8_snippet()}},
                     {{"HD", s.hd}, {"NH", s.nh}}};
  // A thread a dim on heads past 64 dims (H200, Qwen3-4B at 4,096 positions: decode +0.2% Q4_0, +0.9%
  // Q4_K_M against 64 threads of two dims each: bench/EXPERIMENTS.md).
  key.constants["WG"] = s.hd > 64 ? 128 : 64;
  RowOp& c = add<RowOp>(key, {att, part, *step_});
  c.a = s.nh;
  // The attention just before wrote att itself in its long passes (flash) and short decode steps.
  std::optional<AttnDirect> flash = std::move(flash_), decode = std::move(decode_);
  flash_.reset(), decode_.reset();
  if (flash) c.skip_min = g_.op<AttentionOp>(flash->op).flash_min, c.unless_flash_split = true;
  if (decode) c.skip_decode_max = g_.op<AttentionOp>(decode->op).decode_max;
  if (s.hd % 32 == 0) q8_producer(att, key, {att, part, *step_}, std::move(flash), std::move(decode));  // a head's output is whole units
}

}  // namespace ztvm
