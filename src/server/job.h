// One generation request on its way through the server: the scheduler's worker turns tokens into
// text (UTF-8 safe, stop strings applied) and appends it here; the HTTP thread takes it out and
// sends it. Either side may end it: the model (end of generation, stop string, max tokens) or the
// client (disconnect -> cancel()).
#pragma once
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "engine/scheduler.h"
#include "server/openai.h"
#include "text/json_schema.h"
#include "text/stop_strings.h"
#include "text/tokenizer.h"

namespace ztvm::server {

// The answer to a request that ended in Finish::Error: 503 once the GPU is lost (the server is going
// down; retry on another), else 500. `what`: "generation failed" and the like.
ApiError failure(const SeqResult& res, const std::string& what);

class Job {
 public:
  // Queues the request (ApiError 503 when the queue is full); with a schema, every token keeps the
  // text a prefix of a JSON value it allows, and the end comes when it closes (JsonRule).
  static std::shared_ptr<Job> start(Scheduler& sched, const Tokenizer& tok, std::vector<int32_t> prompt,
                                    uint32_t n_max, const GenOptions& opts,
                                    std::shared_ptr<const JsonSchema> json = nullptr);

  // The log probability of each prompt token after the first given the ones before it (a first token
  // other than BOS gets a NaN entry: nothing predicts it); BOS itself is left out, as it is not text.
  // A pass over the prompt through the scheduler, before any generation. ApiError 503 / 500.
  static std::vector<TokenLogprob> score_prompt(Scheduler& sched, const Tokenizer& tok, const std::vector<int32_t>& prompt,
                                                int n_top);

  // Waits up to `timeout` for new text or the end; moves the new text into `out`. True once ended
  // and everything was taken.
  bool take(std::string& out, std::chrono::milliseconds timeout);
  // With GenOptions::top_logprobs >= 0: moves the generated tokens' log probabilities so far into
  // `out` (end-of-generation tokens left out, as their text is).
  void take_logprobs(std::vector<TokenLogprob>& out);
  void cancel() { req_->cancelled = true; }

  // After take() returned true:
  const SeqResult& result() const { return result_; }
  const char* finish_reason() const;  // "stop" | "length"; errors and cancels are not answered
  uint32_t prompt_tokens() const { return n_prompt_; }
  uint32_t completion_tokens() const;
  json timings() const;  // llama-server's "timings" object

  Job(const Tokenizer& tok, const GenOptions& opts);
  ~Job() { if (req_) req_->cancelled = true; }  // nobody waits for the rest: free the slot

 private:
  bool on_token(int32_t id);
  void on_done(const SeqResult& r);

  const Tokenizer& tok_;
  StreamDecoder dec_;
  StopStrings stops_;
  std::shared_ptr<SeqRequest> req_;
  uint32_t n_prompt_ = 0;
  bool eog_ = false;  // worker only, until done_

  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;
  std::vector<TokenLogprob> logprobs_;
  bool done_ = false;
  SeqResult result_;
};

}  // namespace ztvm::server
