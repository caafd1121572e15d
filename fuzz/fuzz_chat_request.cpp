// The server's request-to-prompt path on arbitrary request bodies, as /v1/chat/completions runs
// it: JSON body -> options -> messages, tools, tool_choice, response_format -> the model's chat
// template -> tokens. The first byte picks one of four real templates (one per tool-call dialect);
// the rest is the body. A bad request must be an ApiError (a 4xx naming the problem): anything
// else escaping here would be a 500 or a crash in the server.
#include <fstream>
#include <sstream>

#include "fuzz/fuzz_util.h"
#include "server/chat_prompt.h"

namespace {

struct Models {
  std::unique_ptr<ztvm::Tokenizer> tok;
  std::vector<std::pair<ztvm::ModelChatTemplate, std::unique_ptr<ztvm::ChatTemplate>>> templates;
  Models() {
    tok = ztvm::Tokenizer::from_json(ztvm::fuzz::testdata("tokenizers/qwen3/tokenizer.json"));
    for (const char* name : {"Qwen-Qwen3-0.6B", "Qwen3-Coder", "meta-llama-Llama-3.2-3B-Instruct", "microsoft-Phi-3.5-mini-instruct"}) {
      std::ifstream f(ztvm::fuzz::testdata(std::string("chat-templates/") + name + ".jinja"));
      std::stringstream ss;
      ss << f.rdbuf();
      ztvm::ModelChatTemplate src{ss.str(), "<|begin_of_text|>", "<|im_end|>"};
      if (src.source.empty()) std::abort();
      auto tmpl = std::make_unique<ztvm::ChatTemplate>(src.source);
      templates.emplace_back(std::move(src), std::move(tmpl));
    }
  }
};

const Models* g_models = nullptr;

}  // namespace

// Loaded before the first input, not charged to it (libFuzzer's per-input timeout; fuzz_tokenize.cpp).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_models = new Models;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Models& models = *g_models;
  if (size == 0) return 0;
  const auto& [src, tmpl] = models.templates[data[0] % models.templates.size()];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    auto b = ztvm::server::parse_body(body);
    (void)ztvm::server::parse_gen_options(b);
    auto cp = ztvm::server::render_chat_prompt(b, *tmpl, src);
    (void)ztvm::server::encode_chat(*models.tok, src, cp.prompt);
  } catch (const ztvm::server::ApiError&) {
  }
  return 0;
}
