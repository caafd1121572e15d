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
static constexpr uint32_t kAttnFlashRows = 32;
// One-token passes that see up to kAttnDecodeMax positions (graph.h): attention_decode.wgsl, a
// workgroup per query head over every position, no splits and no combine dispatch. Longer ones run
// the same kernel over splits of Forward::kSplit positions, merged by attention_combine (H200 at 4096
// positions: +3.5% 1B, +14% 4B decode against the older split kernel, bench/EXPERIMENTS.md).

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

GraphBuilder& GraphBuilder::rope_kv(const gpu::Buffer& q, const gpu::Buffer& k_cache, const gpu::Buffer& v_cache,
                                    const gpu::Buffer& qkv, const gpu::Buffer& aux, const gpu::Buffer& rope,
                                    const gpu::Buffer& pages, const AttnShape& s) {
  if (s.hd % 8 != 0 || s.hd > 128) throw ModelError("rope_kv: head size " + std::to_string(s.hd) + " is not a multiple of 8 up to 128");
  return list(RopeArgs{&q, &k_cache, &v_cache, &qkv, &aux, &rope, &pages, s});
}

GraphBuilder& GraphBuilder::attention(const gpu::Buffer& att, const gpu::Buffer& part, const gpu::Buffer& q,
                                      const gpu::Buffer& k_cache, const gpu::Buffer& v_cache, const gpu::Buffer& pages,
                                      const AttnShape& s) {
  if (s.hd % 8 != 0 || s.hd > 128) throw ModelError("attention: head size " + std::to_string(s.hd) + " is not a multiple of 8 up to 128");
  return list(AttnArgs{&att, &part, &q, &k_cache, &v_cache, &pages, s});
}

GraphBuilder& GraphBuilder::attention_combine(const gpu::Buffer& att, const gpu::Buffer& part, const AttnShape& s) {
  return list(CombineArgs{&att, &part, s});
}

// Passes of several tokens: kRopeSlots heads per workgroup (fewer, larger workgroups over a long
// pass's tokens x heads); one-token passes a head each, spread over more SMs. The passes where a
// neighbour does its work (graph_fuse.cpp) skip it, or make only the keys and values.
void GraphBuilder::lower_rope(size_t i, const RopeArgs& a) {
  const Fusion& f = fuse_[i];
  const AttnShape& s = a.s;
  const uint32_t heads = s.nh + 2 * s.nkv;
  gpu::KernelKey key{"rope_kv", {},
                     {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"ROT", s.rot}, {"PAGE", s.page}, {"NEOX", s.neox},
                      {"QK_NORM", s.qk_norm}, {"HAS_BIAS", s.bias}, {"EPS", s.eps}, {"RH_SLOTS", kRopeSlots}}};
  const std::vector<gpu::Binding> b = {*a.q, *a.k_cache, *a.v_cache, *a.qkv, *a.aux, *a.rope, *a.pages, *step_};
  RowOp& d = add<RowOp>(key, b);
  d.a = (heads + kRopeSlots - 1) / kRopeSlots;
  key.constants["RH_SLOTS"] = 1;
  d.single = variant(key, b, "rope_kv_1:" + a.q->label());
  d.single_groups = heads, d.single_max = 1;
  // Long decode steps: the QKV matvec or the split decode attention makes the heads.
  if (f.rope_in_matvec || f.q_in_decode_split) d.skip_long = true, d.long_after = kAttnDecodeMax;
  if (f.q_in_decode) d.skip_decode_max = kAttnDecodeMax;  // short ones: the decode attention
  if (f.q_in_flash) {  // flash passes: the keys and values only
    key.constants["RH_SLOTS"] = kRopeSlots;
    key.constants["FIRST_HEAD"] = s.nh;
    d.long_main = variant(key, b, "rope_kv_kv:" + a.q->label(), "rope_kv_kv");
    d.long_a = (2 * s.nkv + kRopeSlots - 1) / kRopeSlots;
    d.long_min = kAttnFlashMinTokens;
  }
}

void GraphBuilder::lower_attention(size_t i, const AttnArgs& a) {
  const Fusion& f = fuse_[i];
  const AttnShape& s = a.s;
  const RopeArgs* rope = i > 0 ? args<RopeArgs>(i - 1) : nullptr;  // where f makes the queries from its raw rows
  auto key = [&](uint32_t g) -> gpu::KernelKey {
    return {"attention", {},
            {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"PAGE", s.page}, {"G", g},
             {"SCALE", 1.0 / std::sqrt((double)s.hd)}}};
  };
  const std::vector<gpu::Binding> b = {*a.part, *a.q, *a.k_cache, *a.v_cache, *a.pages, *step_};
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
    d.blocked = variant(bk, b, "attention_blocked:" + a.part->label(), d.main.role);
    d.blocked_a = s.nh / blk_g, d.blocked_tq = tq, d.blocked_min = kAttnBlockedMinTokens;
  }
  // The variants that write att themselves (flash, decode) also store its int8 units where the matmul
  // after the combine reads them (f.q8_max: graph_fuse.cpp); from f32_dead_from tokens only those.
  auto with_q8 = [&](const gpu::KernelKey& k, const std::vector<gpu::Binding>& kb, const std::string& role) {
    return q8_variant(k, kb, k.kernel + "_q8:" + a.att->label(), role);
  };
  const uint32_t fg = s.nh / s.nkv;  // a tile is the query heads of one KV head x 32 / fg tokens
  if (flash_serves(s.hd, s.nh, s.nkv)) {
    gpu::KernelKey fk{"attention_flash", {{"XOUT", "x_out_none"}, {"QIN", "q_flash_plain"}},
                      {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"PAGE", s.page}, {"G", fg},
                       {"SCALE", 1.0 / std::sqrt((double)s.hd)}}};
    std::vector<gpu::Binding> fb = {*a.att, *a.q, *a.k_cache, *a.v_cache, *a.pages, *step_, *a.part};
    // The queries made here from the raw rows (a third of its heads on Qwen3-4B, and q neither written
    // nor read back).
    if (f.q_in_flash) {
      fk.includes["QIN"] = "q_flash_rope";
      set_rope_constants(fk, s);
      fb[1] = *rope->qkv;
      fb.push_back(*rope->aux), fb.push_back(*rope->rope);
    }
    const uint32_t wg_bytes = k_.device().limits().maxComputeWorkgroupStorageSize;
    fk.constants["TILE"] = flash_tile_force_ && flash_bytes(s.hd, flash_tile_force_) <= wg_bytes
                               ? flash_tile_force_ : flash_tile(s.hd, wg_bytes);
    const uint32_t halves = flash_halves_force_ && flash_bytes(s.hd, 32, flash_halves_force_) <= wg_bytes
                                ? flash_halves_force_ : flash_halves(s.hd, wg_bytes);
    if (halves == 2) {  // a step of 64 positions, 32 for each half
      fk.constants["TILE"] = 32;
      fk.constants["HALVES"] = 2;
    }
    d.flash = variant(fk, fb, "attention_flash:" + a.att->label(), "attention_flash");
    d.flash_a = s.nh / fg, d.flash_tq = kAttnFlashRows / fg, d.flash_min = kAttnFlashMinTokens;
    gpu::KernelKey sk = fk;
    sk.constants["SPLITS"] = 1;
    d.flash_split = variant(sk, fb, "attention_flash_split:" + a.part->label(), "attention_flash_split");
    if (f.q8_max) {
      d.flash_q8 = with_q8(fk, fb, "attention_flash_q8");
      d.flash_q8_max = f.q8_max;
      if (f.f32_dead_from) {
        gpu::KernelKey only = fk;
        only.constants["F32_OUT"] = 0;
        d.flash_q8_only = with_q8(only, fb, "attention_flash_q8");
        d.flash_q8_only_min = f.f32_dead_from;
      }
    }
  }
  gpu::KernelKey ok{"attention_decode",
                    {{"XOUT", "x_out_none"}, {"QIN", "q_in_plain"}, {"REDUCE", "reduce_wg"}, {"PACK8", pack8_snippet()}},
                    {{"HD", s.hd}, {"NH", s.nh}, {"NKV", s.nkv}, {"PAGE", s.page}, {"SCALE", 1.0 / std::sqrt((double)s.hd)}}};
  std::vector<gpu::Binding> ob = {*a.att, *a.q, *a.k_cache, *a.v_cache, *a.pages, *step_};
  gpu::KernelKey sk = ok;  // longer one-token passes: over splits (attention_split)
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
  std::vector<gpu::Binding> sb = ob;
  sb[0] = *a.part;
  // The query, key and value heads made in the kernel (q_in_rope_split.wgsl), so that no one-token
  // pass runs rope_kv, except where the QKV matvec stores the roped heads in those passes.
  if (f.q_in_decode_split) {
    sk.includes["QIN"] = "q_in_rope_split";
    set_rope_constants(sk, s);
    sb = {*a.part, *rope->qkv, *a.k_cache, *a.v_cache, *a.pages, *step_, *rope->aux, *rope->rope};
  }
  d.decode_split = variant(sk, sb, "attention_decode_split:" + a.part->label(), "attention_decode_split");
  // Unsplit decode steps: the query, key and value heads made here from the raw qkv row (q_in_rope.wgsl).
  if (f.q_in_decode) {
    ok.includes["QIN"] = "q_in_rope";
    set_rope_constants(ok, s);
    ob = {*a.att, *rope->qkv, *a.k_cache, *a.v_cache, *a.pages, *step_, *rope->aux, *rope->rope};
  }
  d.decode = variant(ok, ob, "attention_decode:" + a.att->label(), "attention_decode");
  d.decode_max = kAttnDecodeMax;
  if (f.q8_max) d.decode_q8 = with_q8(ok, ob, "attention_decode_q8");
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

void GraphBuilder::lower_combine(size_t i, const CombineArgs& a) {
  const AttnShape& s = a.s;
  gpu::KernelKey key{"attention_combine",
                     {{"XOUT", "x_out_none"}, {"REDUCE", reduce_snippet()}, {"PACK8", pack8_snippet()}},
                     {{"HD", s.hd}, {"NH", s.nh}}};
  // A thread a dim on heads past 64 dims (H200, Qwen3-4B at 4,096 positions: decode +0.2% Q4_0, +0.9%
  // Q4_K_M against 64 threads of two dims each: bench/EXPERIMENTS.md).
  key.constants["WG"] = s.hd > 64 ? 128 : 64;
  const std::vector<gpu::Binding> b = {*a.att, *a.part, *step_};
  RowOp& c = add<RowOp>(key, b);
  c.a = s.nh;
  // The attention just before wrote att itself in its long passes (flash) and short decode steps.
  if (const AttentionOp* at = i > 0 && args<AttnArgs>(i - 1) ? g_.find<AttentionOp>(last_op_[i - 1]) : nullptr) {
    if (at->flash) c.skip_min = at->flash_min, c.unless_flash_split = true;
    if (at->decode) c.skip_decode_max = at->decode_max;
  }
  const Fusion& f = fuse_[i];
  if (!f.q8_max) return;
  c.single = q8_variant(key, b, key.kernel + "_q8:" + a.att->label(), c.main.role + "_q8");
  c.single_groups = c.a, c.single_max = f.q8_max;
}

}  // namespace ztvm
