// Encoding and decoding over a loaded vocabulary (the loaders are tokenizer_gguf.cpp and
// tokenizer_json.cpp; the shared pieces are in tokenizer_pretok.cpp and tokenizer_bpe.cpp).
#include "text/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <filesystem>

#include "model/gguf.h"
#include "model/model_error.h"
#include "text/tokenizer_loader.h"
#include "text/tokenizer_utf8.h"

namespace ztvm {

namespace {

const std::string kEmpty;
constexpr size_t kMaxCachedWord = 64;       // longer words are rare; encode them directly
constexpr size_t kMaxCacheEntries = 1 << 18;  // then start over rather than grow without bound

// Texts that mark the end of a turn or of the text in the vocabularies we know; a control token
// with one of these texts ends generation even where the file names only eos.
const char* const kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<|endoftext|>", "<|end_of_text|>",
    "<end_of_turn>", "<|return|>", "<|call|>", "<EOT>",
};

// Start of the character that ends just before `pos` (steps back over continuation bytes).
size_t prev_char_start(std::string_view text, size_t pos) {
  size_t p = pos - 1;
  while (p > 0 && pos - p < 4 && ((uint8_t)text[p] & 0xC0) == 0x80) p--;
  return p;
}

bool whitespace_at(std::string_view text, size_t pos, size_t& len) {
  uint32_t cp = 0;
  len = text::utf8_decode(text, pos, cp);
  return len > 0 && text::is_unicode_whitespace(cp);
}

}  // namespace

Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) { return TokenizerLoader::from_gguf(gguf); }

std::unique_ptr<Tokenizer> Tokenizer::from_json(const std::string& path) { return TokenizerLoader::from_json(path); }

// Decides by what the path is, not by its name alone: a directory is a Hugging Face model, a
// .json file a tokenizer.json, anything else must start with the GGUF magic.
std::unique_ptr<Tokenizer> Tokenizer::from_model_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    fs::path json = fs::path(path) / "tokenizer.json";
    if (!fs::exists(json)) throw ModelError(path + ": no tokenizer.json in this model directory");
    return from_json(json.string());
  }
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return from_json(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path + ": cannot open");
  char magic[4] = {};
  in.read(magic, 4);
  if (std::string_view(magic, 4) != "GGUF")
    throw ModelError(path + ": expected a .gguf file, a tokenizer.json or a model directory");
  return from_gguf(*GgufFile::open(path));
}

void Tokenizer::finish_loading() {
  kinds_.resize(pieces_.size(), TokenKind::Unused);
  texts_.assign(pieces_.size(), std::string());
  all_pieces_.reserve(pieces_.size());
  for (size_t id = 0; id < pieces_.size(); id++) {
    const std::string& p = pieces_[id];
    if (!p.empty()) all_pieces_.emplace(p, (int32_t)id);  // first id wins for a repeated piece
    std::string& t = texts_[id];
    switch (kinds_[id]) {
      case TokenKind::Byte: {
        unsigned v = 0;
        if (p.size() == 6 && std::sscanf(p.c_str(), "<0x%2X>", &v) == 1) t.assign(1, (char)v);
        else t = p;
        break;
      }
      case TokenKind::Normal:
        if (decoding_ == Decoding::SentencePiece) {
          // "▁" (U+2581, three bytes) stands for a space.
          for (size_t i = 0; i < p.size();) {
            if (p.compare(i, 3, "\xE2\x96\x81") == 0) t += ' ', i += 3;
            else t += p[i++];
          }
        } else {
          // Byte-level: every code point maps back to one byte; a piece with any other code point
          // (an added token stored as plain text) decodes to itself.
          bool ok = true;
          for (size_t i = 0; i < p.size() && ok;) {
            uint32_t cp = 0;
            size_t n = text::utf8_decode(p, i, cp);
            int b = n ? text::codepoint_to_byte(cp) : -1;
            if (b < 0) ok = false;
            else t += (char)b, i += n;
          }
          if (!ok) t = p;
        }
        break;
      case TokenKind::Unused: break;
      default: t = p; break;  // control, user-defined, unknown: their text
    }
  }

  // Added tokens bucketed by first byte, longest first, so matching is leftmost-longest.
  added_by_first_byte_.assign(256, {});
  std::vector<uint32_t> order(added_.size());
  for (uint32_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return added_[a].content.size() > added_[b].content.size(); });
  for (uint32_t i : order)
    if (!added_[i].content.empty()) added_by_first_byte_[(uint8_t)added_[i].content[0]].push_back(i);

  // End of generation: eos, the ids the loader found (eot/eom keys, generation_config.json), and
  // control tokens with a known end-of-turn text.
  for (size_t id = 0; id < pieces_.size(); id++) {
    if (kinds_[id] != TokenKind::Control) continue;
    for (const char* t : kEndOfGenerationTexts)
      if (pieces_[id] == t) eog_ids_.push_back((int32_t)id);
  }
  if (eos_id_ >= 0) eog_ids_.push_back(eos_id_);
  std::erase_if(eog_ids_, [&](int32_t id) { return id < 0 || (size_t)id >= pieces_.size(); });
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

// Cuts the text at added tokens, scanning left to right and taking the longest token that starts
// at each position (HF's leftmost-longest rule). Raw stretches between them go to the model.
std::vector<Tokenizer::Fragment> Tokenizer::split_added_tokens(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  size_t raw_start = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    for (uint32_t idx : added_by_first_byte_[(uint8_t)text[i]]) {
      const AddedToken& t = added_[idx];
      if (t.special && !parse_special) continue;
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      if (t.single_word) {
        // Only as a whole word: no word character touching it on either side.
        uint32_t cp = 0;
        if (i > 0 && text::utf8_decode(text, prev_char_start(text, i), cp) && text::is_word_char(cp)) continue;
        size_t end = i + t.content.size();
        if (end < text.size() && text::utf8_decode(text, end, cp) && text::is_word_char(cp)) continue;
      }
      hit = &t;
      break;
    }
    if (!hit) {
      i++;
      continue;
    }
    size_t begin = i, end = i + hit->content.size(), n = 0;
    // lstrip / rstrip: the token swallows the whitespace next to it.
    if (hit->lstrip)
      while (begin > raw_start && whitespace_at(text, prev_char_start(text, begin), n)) begin = prev_char_start(text, begin);
    if (hit->rstrip)
      while (end < text.size() && whitespace_at(text, end, n)) end += n;
    if (begin > raw_start) out.push_back({text.substr(raw_start, begin - raw_start), -1, raw_start});
    out.push_back({{}, hit->id, begin});
    raw_start = i = end;
  }
  if (raw_start < text.size()) out.push_back({text.substr(raw_start), -1, raw_start});
  return out;
}

// The cache lock is held only for the lookup and the insert, not for the merge loop, so threads
// encoding at once mostly run in parallel.
void Tokenizer::encode_word_cached(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxCachedWord) {
    model_.encode_word(word, out);
    return;
  }
  {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  model_.encode_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= kMaxCacheEntries) cache_.clear();
  cache_.emplace(word, std::move(ids));
}

// One stretch of raw text: normalize, pre-tokenize into words (streamed), BPE each word.
void Tokenizer::encode_fragment(std::string_view raw, bool at_start, std::vector<int32_t>& out) const {
  std::string normalized = text::apply_normalizers(normalizers_, std::string(raw));
  text::pre_tokenize(pre_tokenizers_, normalized, at_start,
                     [&](std::string_view word) { encode_word_cached(word, out); });
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special) out.insert(out.end(), prefix_ids_.begin(), prefix_ids_.end());
  for (const Fragment& f : split_added_tokens(text, parse_special)) {
    if (f.token >= 0) out.push_back(f.token);
    else encode_fragment(f.text, f.offset == 0, out);
  }
  if (add_special) out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  return id >= 0 && (size_t)id < texts_.size() ? texts_[(size_t)id] : kEmpty;
}

const std::string& Tokenizer::piece(int32_t id) const {
  return id >= 0 && (size_t)id < pieces_.size() ? pieces_[(size_t)id] : kEmpty;
}

TokenKind Tokenizer::kind(int32_t id) const {
  return id >= 0 && (size_t)id < kinds_.size() ? kinds_[(size_t)id] : TokenKind::Unused;
}

int32_t Tokenizer::find_piece(std::string_view text) const {
  auto it = all_pieces_.find(text);
  return it == all_pieces_.end() ? -1 : it->second;
}

bool Tokenizer::is_special(int32_t id) const {
  TokenKind k = kind(id);
  return k == TokenKind::Control || k == TokenKind::Unknown;
}

bool Tokenizer::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  bool first = true;
  for (int32_t id : ids) {
    TokenKind k = kind(id);
    if (skip_special && (k == TokenKind::Control || k == TokenKind::Unknown)) continue;
    const std::string& t = token_text(id);
    // The prefix rule's space goes only when it opens the text, as HF's Strip decoder does: after
    // a "<s>" that is kept, the space stays.
    if (first && strip_leading_space_ && !t.empty() && t[0] == ' ') out.append(t, 1, std::string::npos);
    else out += t;
    first = false;
  }
  return text::utf8_sanitize(out);
}

// Emits the complete characters of what is pending; an unfinished UTF-8 sequence at the end stays
// pending for the next token. Bytes that can never form a character come out as U+FFFD.
std::string StreamDecoder::push(int32_t id) {
  pending_ += tokenizer_.token_text(id);
  size_t n = text::utf8_complete_prefix(pending_);
  std::string ready = text::utf8_sanitize(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return ready;
}

std::string StreamDecoder::flush() {
  std::string rest = text::utf8_sanitize(pending_);
  pending_.clear();
  return rest;
}

}  // namespace ztvm
