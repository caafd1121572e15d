// The GGUF reader on arbitrary bytes: header, metadata, tensor table, then what open_model and the
// tokenizer make of a file that parsed. A malformed file must raise ModelError and nothing else
// (model/gguf.h); any other exception, a crash or a sanitizer report is a bug.
#include "fuzz/fuzz_util.h"
#include "model/gguf.h"
#include "model/model_error.h"
#include "model/model_file.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ztvm::fuzz::MemFile file(data, size);
  try {
    auto gguf = ztvm::GgufFile::open(file.path());
    for (const auto& [key, value] : gguf->metadata()) (void)value.summary();
    try {
      (void)ztvm::config_from_gguf(*gguf);
    } catch (const ztvm::ModelError&) {
    }
    try {
      auto tok = ztvm::Tokenizer::from_gguf(*gguf);
      auto ids = tok->encode("Hello world, <s> 123 \xe2\x96\x81 x", true, true);
      (void)tok->decode(ids);
    } catch (const ztvm::ModelError&) {
    }
    (void)ztvm::open_model(file.path());
  } catch (const ztvm::ModelError&) {
  }
  return 0;
}
