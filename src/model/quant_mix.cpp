// llama.cpp's per-tensor type choices (facts from its llama-quant.cpp, commits 80fb11a and the pinned one), for the
// mixtures we write. Tensor order does not matter here: llama.cpp counts attn_v tensors in file
// order, which for one attn_v per layer is the layer index.
#include "model/quant_mix.h"

#include <algorithm>
#include <cctype>

#include "model/model_error.h"

namespace ztvm {

namespace {

struct MixName {
  QuantMix mix;
  const char* name;
  uint32_t file_type;
};
constexpr MixName kMixes[] = {
    {QuantMix::F16, "F16", 1},       {QuantMix::Q4_0, "Q4_0", 2},     {QuantMix::Q8_0, "Q8_0", 7},
    {QuantMix::Q3_K_M, "Q3_K_M", 12}, {QuantMix::Q4_K_M, "Q4_K_M", 15}, {QuantMix::Q5_K_M, "Q5_K_M", 17},
    {QuantMix::IQ4_XS, "IQ4_XS", 30}};

const MixName& entry(QuantMix mix) {
  for (const MixName& m : kMixes)
    if (m.mix == mix) return m;
  throw ModelError("quant mix: unknown value " + std::to_string(int(mix)));
}

// A 256-element-block type cannot encode rows of other lengths: llama.cpp's 32-block stand-in.
GgmlType fit_rows(GgmlType t, uint64_t cols) {
  if (cols % block_elems(t) == 0) return t;
  switch (t) {
    case GgmlType::Q6_K: t = GgmlType::Q8_0; break;
    case GgmlType::Q5_K: t = GgmlType::Q5_1; break;
    case GgmlType::Q4_K: t = GgmlType::Q5_0; break;
    case GgmlType::Q3_K: case GgmlType::Q2_K: t = GgmlType::Q4_0; break;
    case GgmlType::IQ4_XS: t = GgmlType::IQ4_NL; break;
    default: break;
  }
  return cols % block_elems(t) == 0 ? t : GgmlType::F16;
}

}  // namespace

QuantMix parse_quant_mix(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return char(std::toupper(ch)); });
  for (const MixName& m : kMixes)
    if (upper == m.name) return m.mix;
  throw ModelError("unknown quantization type '" + name + "' (expected Q4_0, Q4_K_M, Q5_K_M, Q3_K_M, IQ4_XS, Q8_0 or F16)");
}

const char* quant_mix_name(QuantMix mix) { return entry(mix).name; }

uint32_t quant_mix_file_type(QuantMix mix) { return entry(mix).file_type; }

bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

GgmlType quant_mix_type(QuantMix mix, TensorRole role, uint32_t layer, uint32_t n_layers, bool tied, uint64_t cols,
                        uint32_t n_gqa, uint32_t n_expert) {
  // The router is small and decides which experts run: llama-quantize copies it as converted (F32).
  if (role == TensorRole::FfnGateInp || role == TensorRole::Unquantized) return GgmlType::F32;
  if (mix == QuantMix::F16) return fit_rows(GgmlType::F16, cols);
  if (mix == QuantMix::Q8_0) return fit_rows(GgmlType::Q8_0, cols);
  // The LM head decides next-token quality, so llama.cpp spends 6.5 bits on it (and on the
  // embedding when the two are one tensor).
  if (role == TensorRole::Output || (tied && role == TensorRole::TokenEmbd)) return fit_rows(GgmlType::Q6_K, cols);
  const bool v = role == TensorRole::AttnV || role == TensorRole::AttnQkv;  // llama.cpp's attn_v category
  const int l = int(layer), n = int(n_layers);
  // Mixtral's 8 experts share one attention, so llama.cpp spends bits there (~128 MB on 8x7B).
  if (n_expert == 8 && (v || role == TensorRole::AttnK)) return fit_rows(GgmlType::Q8_0, cols);
  if (n_expert == 8 && role == TensorRole::AttnOutput &&
      (mix == QuantMix::Q3_K_M || mix == QuantMix::Q4_K_M || mix == QuantMix::IQ4_XS))
    return fit_rows(GgmlType::Q5_K, cols);
  switch (mix) {
    case QuantMix::Q4_0: return fit_rows(GgmlType::Q4_0, cols);
    case QuantMix::Q4_K_M:
    case QuantMix::Q5_K_M:
      if ((v || role == TensorRole::FfnDown) && use_more_bits(l, n)) return fit_rows(GgmlType::Q6_K, cols);
      return fit_rows(mix == QuantMix::Q4_K_M ? GgmlType::Q4_K : GgmlType::Q5_K, cols);
    case QuantMix::Q3_K_M:
      if (v) return fit_rows(l < 2 ? GgmlType::Q5_K : GgmlType::Q4_K, cols);
      if (role == TensorRole::FfnDown) return fit_rows(l < n / 16 ? GgmlType::Q5_K : GgmlType::Q4_K, cols);
      if (role == TensorRole::AttnOutput) return fit_rows(GgmlType::Q4_K, cols);
      return fit_rows(GgmlType::Q3_K, cols);
    case QuantMix::IQ4_XS:
      if ((v && n_gqa >= 4) || (role == TensorRole::FfnDown && l < n / 8)) return fit_rows(GgmlType::Q5_K, cols);
      return fit_rows(GgmlType::IQ4_XS, cols);
    default:
      throw ModelError("quant mix: unknown value " + std::to_string(int(mix)));
  }
}

}  // namespace ztvm
