// ModelConfig from a Hugging Face config.json (+ generation_config.json), and HF tensor names ->
// canonical GGUF names. Both config dialects are read: transformers >= 5 nests RoPE settings in
// `rope_parameters`; 4.x has top-level `rope_theta`, `rope_scaling`, `partial_rotary_factor`.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model_error.h"
#include "model/model_file.h"

namespace ztvm {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw ModelError(path.string() + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw ModelError(path.string() + ": invalid JSON: " + e.what());
  }
}

// A present, non-null field of the right kind, or nullptr.
const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

uint32_t get_u32(const json& cfg, const char* key, const std::string& src, std::optional<uint32_t> dflt = {}) {
  const json* v = field(cfg, key);
  if (!v && dflt) return *dflt;
  if (!v) throw ModelError(src + ": missing '" + key + "'");
  if (!v->is_number_unsigned() || v->get<uint64_t>() > 0xffffffffu)
    throw ModelError(src + ": '" + key + "': expected a non-negative integer, got " + v->dump());
  return v->get<uint32_t>();
}

double get_num(const json& obj, const char* key, const std::string& src, double dflt) {
  const json* v = field(obj, key);
  if (!v) return dflt;
  if (!v->is_number()) throw ModelError(src + ": '" + key + "': expected a number, got " + v->dump());
  return v->get<double>();
}

// An embedding model packed for sentence-transformers names its pooling in the Pooling module's
// config.json (modules.json says where; 1_Pooling by convention). Max and weighted-mean pooling are
// left unset like a model that names none (ztvm embed then says which pooling it used).
Pooling sentence_transformers_pooling(const fs::path& root) {
  fs::path dir = root / "1_Pooling";
  if (fs::exists(root / "modules.json")) {
    const json modules = read_json(root / "modules.json");
    if (modules.is_array())
      for (const json& m : modules)
        if (m.is_object() && m.value("type", "") == "sentence_transformers.models.Pooling" && m.contains("path") &&
            m["path"].is_string())
          dir = root / m["path"].get<std::string>();
  }
  if (!fs::exists(dir / "config.json")) return Pooling::Unset;
  const json p = read_json(dir / "config.json");
  auto on = [&](const char* key) { return p.is_object() && p.value(key, false) == true; };
  if (on("pooling_mode_lasttoken")) return Pooling::Last;
  if (on("pooling_mode_cls_token")) return Pooling::Cls;
  if (on("pooling_mode_mean_tokens")) return Pooling::Mean;
  return Pooling::Unset;
}

// eos_token_id is an int or a list of ints in both config.json and generation_config.json.
void add_ids(const json* v, std::vector<int32_t>* ids, const std::string& src) {
  if (!v) return;
  std::vector<json> items = v->is_array() ? v->get<std::vector<json>>() : std::vector<json>{*v};
  for (const json& item : items) {
    if (!item.is_number_integer()) throw ModelError(src + ": 'eos_token_id': expected integers, got " + v->dump());
    const int32_t id = item.get<int32_t>();
    if (std::find(ids->begin(), ids->end(), id) == ids->end()) ids->push_back(id);
  }
}

std::string arch_from_hf(const json& cfg, const std::string& src) {
  if (const json* t = field(cfg, "model_type"); t && t->is_string()) return t->get<std::string>();
  static const std::pair<const char*, const char*> kClasses[] = {
      {"LlamaForCausalLM", "llama"}, {"Qwen2ForCausalLM", "qwen2"}, {"Qwen3ForCausalLM", "qwen3"}, {"Phi3ForCausalLM", "phi3"},
      {"Qwen3MoeForCausalLM", "qwen3moe"}, {"Qwen3_5ForCausalLM", "qwen3_5_text"},
      {"Qwen3_5MoeForCausalLM", "qwen3_5_moe_text"}, {"Qwen3_5ForConditionalGeneration", "qwen3_5"},
      {"Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe"}};
  if (const json* a = field(cfg, "architectures"); a && a->is_array() && !a->empty() && (*a)[0].is_string()) {
    const std::string cls = (*a)[0].get<std::string>();
    for (auto& [name, arch] : kClasses)
      if (cls == name) return arch;
    return cls;
  }
  throw ModelError(src + ": neither 'model_type' nor 'architectures' is set");
}

}  // namespace

std::vector<float> llama3_rope_factors(uint32_t rotary_dim, float theta, float factor, float low_freq_factor,
                                       float high_freq_factor, float original_context) {
  // Wavelengths shorter than original/high_freq_factor keep their frequency, longer than
  // original/low_freq_factor are divided by `factor`, and the band between is interpolated.
  const double low_freq_wavelen = original_context / low_freq_factor;
  const double high_freq_wavelen = original_context / high_freq_factor;
  std::vector<float> out;
  for (uint32_t i = 0; i < rotary_dim; i += 2) {
    const float freq = 1.0f / std::pow(theta, float(i) / float(rotary_dim));
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_freq_wavelen) {
      out.push_back(1.f);
    } else if (wavelen > low_freq_wavelen) {
      out.push_back(factor);
    } else {
      const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      out.push_back(float(1.0 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

namespace {

// Qwen3.5: which layers are gated DeltaNet (layer_types, else every full_attention_interval-th layer
// is attention), the DeltaNet's shapes, and the MoE variant's experts: every layer sparse, the
// router's top-k always renormalised (transformers' Qwen3_5MoeTopKRouter has no switch), a shared expert.
void parse_qwen35(const json& cfg, const std::string& src, uint32_t shared, ModelConfig* c) {
  c->linear_conv_kernel_dim = get_u32(cfg, "linear_conv_kernel_dim", src, 4);
  c->linear_num_key_heads = get_u32(cfg, "linear_num_key_heads", src);
  c->linear_key_head_dim = get_u32(cfg, "linear_key_head_dim", src);
  c->linear_num_value_heads = get_u32(cfg, "linear_num_value_heads", src);
  c->linear_value_head_dim = get_u32(cfg, "linear_value_head_dim", src);
  c->linear_v_heads_tiled = false;  // HF groups each key head's value heads together
  c->layer_kinds.assign(c->num_hidden_layers, LayerKind{Mixer::GatedDeltaNet, Ffn::Dense});
  if (const json* types = field(cfg, "layer_types")) {
    if (!types->is_array() || types->size() != c->num_hidden_layers)
      throw ModelError(src + ": 'layer_types': expected " + std::to_string(c->num_hidden_layers) + " entries, got " +
                       types->dump());
    for (uint32_t l = 0; l < c->num_hidden_layers; l++) {
      const std::string t = (*types)[l].is_string() ? (*types)[l].get<std::string>() : (*types)[l].dump();
      if (t == "full_attention") c->layer_kinds[l].mixer = Mixer::GatedAttention;
      else if (t != "linear_attention")
        throw ModelError(src + ": 'layer_types'[" + std::to_string(l) + "]: '" + t +
                         "' (expected linear_attention or full_attention)");
    }
  } else {
    const uint32_t every = get_u32(cfg, "full_attention_interval", src, 4);
    for (uint32_t l = 0; l < c->num_hidden_layers; l++)
      if (every && (l + 1) % every == 0) c->layer_kinds[l].mixer = Mixer::GatedAttention;
  }
  if (c->arch != Arch::Qwen35Moe) return;
  c->num_experts = get_u32(cfg, "num_experts", src);
  c->num_experts_per_tok = get_u32(cfg, "num_experts_per_tok", src);
  c->moe_intermediate_size = get_u32(cfg, "moe_intermediate_size", src);
  c->shared_expert_intermediate_size = shared;
  c->norm_topk_prob = true;
  for (LayerKind& k : c->layer_kinds) k.ffn = Ffn::Moe;
}

ModelConfig parse_hf_config(const fs::path& root, const json& cfg, const std::string& src, const SafetensorsDir* st) {
  ModelConfig c;
  c.arch_name = arch_from_hf(cfg, src);
  // HF's model_types; GGUF's names are kept. The multimodal Qwen3.5 wrappers were read as their
  // text_config (config_from_hf).
  static const std::pair<const char*, const char*> kTypes[] = {
      {"qwen3_moe", "qwen3moe"}, {"qwen3_5_text", "qwen35"}, {"qwen3_5", "qwen35"},
      {"qwen3_5_moe_text", "qwen35moe"}, {"qwen3_5_moe", "qwen35moe"}};
  for (auto& [hf, gguf] : kTypes)
    if (c.arch_name == hf) c.arch_name = gguf;
  c.arch = parse_arch(c.arch_name, src);
  const bool qwen35 = c.arch == Arch::Qwen35 || c.arch == Arch::Qwen35Moe;
  c.name = (root.filename().empty() ? root.parent_path() : root).filename().string();

  c.hidden_size = get_u32(cfg, "hidden_size", src);
  c.num_hidden_layers = get_u32(cfg, "num_hidden_layers", src);
  // Qwen3.5-MoE has no dense FFN, and its configs no intermediate_size: the shared expert's width stands in.
  const uint32_t shared = get_u32(cfg, "shared_expert_intermediate_size", src, 0);
  c.intermediate_size = get_u32(cfg, "intermediate_size", src, c.arch == Arch::Qwen35Moe && shared ? std::optional(shared) : std::nullopt);
  c.num_attention_heads = get_u32(cfg, "num_attention_heads", src);
  if (c.num_attention_heads == 0) throw ModelError(src + ": 'num_attention_heads' is 0");
  c.num_key_value_heads = get_u32(cfg, "num_key_value_heads", src, c.num_attention_heads);
  c.head_dim = get_u32(cfg, "head_dim", src, c.hidden_size / c.num_attention_heads);
  c.vocab_size = get_u32(cfg, "vocab_size", src, 0);
  c.rms_norm_eps = float(get_num(cfg, "rms_norm_eps", src, 1e-6));
  c.max_position_embeddings = get_u32(cfg, "max_position_embeddings", src, 2048);
  c.rope_style = RopeStyle::Neox;  // HF applies rotate_half to un-permuted weights
  c.qk_norm = c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe || qwen35;
  if (qwen35) parse_qwen35(cfg, src, shared, &c);
  // Mixture of experts: layer l is sparse unless listed in mlp_only_layers, every decoder_sparse_step-th.
  if (c.arch == Arch::Qwen3Moe) {
    c.num_experts = get_u32(cfg, field(cfg, "num_experts") ? "num_experts" : "num_local_experts", src);  // transformers 5's name
    c.num_experts_per_tok = get_u32(cfg, "num_experts_per_tok", src);
    c.moe_intermediate_size = get_u32(cfg, "moe_intermediate_size", src);
    if (const json* n = field(cfg, "norm_topk_prob"); n && n->is_boolean()) c.norm_topk_prob = n->get<bool>();
    else c.norm_topk_prob = false;  // transformers' default for Qwen3-MoE
    const uint32_t step = get_u32(cfg, "decoder_sparse_step", src, 1);
    std::vector<uint32_t> dense;
    if (const json* m = field(cfg, "mlp_only_layers"); m && m->is_array())
      for (const json& v : *m)
        if (v.is_number_unsigned()) dense.push_back(v.get<uint32_t>());
    c.layer_kinds.resize(c.num_hidden_layers);
    for (uint32_t l = 0; l < c.num_hidden_layers; l++)
      if (c.num_experts && step && (l + 1) % step == 0 && std::find(dense.begin(), dense.end(), l) == dense.end())
        c.layer_kinds[l].ffn = Ffn::Moe;
  }
  // Qwen2 always has q/k/v biases; Llama and Qwen3 make them optional via attention_bias.
  const json* bias = field(cfg, "attention_bias");
  c.attn_bias = c.arch == Arch::Qwen2 || (c.arch != Arch::Phi3 && bias && bias->is_boolean() && bias->get<bool>());
  // Absent tie_word_embeddings: tied exactly when the checkpoint has no lm_head.
  if (const json* tie = field(cfg, "tie_word_embeddings"); tie && tie->is_boolean()) c.tie_word_embeddings = tie->get<bool>();
  else c.tie_word_embeddings = st && !st->find("lm_head.weight");

  // RoPE: transformers 5 `rope_parameters`, else 4.x top-level fields and `rope_scaling`.
  const json* params = field(cfg, "rope_parameters");
  const json* scaling = params ? params : field(cfg, "rope_scaling");
  c.rope_theta = float(get_num(params ? *params : cfg, "rope_theta", src, get_num(cfg, "rope_theta", src, 10000.0)));
  const double partial = get_num(params ? *params : cfg, "partial_rotary_factor", src,
                                 get_num(cfg, "partial_rotary_factor", src, 1.0));
  c.rotary_dim = uint32_t(c.head_dim * partial);
  std::string rope_type = "default";
  if (scaling) {
    if (const json* t = field(*scaling, "rope_type")) rope_type = t->get<std::string>();
    else if (const json* t2 = field(*scaling, "type")) rope_type = t2->get<std::string>();
  }
  if (rope_type == "llama3") {
    c.rope_freq_factors = llama3_rope_factors(
        c.rotary_dim, c.rope_theta, float(get_num(*scaling, "factor", src, 8.0)),
        float(get_num(*scaling, "low_freq_factor", src, 1.0)), float(get_num(*scaling, "high_freq_factor", src, 4.0)),
        float(get_num(*scaling, "original_max_position_embeddings", src, 8192)));
  } else if (rope_type == "longrope" || rope_type == "su") {
    // Phi-3 long context: short factors apply up to the original context, long ones beyond; the
    // attention factor compensates for the stretched positions, as HF and llama.cpp compute it.
    const json* short_f = field(*scaling, "short_factor");
    const json* long_f = field(*scaling, "long_factor");
    if (!short_f || !long_f) throw ModelError(src + ": longrope needs 'short_factor' and 'long_factor'");
    c.rope_freq_factors = short_f->get<std::vector<float>>();
    c.rope_freq_factors_long = long_f->get<std::vector<float>>();
    c.rope_original_context = uint32_t(get_num(*scaling, "original_max_position_embeddings", src,
                                               get_num(cfg, "original_max_position_embeddings", src, 0)));
    if (c.rope_original_context == 0) throw ModelError(src + ": longrope needs 'original_max_position_embeddings'");
    const double scale = double(c.max_position_embeddings) / c.rope_original_context;
    const double dflt = scale > 1 ? std::sqrt(1 + std::log(scale) / std::log(double(c.rope_original_context))) : 1.0;
    c.rope_attn_factor = float(get_num(*scaling, "attention_factor", src, dflt));
  } else if (rope_type != "default") {
    throw ModelError(src + ": RoPE type '" + rope_type + "' is not supported (supported: default, llama3, longrope)");
  }

  // Special tokens: config.json, then generation_config.json (which often lists more eos ids).
  if (const json* b = field(cfg, "bos_token_id"); b && b->is_number_integer()) c.bos_token_id = b->get<int32_t>();
  add_ids(field(cfg, "eos_token_id"), &c.eos_token_ids, src);
  if (fs::exists(root / "generation_config.json")) {
    const json gen = read_json(root / "generation_config.json");
    add_ids(field(gen, "eos_token_id"), &c.eos_token_ids, (root / "generation_config.json").string());
    if (c.bos_token_id < 0)
      if (const json* b = field(gen, "bos_token_id"); b && b->is_number_integer()) c.bos_token_id = b->get<int32_t>();
  }
  c.pooling = sentence_transformers_pooling(root);
  return c;
}

}  // namespace

ModelConfig config_from_hf(const std::string& dir, const SafetensorsDir* st) {
  const fs::path root(dir);
  const std::string src = (root / "config.json").string();
  json cfg = read_json(root / "config.json");
  // Qwen3.5's multimodal checkpoints nest the language model's fields under text_config; the
  // wrapper's own (tie_word_embeddings, token ids) fill in what it leaves out.
  const std::string type = cfg.is_object() ? cfg.value("model_type", "") : "";
  if (const json* text = field(cfg, "text_config"); text && text->is_object() && (type == "qwen3_5" || type == "qwen3_5_moe")) {
    json merged = *text;
    for (auto& [key, value] : cfg.items())  // the wrapper ties (or not) the LM head it holds
      if (key != "text_config" && key != "vision_config" && (!merged.contains(key) || key == "tie_word_embeddings"))
        merged[key] = value;
    if (!merged.contains("model_type") || !merged["model_type"].is_string()) merged["model_type"] = type;
    cfg = std::move(merged);
  }
  try {
    return parse_hf_config(root, cfg, src, st);
  } catch (const json::exception& e) {  // a field of the wrong JSON type
    throw ModelError(src + ": " + e.what());
  }
}

std::map<std::string, TensorView> map_hf_tensors(const SafetensorsDir& st, const ModelConfig& config) {
  static const std::pair<const char*, const char*> kLayerNames[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},     {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.weight", "attn_k.weight"},     {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.weight", "attn_v.weight"},     {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"}, {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  // Phi-3: fused, split later
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},       {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.gate_up_proj.weight", "ffn_gate_up.weight"},  // Phi-3: fused, split later
      // Mixture of experts: the router, and the experts stacked as transformers 5 holds them in
      // memory ([experts, 2 ff, d]: each expert's gate rows, then its up rows; split later). Its
      // save_pretrained, like the Hub's checkpoints, writes them one by one (below).
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"mlp.experts.gate_up_proj", "ffn_gate_up_exps.weight"}, {"mlp.experts.down_proj", "ffn_down_exps.weight"},
      // Qwen3.5-MoE's shared expert and its gate.
      {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"}, {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
      {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"}, {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
      // Qwen3.5's gated DeltaNet, under llama.cpp's names (open_model turns A_log into ssm_a = -exp(A_log)).
      {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"}, {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
      {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},   {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
      {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},    {"linear_attn.dt_bias", "ssm_dt.bias"},
      {"linear_attn.A_log", "ssm_a"},                        {"linear_attn.norm.weight", "ssm_norm.weight"},
      {"linear_attn.out_proj.weight", "ssm_out.weight"},
  };
  // "mlp.experts.7.up_proj.weight" -> expert_tensor(l, "ffn_up", 7), for models with experts.
  auto expert_name = [&](uint32_t layer, const std::string& rest) -> std::string {
    static const std::string pre = "mlp.experts.";
    if (!config.num_experts || rest.rfind(pre, 0) != 0) return {};
    const size_t dot = rest.find('.', pre.size());
    const std::string num = rest.substr(pre.size(), dot == std::string::npos ? std::string::npos : dot - pre.size());
    if (num.empty() || num.size() > 5 || !std::all_of(num.begin(), num.end(), ::isdigit)) return {};
    const uint32_t e = (uint32_t)std::stoul(num);
    const std::string what = dot == std::string::npos ? "" : rest.substr(dot + 1);
    if (e >= config.num_experts) return {};
    if (what == "gate_proj.weight") return expert_tensor(layer, "ffn_gate", e);
    if (what == "up_proj.weight") return expert_tensor(layer, "ffn_up", e);
    if (what == "down_proj.weight") return expert_tensor(layer, "ffn_down", e);
    return {};
  };
  const bool qwen35 = config.arch == Arch::Qwen35 || config.arch == Arch::Qwen35Moe;
  std::map<std::string, TensorView> out;
  for (const TensorView& t : st.tensors()) {
    std::string canonical;
    std::string n = t.name;
    if (qwen35) {
      // The multimodal checkpoints: the language model under model.language_model, beside a vision
      // tower and a multi-token-prediction head that text generation does not run.
      if (n.rfind("model.visual.", 0) == 0 || n.rfind("mtp.", 0) == 0) continue;
      if (n.rfind("model.language_model.", 0) == 0) n = "model." + n.substr(21);
    }
    if (n == "model.embed_tokens.weight") canonical = "token_embd.weight";
    else if (n == "model.norm.weight") canonical = "output_norm.weight";
    else if (n == "lm_head.weight") {
      if (config.tie_word_embeddings) continue;  // tied: the head is token_embd
      canonical = "output.weight";
    } else if (n.rfind("model.layers.", 0) == 0) {
      const size_t dot = n.find('.', 13);
      const std::string num = n.substr(13, dot == std::string::npos ? std::string::npos : dot - 13);
      const std::string rest = dot == std::string::npos ? "" : n.substr(dot + 1);
      if (rest == "self_attn.rotary_emb.inv_freq") continue;  // a buffer HF recomputes anyway
      const bool numeric = !num.empty() && num.size() < 6 && std::all_of(num.begin(), num.end(), ::isdigit);
      for (auto& [hf, gguf] : kLayerNames)
        if (numeric && rest == hf) canonical = "blk." + std::to_string(std::stoul(num)) + "." + gguf;
      if (numeric && canonical.empty()) canonical = expert_name((uint32_t)std::stoul(num), rest);
      if (numeric && std::stoul(num) >= config.num_hidden_layers)
        throw ModelError(st.dir() + ": tensor '" + n + "': layer " + num + " but num_hidden_layers is " +
                         std::to_string(config.num_hidden_layers));
    }
    if (canonical.empty())
      throw ModelError(st.dir() + ": unexpected tensor '" + n + "' for architecture " + config.arch_name +
                       " (ztvm would ignore a weight the model uses)");
    TensorView view = t;
    view.name = canonical;
    out[canonical] = view;
  }
  return out;
}

}  // namespace ztvm
