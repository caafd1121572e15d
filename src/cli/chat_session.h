// A multi-turn conversation kept as messages (OpenAI format) and re-rendered with the model's chat
// template every turn. Re-rendering keeps the prompt text identical up to the new user message, so
// the Generator's KV prefix reuse only has to prefill the new part.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generator.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace ztvm::cli {

struct ChatConfig {
  std::string system;       // system message; empty: none
  uint32_t n_max = 512;     // tokens per reply at most
  SamplingParams sampling;  // passed through to the Generator
  bool think = false;       // enable_thinking for templates that have the switch
};

struct TurnResult {
  std::string reply;        // text as generated (end-of-generation token not included)
  GenerateStats stats;
  bool ended = false;       // the model emitted an end-of-generation token
  bool interrupted = false; // should_stop() asked to stop
  uint32_t dropped = 0;     // old messages dropped to fit the context this turn
};

class ChatSession {
 public:
  ChatSession(Generator& gen, const Tokenizer& tok, uint32_t max_context, const ModelChatTemplate& tmpl,
              ChatConfig cfg);

  // Adds the user's message, generates the reply (pieces of text go to on_text as they are decoded;
  // should_stop is polled after each token) and adds it to the history, also when cut short.
  // Throws std::runtime_error (history unchanged) if the message cannot fit even alone, or when the
  // template refuses the conversation.
  TurnResult reply(const std::string& user_text, const std::function<void(std::string_view)>& on_text,
                   const std::function<bool()>& should_stop);

  // Forgets every message but the system one. The KV cache is kept: the system prefix stays reusable.
  void reset();

  const nlohmann::ordered_json& messages() const { return messages_; }
  bool uses_fallback_template() const { return fallback_; }
  // Prompt tokens of the conversation as it stands, ready for the assistant's next turn.
  std::vector<int32_t> render_ids(const nlohmann::ordered_json& messages) const;

 private:
  // Drops the oldest exchange (a user message and the replies after it), never the system message.
  // Returns how many messages went, 0 when only the newest user message is left.
  uint32_t drop_oldest_exchange();

  Generator& gen_;
  const Tokenizer& tok_;
  uint32_t max_context_;
  ChatTemplate template_;
  ChatOptions options_;
  ChatConfig cfg_;
  bool fallback_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

}  // namespace ztvm::cli
