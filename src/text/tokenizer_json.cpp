// Tokenizer from a Hugging Face tokenizer.json (model type BPE, the normalizers and pre-tokenizers
// of tokenizer_pretok.h), plus tokenizer_config.json / generation_config.json beside it for the
// BOS/EOS conventions that tokenizer.json leaves to transformers.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model_error.h"
#include "text/tokenizer_loader.h"

namespace ztvm {

using nlohmann::json;

namespace {

json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw ModelError(path + ": not valid JSON: " + e.what());
  }
}

std::string type_of(const json& j) { return j.is_object() ? j.value("type", std::string()) : std::string(); }

// A pattern object {"String": "..."} or {"Regex": "..."} as a regex (literals escaped).
std::shared_ptr<const text::Regex> pattern_regex(const json& pattern) {
  if (pattern.contains("Regex")) return std::make_shared<text::Regex>(pattern["Regex"].get<std::string>());
  return std::make_shared<text::Regex>(text::regex_quote(pattern.at("String").get<std::string>()));
}

void parse_normalizer(const json& j, const std::string& path, std::vector<text::NormalizerStep>& out) {
  if (j.is_null()) return;
  std::string type = type_of(j);
  using S = text::NormalizerStep;
  if (type == "Sequence") {
    for (const json& n : j.at("normalizers")) parse_normalizer(n, path, out);
  } else if (type == "NFC") { out.push_back({S::NFC});
  } else if (type == "NFD") { out.push_back({S::NFD});
  } else if (type == "NFKC") { out.push_back({S::NFKC});
  } else if (type == "NFKD") { out.push_back({S::NFKD});
  } else if (type == "Lowercase") { out.push_back({S::Lowercase});
  } else if (type == "Prepend") {
    out.push_back({S::Prepend, j.at("prepend").get<std::string>()});
  } else if (type == "Replace") {
    S step{S::Replace};
    step.replacement = j.at("content").get<std::string>();
    if (j.at("pattern").contains("String")) step.text = j["pattern"]["String"].get<std::string>();
    else step.regex = pattern_regex(j["pattern"]);
    out.push_back(std::move(step));
  } else if (type == "Strip") {
    S step{S::StripSpace};
    step.strip_left = j.value("strip_left", true);
    step.strip_right = j.value("strip_right", true);
    out.push_back(std::move(step));
  } else {
    throw ModelError(path + ": normalizer '" + type +
                     "' is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, Sequence)");
  }
}

text::SplitBehavior parse_behavior(const std::string& b, const std::string& path) {
  if (b == "Isolated") return text::SplitBehavior::Isolated;
  if (b == "Removed") return text::SplitBehavior::Removed;
  if (b == "MergedWithPrevious") return text::SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return text::SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return text::SplitBehavior::Contiguous;
  throw ModelError(path + ": Split behavior '" + b + "' is unknown");
}

void parse_pre_tokenizer(const json& j, const std::string& path, std::vector<text::PreTokenizerStep>& out) {
  if (j.is_null()) return;
  std::string type = type_of(j);
  using P = text::PreTokenizerStep;
  if (type == "Sequence") {
    for (const json& p : j.at("pretokenizers")) parse_pre_tokenizer(p, path, out);
  } else if (type == "Split") {
    P step{P::Split};
    step.regex = pattern_regex(j.at("pattern"));
    step.behavior = parse_behavior(j.value("behavior", std::string("Isolated")), path);
    step.invert = j.value("invert", false);
    out.push_back(std::move(step));
  } else if (type == "ByteLevel") {
    P step{P::ByteLevel};
    step.add_prefix_space = j.value("add_prefix_space", false);
    if (j.value("use_regex", true)) step.regex = std::make_shared<text::Regex>(text::kGpt2Pattern);
    out.push_back(std::move(step));
  } else if (type == "Metaspace") {
    P step{P::Metaspace};
    step.replacement = j.value("replacement", std::string("\xE2\x96\x81"));
    // Newer files say prepend_scheme; older ones add_prefix_space (true meaning "always").
    std::string scheme = j.value("prepend_scheme", std::string(j.value("add_prefix_space", true) ? "always" : "never"));
    step.prepend = scheme == "first" ? P::First : scheme == "never" ? P::Never : P::Always;
    step.split = j.value("split", true);
    out.push_back(std::move(step));
  } else if (type == "Digits") {
    P step{P::Digits};
    step.individual_digits = j.value("individual_digits", false);
    step.regex = std::make_shared<text::Regex>(R"(\p{N})");
    step.behavior = step.individual_digits ? text::SplitBehavior::Isolated : text::SplitBehavior::Contiguous;
    out.push_back(std::move(step));
  } else {
    throw ModelError(path + ": pre_tokenizer '" + type +
                     "' is not supported (supported: Split, ByteLevel, Metaspace, Digits, Sequence)");
  }
}

// True if `j` (a decoder or pre-tokenizer, possibly a Sequence) contains a step of `type`.
const json* find_step(const json& j, const std::string& type) {
  if (!j.is_object()) return nullptr;
  if (type_of(j) == type) return &j;
  for (const char* list : {"decoders", "pretokenizers", "processors"})
    if (j.contains(list))
      for (const json& s : j[list])
        if (const json* hit = find_step(s, type)) return hit;
  return nullptr;
}

// A token id as tokenizer.json writes it: a non-negative integer below any real vocabulary's size
// (the largest today are ~262k; 2^21 leaves room). A float, a negative or a huge id is a broken
// file, never an index.
constexpr int64_t kMaxTokenId = 1 << 21;
int32_t token_id(const json& v, const std::string& path, const std::string& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxTokenId)
    throw ModelError(path + ": " + where + " id " + v.dump() + " is not an integer in [0, " +
                     std::to_string(kMaxTokenId) + ")");
  return (int32_t)v.get<int64_t>();
}

// bos_token / eos_token in tokenizer_config.json: a string or {"content": "..."}.
std::string token_string(const json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return {};
  if (cfg[key].is_string()) return cfg[key].get<std::string>();
  return cfg[key].value("content", std::string());
}

}  // namespace

std::unique_ptr<Tokenizer> TokenizerLoader::from_json(const std::string& path) {
  namespace fs = std::filesystem;
  json j = read_json(path);
  try {
    const json& model = j.at("model");
    std::string model_type = model.value("type", std::string("BPE"));
    if (model_type != "BPE")
      throw ModelError(path + ": model type '" + model_type + "' is not supported (BPE only)");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
        throw ModelError(path + ": BPE " + key + " is not supported");
    auto t = make(text::BpeModel::Priority::MergeRank);

    // Ids: the model vocabulary, then added tokens (which may reuse vocabulary ids). Ids no entry
    // names stay Unused with an empty piece.
    const json& vocab = model.at("vocab");
    size_t n = 0;
    for (auto it = vocab.begin(); it != vocab.end(); ++it)
      n = std::max(n, (size_t)token_id(it.value(), path, "vocabulary '" + it.key() + "'") + 1);
    const json& added = j.value("added_tokens", json::array());
    for (const json& a : added) n = std::max(n, (size_t)token_id(a.at("id"), path, "added token") + 1);
    t->pieces_.assign(n, std::string());
    t->kinds_.assign(n, TokenKind::Unused);
    bool byte_fallback = model.value("byte_fallback", false);
    t->model_.reserve(vocab.size(), model.at("merges").size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      int32_t id = token_id(it.value(), path, "vocabulary");
      t->pieces_[(size_t)id] = it.key();
      bool is_byte = byte_fallback && it.key().size() == 6 && it.key().compare(0, 3, "<0x") == 0;
      t->kinds_[(size_t)id] = is_byte ? TokenKind::Byte : TokenKind::Normal;
      t->model_.add_piece(it.key(), id);
    }
    // Merges come as "left right" strings (older files) or [left, right] pairs (newer, which
    // allows spaces inside pieces); the list order is the rank.
    for (const json& m : model.at("merges")) {
      std::string left, right;
      if (m.is_array()) {
        left = m.at(0).get<std::string>(), right = m.at(1).get<std::string>();
      } else {
        auto s = m.get<std::string>();
        size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) throw ModelError(path + ": merge '" + s + "' has no space separator");
        left = s.substr(0, sp), right = s.substr(sp + 1);
      }
      if (!t->model_.add_merge(left, right))
        throw ModelError(path + ": merge '" + left + " " + right + "' names a piece missing from the vocabulary");
    }
    t->model_.set_byte_fallback(byte_fallback);
    t->model_.set_ignore_merges(model.value("ignore_merges", false));
    int32_t unk = -1;
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      auto it = vocab.find(model["unk_token"].get<std::string>());
      if (it != vocab.end()) unk = token_id(*it, path, "unk_token");
    }
    t->model_.set_unk(unk, model.value("fuse_unk", false));

    // Added tokens are matched in the text before the model; "special" ones only with parse_special
    // in our API (HF always matches them; the test passes parse_special to compare).
    for (const json& a : added) {
      int32_t id = token_id(a.at("id"), path, "added token");
      bool special = a.value("special", false);
      t->pieces_[(size_t)id] = a.at("content").get<std::string>();
      t->kinds_[(size_t)id] = special ? TokenKind::Control : TokenKind::UserDefined;
      t->added_.push_back({t->pieces_[(size_t)id], id, special, a.value("lstrip", false), a.value("rstrip", false),
                           a.value("single_word", false)});
    }
    if (unk >= 0 && t->kinds_[(size_t)unk] == TokenKind::Normal) t->kinds_[(size_t)unk] = TokenKind::Unknown;

    parse_normalizer(j.value("normalizer", json()), path, t->normalizers_);
    parse_pre_tokenizer(j.value("pre_tokenizer", json()), path, t->pre_tokenizers_);
    const json decoder = j.value("decoder", json());
    const json pre = j.value("pre_tokenizer", json());
    // Decoding follows the vocabulary's alphabet: byte-level pieces map code points back to bytes,
    // SentencePiece-style pieces write spaces as "▁" and bytes as <0xXX>.
    bool byte_level = find_step(decoder, "ByteLevel") || find_step(pre, "ByteLevel");
    t->decoding_ = byte_level ? Tokenizer::Decoding::ByteLevel : Tokenizer::Decoding::SentencePiece;
    if (!byte_level) {
      // The SentencePiece prefix rule shows in the decoder as Strip(start 1) or a prepending Metaspace.
      const json* strip = find_step(decoder, "Strip");
      const json* meta = find_step(decoder, "Metaspace");
      t->strip_leading_space_ = (strip && strip->value("start", 0) > 0) ||
                                (meta && meta->value("prepend_scheme", std::string("always")) != "never" &&
                                 meta->value("add_prefix_space", true));
      if (t->pre_tokenizers_.empty()) add_spm_word_split_if_exact(*t);
    }

    // The post-processor template says what encode(add_special) adds: "single": [<bos>, $A, <eos>].
    bool have_template = false;
    const json post = j.value("post_processor", json());
    if (const json* tp = find_step(post, "TemplateProcessing")) {
      have_template = true;
      bool before_text = true;
      for (const json& item : tp->at("single")) {
        if (item.contains("Sequence")) {
          before_text = false;
          continue;
        }
        const std::string& name = item.at("SpecialToken").at("id").get_ref<const std::string&>();
        for (const json& id : tp->at("special_tokens").at(name).at("ids")) {
          int32_t v = token_id(id, path, "post_processor");
          if ((size_t)v >= n) throw ModelError(path + ": post_processor names id " + std::to_string(v) +
                                               ", past the vocabulary (" + std::to_string(n) + " ids)");
          (before_text ? t->prefix_ids_ : t->suffix_ids_).push_back(v);
        }
      }
      if (!t->prefix_ids_.empty()) t->bos_id_ = t->prefix_ids_.front();
      if (!t->suffix_ids_.empty()) t->eos_id_ = t->suffix_ids_.back();
    }

    // tokenizer_config.json names bos/eos (eos: what the chat model ends a turn with).
    fs::path dir = fs::path(path).parent_path();
    auto id_of = [&](const std::string& s) -> int32_t {
      if (s.empty()) return -1;  // unset in the config (and "" is every unused id's piece)
      for (size_t id = 0; id < t->pieces_.size(); id++)
        if (t->pieces_[id] == s) return (int32_t)id;
      return -1;
    };
    if (fs::exists(dir / "tokenizer_config.json")) {
      json cfg = read_json((dir / "tokenizer_config.json").string());
      int32_t bos = id_of(token_string(cfg, "bos_token")), eos = id_of(token_string(cfg, "eos_token"));
      if (bos >= 0) t->bos_id_ = bos;
      if (eos >= 0) t->eos_id_ = eos;
      // Without a template, transformers adds BOS/EOS as these flags say.
      if (!have_template) {
        if (cfg.value("add_bos_token", false) && bos >= 0) t->prefix_ids_ = {bos};
        if (cfg.value("add_eos_token", false) && eos >= 0) t->suffix_ids_ = {eos};
      }
    }
    // generation_config.json lists every id that ends generation (e.g. Llama 3.1: 128001, 128008, 128009).
    if (fs::exists(dir / "generation_config.json")) {
      json gen = read_json((dir / "generation_config.json").string());
      const json& e = gen.value("eos_token_id", json());
      if (e.is_number_integer()) t->eog_ids_.push_back(token_id(e, path, "generation_config eos_token"));
      if (e.is_array())
        for (const json& v : e) t->eog_ids_.push_back(token_id(v, path, "generation_config eos_token"));
    }
    finish(*t);
    return t;
  } catch (const json::exception& e) {
    throw ModelError(path + ": unexpected tokenizer.json structure: " + e.what());
  }
}

}  // namespace ztvm
