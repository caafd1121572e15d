// A Hugging Face model folder on arbitrary bytes: config.json and model.safetensors, read by
// open_model as `ztvm run -m DIR` does. The input is config.json, the marker line below, then the
// safetensors file; without the marker all of it is the safetensors file beside a fixed config.
// Malformed input must raise ModelError and nothing else.
#include <cstring>

#include "fuzz/fuzz_util.h"
#include "model/model_error.h"
#include "model/model_file.h"

namespace {

constexpr std::string_view kMarker = "\n#model.safetensors#\n";
constexpr std::string_view kConfig =
    R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 1, "vocab_size": 64, "rms_norm_eps": 1e-5, "torch_dtype": "float16"})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view config = kConfig, tensors = in;
  if (size_t at = in.find(kMarker); at != std::string_view::npos) {
    config = in.substr(0, at);
    tensors = in.substr(at + kMarker.size());
  }
  const auto dir = ztvm::fuzz::scratch_dir() / "model";
  std::filesystem::create_directories(dir);
  ztvm::fuzz::write_file(dir / "config.json", config);
  ztvm::fuzz::write_file(dir / "model.safetensors", tensors);
  try {
    (void)ztvm::open_model(dir.string());
  } catch (const ztvm::ModelError&) {
  }
  return 0;
}
