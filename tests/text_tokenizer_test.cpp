// Tokenizer against outside references:
//  - llama.cpp's vocabulary test vectors (testdata/vocab: gpt-2, llama-bpe, llama-spm, phi-3,
//    qwen2, qwen35), from the GGUF files and, where the same vocabulary exists as tokenizer.json, from
//    that too;
//  - llama2.c's tokenizer.bin files, encoded with llama2.c's own greedy merge rule, against the GGUF
//    SentencePiece-style vocabularies (stories260K and Llama 2);
//  - StreamDecoder on tokens that split UTF-8 characters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "model/gguf.h"
#include "text/tokenizer.h"

namespace ztvm {
namespace {

const std::string kData = ZTVM_TESTDATA;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<Tokenizer> load_gguf(const std::string& path) { return Tokenizer::from_gguf(*GgufFile::open(path)); }

// llama.cpp's convention: inputs are separated by "\n__ggml_vocab_test__\n" (so an input never
// carries the newline before a separator), outputs are one line of ids per input.
struct Vector {
  std::string input;
  std::vector<int32_t> ids;
};
std::vector<Vector> read_vectors(const std::string& gguf_path) {
  std::string raw = read_file(gguf_path + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < raw.size();) {
    size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      inputs.push_back(raw.substr(pos));
      break;
    }
    inputs.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream out(read_file(gguf_path + ".out"));
  std::vector<Vector> vectors;
  std::string line;
  for (size_t i = 0; std::getline(out, line); i++) {
    Vector v{i < inputs.size() ? inputs[i] : std::string(), {}};
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) v.ids.push_back(id);
    vectors.push_back(std::move(v));
  }
  EXPECT_EQ(inputs.size(), vectors.size()) << gguf_path << ": inputs and outputs differ in count";
  return vectors;
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

// Encodes every vector (no BOS, special-token text not parsed) and reports each mismatch.
void check_vectors(const Tokenizer& tok, const std::string& vectors_of, bool check_round_trip) {
  auto vectors = read_vectors(vectors_of);
  ASSERT_GT(vectors.size(), 40u);
  size_t passed = 0;
  for (const Vector& v : vectors) {
    auto got = tok.encode(v.input, false, false);
    if (got == v.ids) {
      passed++;
    } else {
      ADD_FAILURE() << "input '" << v.input << "'\n  expected " << ids_str(v.ids) << "\n  got      " << ids_str(got);
    }
    // Decoding the reference ids gives the input back (the vectors hold valid UTF-8 only).
    if (check_round_trip) {
      EXPECT_EQ(tok.decode(v.ids), v.input) << "decode of the ids of '" << v.input << "'";
    }
  }
  EXPECT_EQ(passed, vectors.size()) << vectors_of;
}

class VocabVectors : public testing::TestWithParam<const char*> {};

TEST_P(VocabVectors, GgufEncodesLikeReference) {
  std::string path = kData + "/vocab/ggml-vocab-" + GetParam() + ".gguf";
  auto tok = load_gguf(path);
  check_vectors(*tok, path, true);
}

INSTANTIATE_TEST_SUITE_P(All, VocabVectors,
                         testing::Values("gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2", "qwen35"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// The same vocabularies as tokenizer.json (Llama 3.1 = llama-bpe, Qwen3 = qwen2 + 26 added tokens)
// must pass the same vectors through the JSON loader.
TEST(TokenizerJson, Llama31PassesLlamaBpeVectors) {
  auto tok = Tokenizer::from_json(kData + "/tokenizers/llama3_1/tokenizer.json");
  check_vectors(*tok, kData + "/vocab/ggml-vocab-llama-bpe.gguf", true);
}

TEST(TokenizerJson, Qwen3PassesQwen2Vectors) {
  auto tok = Tokenizer::from_json(kData + "/tokenizers/qwen3/tokenizer.json");
  check_vectors(*tok, kData + "/vocab/ggml-vocab-qwen2.gguf", false);  // NFC may change decoded text
}

TEST(TokenizerGguf, SpecialTokensAndMetadata) {
  auto qwen = load_gguf(kData + "/vocab/ggml-vocab-qwen2.gguf");
  int32_t im_start = qwen->find_piece("<|im_start|>");
  ASSERT_GE(im_start, 0);
  EXPECT_TRUE(qwen->is_special(im_start));
  // parse_special turns the text into the control token; without it the text is ordinary text.
  EXPECT_EQ(qwen->encode("<|im_start|>", false, true), std::vector<int32_t>{im_start});
  auto plain = qwen->encode("<|im_start|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(qwen->decode(plain), "<|im_start|>");
  // User-defined tokens ([PAD...] in this file) match even without parse_special.
  int32_t pad = qwen->find_piece("[PAD151646]");
  ASSERT_GE(pad, 0);
  EXPECT_EQ(qwen->encode("a[PAD151646]", false, false).back(), pad);
  EXPECT_EQ(qwen->eos_id(), 151643);  // tokenizer.ggml.eos_token_id
  auto eog = qwen->eog_ids();
  EXPECT_NE(std::find(eog.begin(), eog.end(), qwen->find_piece("<|im_end|>")), eog.end());

  auto spm = load_gguf(kData + "/vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(spm->bos_id(), 1);
  EXPECT_EQ(spm->eos_id(), 2);
  auto ids = spm->encode("Hello", true, false);  // add_bos_token is true in this file
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(spm->decode(ids, true), "Hello");
  EXPECT_EQ(spm->token_text(spm->find_piece("<0x41>")), "A");  // byte tokens decode to their byte
}

// ---- llama2.c's tokenizer.bin and its encoder, as the reference for SentencePiece-style GGUFs ----

// tokenizer.bin: int32 max_token_length, then per token: float score, int32 length, bytes.
// Pieces use a plain space where SentencePiece writes "▁".
struct Llama2cVocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::unordered_map<std::string, int32_t> index;
};

Llama2cVocab read_llama2c(const std::string& path) {
  std::string raw = read_file(path);
  Llama2cVocab v;
  size_t pos = 4;  // skip max_token_length
  while (pos + 8 <= raw.size()) {
    float score;
    int32_t len;
    std::memcpy(&score, raw.data() + pos, 4);
    std::memcpy(&len, raw.data() + pos + 4, 4);
    pos += 8;
    if (len < 0 || pos + (size_t)len > raw.size()) break;
    v.index.emplace(raw.substr(pos, (size_t)len), (int32_t)v.pieces.size());
    v.pieces.push_back(raw.substr(pos, (size_t)len));
    v.scores.push_back(score);
    pos += (size_t)len;
  }
  return v;
}

// llama2.c's encode: BOS, a " " prefix token, one token per UTF-8 character (else its bytes as ids
// byte+3), then repeatedly merge the adjacent pair whose concatenation has the highest score
// (first pair on ties) until no pair is in the vocabulary.
std::vector<int32_t> llama2c_encode(const Llama2cVocab& v, const std::string& text, bool bos) {
  std::vector<int32_t> t;
  if (bos) t.push_back(1);
  if (text.empty()) return t;
  t.push_back(v.index.at(" "));
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;
    while (i + n < text.size() && n < 4 && ((uint8_t)text[i + n] & 0xC0) == 0x80) n++;
    auto it = v.index.find(text.substr(i, n));
    if (it != v.index.end()) t.push_back(it->second);
    else
      for (size_t k = 0; k < n; k++) t.push_back((uint8_t)text[i + k] + 3);
    i += n;
  }
  for (;;) {
    float best = -1e10f;
    int best_id = -1;
    size_t best_i = 0;
    for (size_t i = (bos ? 1 : 0); i + 1 < t.size(); i++) {
      auto it = v.index.find(v.pieces[(size_t)t[i]] + v.pieces[(size_t)t[i + 1]]);
      if (it != v.index.end() && v.scores[(size_t)it->second] > best) {
        best = v.scores[(size_t)it->second];
        best_id = it->second;
        best_i = i;
      }
    }
    if (best_id < 0) break;
    t[best_i] = best_id;
    t.erase(t.begin() + (long)best_i + 1);
  }
  return t;
}

TEST(Stories260K, OnceUponATimeMatchesLlama2c) {
  auto tok = load_gguf(kData + "/stories260K/stories260K-f32.gguf");
  ASSERT_EQ(tok->vocab_size(), 512u);
  auto ref = read_llama2c(kData + "/stories260K/tok512.bin");
  ASSERT_EQ(ref.pieces.size(), 512u);
  auto ids = tok->encode("Once upon a time", true, false);
  EXPECT_EQ(ids, llama2c_encode(ref, "Once upon a time", true));
  EXPECT_EQ(ids.front(), tok->bos_id());
  EXPECT_EQ(tok->decode(ids, true), "Once upon a time");
  // The first lines of the expected greedy story, as a longer sample with punctuation and newlines.
  std::string story = read_file(kData + "/stories260K/expected_greedy_bos_only_256.txt");
  EXPECT_EQ(tok->encode(story, true, false), llama2c_encode(ref, story, true));
}

// Llama 2's 32000-piece vocabulary: the GGUF against llama2.c's tokenizer.bin, over the lines of
// the King James Bible plus the vector inputs (which bring byte fallback, emoji and whitespace runs).
TEST(LlamaSpm, MatchesLlama2cOnCorpusLines) {
  auto tok = load_gguf(kData + "/vocab/ggml-vocab-llama-spm.gguf");
  auto ref = read_llama2c(kData + "/tokenizers/llama2-spm/tokenizer.bin");
  ASSERT_EQ(ref.pieces.size(), 32000u);
  std::vector<std::string> samples;
  std::istringstream kjv(read_file(kData + "/corpora/kjv.txt"));
  std::string line;
  for (int i = 0; i < 1500 && std::getline(kjv, line); i++)
    if (i % 3 == 0) samples.push_back(line);
  for (const Vector& v : read_vectors(kData + "/vocab/ggml-vocab-llama-spm.gguf"))
    if (v.input.size() < 400) samples.push_back(v.input);  // the reference is quadratic
  size_t mismatches = 0;
  for (const std::string& s : samples) {
    auto want = llama2c_encode(ref, s, true);
    auto got = tok->encode(s, true, false);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << "'" << s << "'\n  llama2.c " << ids_str(want) << "\n  ours     " << ids_str(got);
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << samples.size() << " samples";
}

// ---- StreamDecoder ----

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto b = (uint8_t)s[i];
    size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    if (b >= 0x80 && b < 0xC2) return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; k++)
      if (((uint8_t)s[i + k] & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

void check_stream(const Tokenizer& tok, const std::string& text) {
  auto ids = tok.encode(text, false, false);
  StreamDecoder stream(tok);
  std::string joined;
  size_t held_back = 0;  // tokens that ended inside a character and so printed nothing yet
  for (int32_t id : ids) {
    std::string part = stream.push(id);
    EXPECT_TRUE(valid_utf8(part)) << "token " << id << " of '" << text << "'";
    if (part.empty() && !tok.token_text(id).empty()) held_back++;
    joined += part;
  }
  joined += stream.flush();
  EXPECT_GT(held_back, 0u) << "the sample should split a character across tokens: '" << text << "'";
  // The stream is every token's bytes in order (no strip of the SentencePiece prefix space: a
  // stream continues text that came before), and decode gives the input back.
  std::string concat;
  for (int32_t id : ids) concat += tok.token_text(id);
  EXPECT_EQ(joined, concat);
  EXPECT_EQ(tok.decode(ids), text);
}

TEST(StreamDecoder, HoldsBackSplitCharacters) {
  // GPT-2 splits rare characters and emoji into byte pieces; Llama 2 falls back to <0xXX> tokens.
  auto gpt2 = load_gguf(kData + "/vocab/ggml-vocab-gpt-2.gguf");
  check_stream(*gpt2, "emoji 🦙🤖 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, ខ្មែរ");
  auto spm = load_gguf(kData + "/vocab/ggml-vocab-llama-spm.gguf");
  check_stream(*spm, "llama 🦙 ☃ ꙮ 𓀀");
  // A character split over two tokens prints nothing until its last byte arrives.
  int32_t b1 = spm->find_piece("<0xF0>"), b2 = spm->find_piece("<0x9F>"), b3 = spm->find_piece("<0xA6>"),
          b4 = spm->find_piece("<0x99>");
  StreamDecoder s(*spm);
  EXPECT_EQ(s.push(b1), "");
  EXPECT_EQ(s.push(b2), "");
  EXPECT_EQ(s.push(b3), "");
  EXPECT_EQ(s.push(b4), "\xF0\x9F\xA6\x99");  // U+1F999
  // An unfinished character at the end comes out as U+FFFD on flush.
  EXPECT_EQ(s.push(b1), "");
  EXPECT_EQ(s.flush(), "\xEF\xBF\xBD");
}

TEST(Tokenizer, FromModelPathDispatches) {
  EXPECT_EQ(Tokenizer::from_model_path(kData + "/tokenizers/qwen3")->vocab_size(), 151669u);
  EXPECT_EQ(Tokenizer::from_model_path(kData + "/vocab/ggml-vocab-gpt-2.gguf")->vocab_size(), 50257u);
  EXPECT_THROW(Tokenizer::from_model_path(kData + "/README.md"), std::exception);
  EXPECT_THROW(Tokenizer::from_model_path(kData + "/corpora"), std::exception);
}

}  // namespace
}  // namespace ztvm
