// ztvm info MODEL: architecture and config, file metadata (long arrays summarised), tensor table.
// A GGUF file ztvm cannot run (vocab-only, other architecture) still shows its metadata and tensors.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/command.h"
#include "hub/pull.h"
#include "model/model_error.h"
#include "model/model_file.h"

namespace ztvm::cli {
namespace {

const char* arch_label(Arch a) {
  switch (a) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Phi3: return "phi3";
    case Arch::Qwen3Moe: return "qwen3moe";
    case Arch::Qwen35: return "qwen35";
    case Arch::Qwen35Moe: return "qwen35moe";
  }
  return "?";
}

void print_config(const ModelConfig& c) {
  std::printf("architecture        %s (%s)\n", c.arch_name.c_str(), arch_label(c.arch));
  std::printf("name                %s\n", c.name.c_str());
  std::printf("vocab_size          %u\n", c.vocab_size);
  std::printf("hidden_size         %u\n", c.hidden_size);
  std::printf("intermediate_size   %u\n", c.intermediate_size);
  std::printf("num_hidden_layers   %u\n", c.num_hidden_layers);
  if (c.num_experts) {
    uint32_t moe = 0;
    for (uint32_t l = 0; l < c.num_hidden_layers; l++) moe += c.layer(l).ffn == Ffn::Moe;
    std::printf("experts             %u of %u per token, %u wide%s, in %u of %u layers\n", c.num_experts_per_tok,
                c.num_experts, c.moe_intermediate_size, c.norm_topk_prob ? ", weights renormalised" : "", moe,
                c.num_hidden_layers);
  }
  if (c.shared_expert_intermediate_size)
    std::printf("shared expert       %u wide, gated by sigmoid(ffn_gate_inp_shexp . x)\n", c.shared_expert_intermediate_size);
  bool hybrid = false;  // some layer is not plain attention: one letter a layer, a = attention, g = gated, d = DeltaNet
  std::string kinds;
  for (uint32_t l = 0; l < c.num_hidden_layers; l++) {
    const Mixer mx = c.layer(l).mixer;
    hybrid |= mx != Mixer::Attention;
    kinds += mx == Mixer::GatedDeltaNet ? 'd' : mx == Mixer::GatedAttention ? 'g' : 'a';
  }
  if (hybrid) {
    std::printf("layer kinds         %s (d gated DeltaNet, g gated attention, a attention)\n", kinds.c_str());
    std::printf("gated DeltaNet      %u key heads x %u, %u value heads x %u (%s order), conv kernel %u\n",
                c.linear_num_key_heads, c.linear_key_head_dim, c.linear_num_value_heads, c.linear_value_head_dim,
                c.linear_v_heads_tiled ? "tiled" : "grouped", c.linear_conv_kernel_dim);
  }
  std::printf("attention heads     %u q, %u kv, head_dim %u\n", c.num_attention_heads, c.num_key_value_heads, c.head_dim);
  std::printf("rope                %s, theta %g, rotary_dim %u%s\n", c.rope_style == RopeStyle::Normal ? "normal" : "neox",
              double(c.rope_theta), c.rotary_dim, c.rope_freq_factors.empty() ? "" : ", frequency factors");
  if (!c.rope_freq_factors_long.empty())
    std::printf("longrope            original context %u, attn_factor %g\n", c.rope_original_context, double(c.rope_attn_factor));
  std::printf("rms_norm_eps        %g\n", double(c.rms_norm_eps));
  std::printf("context             %u\n", c.max_position_embeddings);
  std::printf("tied embeddings     %s\n", c.tie_word_embeddings ? "yes" : "no");
  std::printf("qk_norm / qkv bias  %s / %s\n", c.qk_norm ? "yes" : "no", c.attn_bias ? "yes" : "no");
  std::printf("bos / eos           %d /", c.bos_token_id);
  for (int32_t id : c.eos_token_ids) std::printf(" %d", id);
  std::printf("\n");
}

void print_metadata(const GgufFile& g) {
  std::printf("\nGGUF v%u, %zu metadata keys, %zu tensors, alignment %llu\n", g.version(), g.metadata().size(),
              g.tensors().size(), (unsigned long long)g.alignment());
  for (const auto& [key, value] : g.metadata()) std::printf("  %-44s %s\n", key.c_str(), value.summary().c_str());
}

void print_tensors(const std::vector<const TensorView*>& tensors) {
  uint64_t total = 0;
  std::printf("\n  %-36s %-6s %-22s %12s\n", "tensor", "type", "shape", "bytes");
  for (const TensorView* t : tensors) {
    std::printf("  %-36s %-6s %-22s %12llu\n", t->name.c_str(), type_name(t->type), t->shape_str().c_str(),
                (unsigned long long)t->nbytes);
    total += t->nbytes;
  }
  std::printf("  %zu tensors, %.2f MiB\n", tensors.size(), double(total) / (1 << 20));
}

int run_info(int argc, char** argv) {
  CLI::App app{"Show a model's configuration, metadata and tensors"};
  std::string path;
  app.add_option("model", path, "a .gguf file, a Hugging Face model directory or ORG/REPO[:TAG] (see `ztvm pull`)")->required();
  CLI11_PARSE(app, argc, argv);
  path = hub::resolve_model(path);  // ORG/REPO[:TAG] on the hub: pulled on first use

  std::unique_ptr<ModelFile> model;
  std::unique_ptr<GgufFile> gguf_only;
  try {
    model = open_model(path);
  } catch (const ModelError& e) {
    // Not runnable, but a readable GGUF still deserves a listing (plus the reason).
    if (std::filesystem::is_directory(path)) throw;
    gguf_only = GgufFile::open(path);
    std::printf("not runnable by ztvm: %s\n", e.what());
  }
  std::printf("%s\n", path.c_str());
  std::vector<const TensorView*> tensors;
  if (model) {
    print_config(model->config);
    if (model->gguf) print_metadata(*model->gguf);
    if (model->gguf) {
      for (const TensorView& t : model->gguf->tensors()) tensors.push_back(&t);  // file order, then the parts'
      for (const auto& part : model->gguf_parts)
        for (const TensorView& t : part->tensors()) tensors.push_back(&t);
    } else {
      for (const auto& [name, t] : model->tensors)
        if (name.rfind(".weight") != std::string::npos || name.find("_exps.") == std::string::npos)
          tensors.push_back(&t);  // not the per-expert views open_model adds
    }
  } else {
    print_metadata(*gguf_only);
    for (const TensorView& t : gguf_only->tensors()) tensors.push_back(&t);
  }
  print_tensors(tensors);
  return 0;
}

Command reg("info", "show a model's config, metadata and tensor table", run_info);

}  // namespace
}  // namespace ztvm::cli
