#include "cli/chat_session.h"

#include <algorithm>
#include <stdexcept>

namespace ztvm::cli {

ChatSession::ChatSession(Generator& gen, const Tokenizer& tok, uint32_t max_context, const ModelChatTemplate& tmpl,
                         ChatConfig cfg)
    : gen_(gen),
      tok_(tok),
      max_context_(max_context),
      template_(tmpl.source),  // an empty source selects the documented ChatML fallback
      cfg_(std::move(cfg)),
      fallback_(tmpl.source.empty()) {
  options_.add_generation_prompt = true;
  options_.enable_thinking = cfg_.think;
  options_.bos_token = tmpl.bos_token;
  options_.eos_token = tmpl.eos_token;
  reset();
}

void ChatSession::reset() {
  messages_ = nlohmann::ordered_json::array();
  if (!cfg_.system.empty()) messages_.push_back({{"role", "system"}, {"content", cfg_.system}});
}

std::vector<int32_t> ChatSession::render_ids(const nlohmann::ordered_json& messages) const {
  const std::string text = template_.render(messages, options_);
  // Templates that write {{ bos_token }} themselves must not get a second BOS from the tokenizer.
  const bool has_bos = options_.bos_token && !options_.bos_token->empty() && text.rfind(*options_.bos_token, 0) == 0;
  return tok_.encode(text, /*add_special=*/!has_bos, /*parse_special=*/true);
}

uint32_t ChatSession::drop_oldest_exchange() {
  size_t first = 0;
  while (first < messages_.size() && messages_[first].value("role", "") == "system") first++;
  // The exchange runs up to (not including) the next user message; none means the only one left is
  // the message being answered, which must stay.
  size_t next_user = first + 1;
  while (next_user < messages_.size() && messages_[next_user].value("role", "") != "user") next_user++;
  if (first >= messages_.size() || next_user >= messages_.size()) return 0;
  messages_.erase(messages_.begin() + (std::ptrdiff_t)first, messages_.begin() + (std::ptrdiff_t)next_user);
  return (uint32_t)(next_user - first);
}

TurnResult ChatSession::reply(const std::string& user_text, const std::function<void(std::string_view)>& on_text,
                              const std::function<bool()>& should_stop) {
  TurnResult r;
  const nlohmann::ordered_json before = messages_;  // restored if this turn cannot run
  messages_.push_back({{"role", "user"}, {"content", user_text}});

  // The prompt must leave room for a useful reply: the full -n when the context is large, else a
  // quarter of it, so a huge -n does not evict the whole conversation.
  const uint32_t reserve = std::max<uint32_t>(1, std::min(cfg_.n_max, max_context_ / 4));
  std::vector<int32_t> ids;
  try {
    for (;;) {
      ids = render_ids(messages_);
      if (ids.size() + reserve <= max_context_) break;
      uint32_t n = drop_oldest_exchange();
      if (n == 0)
        throw std::runtime_error("the message does not fit the context: the prompt is " + std::to_string(ids.size()) +
                                 " tokens, the context " + std::to_string(max_context_) + " with " +
                                 std::to_string(reserve) + " kept for the reply (use --ctx or a shorter message)");
      r.dropped += n;
    }
  } catch (...) {
    messages_ = before;
    throw;
  }

  const uint32_t n = std::min<uint32_t>(cfg_.n_max, max_context_ - (uint32_t)ids.size());
  StreamDecoder dec(tok_);
  auto on_token = [&](int32_t id) {
    if (tok_.is_eog(id)) {
      r.ended = true;
      return false;
    }
    std::string piece = dec.push(id);
    r.reply += piece;
    if (!piece.empty()) on_text(piece);
    if (should_stop()) {
      r.interrupted = true;
      return false;
    }
    return true;
  };
  try {
    r.stats = gen_.generate(ids, n, on_token, cfg_.sampling);
  } catch (...) {
    messages_ = before;
    throw;
  }
  std::string rest = dec.flush();
  r.reply += rest;
  if (!rest.empty()) on_text(rest);
  // Kept as generated, also when cut by -n or Ctrl-C: the next prompt then starts with exactly what
  // the cache holds.
  messages_.push_back({{"role", "assistant"}, {"content", r.reply}});
  return r;
}

}  // namespace ztvm::cli
