// Encoding arbitrary text with real tokenizers (the prompt path of every request): Llama 2's
// SentencePiece vocabulary and GPT-2's byte-level BPE from GGUF, Qwen3's tokenizer.json. Each must
// encode any bytes, special-token text included, and decode what it made.
#include "fuzz/fuzz_util.h"
#include "model/gguf.h"
#include "text/tokenizer.h"

namespace {

struct Tokenizers {
  std::vector<std::unique_ptr<ztvm::Tokenizer>> all;
  Tokenizers() {
    for (const char* v : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-qwen35.gguf"})
      all.push_back(ztvm::Tokenizer::from_gguf(*ztvm::GgufFile::open(ztvm::fuzz::testdata(v))));
    all.push_back(ztvm::Tokenizer::from_json(ztvm::fuzz::testdata("tokenizers/qwen3/tokenizer.json")));
  }
};

const Tokenizers* g_toks = nullptr;

}  // namespace

// Loaded before the first input: under ASan on a busy machine the loading took longer than
// libFuzzer's per-input timeout, which the first input would have been charged with.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_toks = new Tokenizers;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Tokenizers& toks = *g_toks;
  if (size == 0) return 0;
  // The first byte picks the tokenizer and the flags, the rest is the text.
  const auto& tok = *toks.all[data[0] % toks.all.size()];
  const bool add_special = data[0] & 0x10, parse_special = data[0] & 0x20;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto ids = tok.encode(text, add_special, parse_special);
  for (int32_t id : ids)
    if (id < 0 || static_cast<size_t>(id) >= tok.vocab_size()) std::abort();
  (void)tok.decode(ids);
  return 0;
}
