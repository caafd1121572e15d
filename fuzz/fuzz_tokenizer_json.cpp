// tokenizer.json loading on arbitrary bytes (a Hugging Face folder's tokenizer, `ztvm run -m DIR`),
// then encoding and decoding a fixed text with what loaded. Malformed files must raise ModelError
// and nothing else; a tokenizer that loads must encode any text.
#include "fuzz/fuzz_util.h"
#include "model/model_error.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ztvm::fuzz::MemFile file(data, size);
  std::unique_ptr<ztvm::Tokenizer> tok;
  try {
    tok = ztvm::Tokenizer::from_json(file.path());
  } catch (const ztvm::ModelError&) {
    return 0;
  }
  for (std::string_view text : {"Hello world! <|im_start|>user\n 12345 \xc3\xa9\xe2\x96\x81", "", " ", "\xff\xfe\x80"}) {
    auto ids = tok->encode(text, true, true);
    (void)tok->decode(ids);
    (void)tok->decode(ids, true);
  }
  return 0;
}
