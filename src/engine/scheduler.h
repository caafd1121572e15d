// Runs many requests on one model: a worker thread owns the GPU and gives each active sequence a
// burst of tokens in turn (round robin), so concurrent clients all stream while the rest queue.
// Each of the `slots` sequences keeps its KV pages after a request ends; a new request takes the
// idle slot whose cache shares the longest prefix with its prompt (prefix reuse across requests),
// and idle caches are dropped, least recently used first, when the page pool runs short. Models
// with a recurrent state (Qwen3.5's DeltaNet layers) reuse a prefix up to a snapshot of that state,
// and their slots take turns with the Forward's one live state (state_ring.h).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/generator.h"

namespace ztvm {

enum class Finish { Stopped, Length, Cancelled, Error };

struct SeqResult {
  Finish finish = Finish::Stopped;
  GenerateStats stats;       // summed over the request's bursts; ttft_ms from submit() to the first token
  uint32_t n_reused = 0;     // prompt tokens whose KV came from an earlier request
  double queue_ms = 0;       // waiting for a slot
  std::string error;         // Finish::Error: what went wrong
  bool device_lost = false;  // Finish::Error because the GPU is gone: no request will succeed again
  std::vector<float> embedding;  // SeqRequest::embed: the prompt's embedding (Generator::embedding)
};

struct SeqRequest {
  std::vector<int32_t> prompt;
  uint32_t n_max = 0;        // tokens to generate at most (prompt + n_max <= the context)
  SamplingParams sampling;
  std::shared_ptr<TokenConstraint> rule;  // set: every token is one the rule allows (Generator::generate)
  LogitsTap on_logits;  // set: called on the worker thread with each step's logits and pick (logprobs)
  // Set: no generation; the prompt's embedding with this pooling, in SeqResult::embedding (one turn).
  Pooling embed = Pooling::Unset;
  // Set: no generation; on_logits sees the prompt scored, each position's logits with the prompt's
  // next token as the pick (one turn; echoed prompt logprobs).
  bool score = false;
  // Called on the worker thread for every generated token; false ends the request (Finish::Stopped).
  std::function<bool(int32_t)> on_token;
  // Called once on the worker thread when the request ends, whatever the reason.
  std::function<void(const SeqResult&)> on_done;
  std::atomic<bool> cancelled{false};  // set by the client side (disconnect): ends as Finish::Cancelled
  std::chrono::steady_clock::time_point submitted_;  // set by Scheduler::submit
};

class Scheduler {
 public:
  // slots: sequences generating at once. burst: tokens a sequence makes before the next one's turn.
  Scheduler(Forward& fwd, uint32_t slots, uint32_t max_queue = 256, uint32_t burst = 8);
  ~Scheduler();  // finishes nothing: queued and active requests end as Cancelled

  // Queues a request; false when the queue is full (the caller answers 503).
  bool submit(std::shared_ptr<SeqRequest> r);

  struct Load { uint32_t active, queued, slots, pages_free, pages_total; };
  Load load() const;

  // What the requests that ended did, since the start (GET /metrics).
  struct Totals {
    uint64_t requests = 0, failed = 0, cancelled = 0, embeddings = 0;
    uint64_t prompt_tokens = 0, prompt_computed = 0, generated = 0;  // computed: not reused from a cache
    double prefill_ms = 0, decode_ms = 0;
  };
  Totals totals() const;
  // Set once the GPU device is lost (a driver reset, a GPU gone): what Dawn said. From then on every
  // request ends at once as Finish::Error with SeqResult::device_lost; the server answers 503 and exits.
  std::string device_lost() const;
  // Fault injection for tests (ZTVM_FAULT_LOSE_DEVICE_AFTER): the device is lost when the worker has
  // generated this many tokens in all.
  void lose_device_after(uint64_t tokens) { fault_after_ = tokens; }

 private:
  struct Slot;
  void run();
  bool admit(std::shared_ptr<SeqRequest> r, std::vector<Slot*>& active);
  bool step(Slot& s, bool alone);      // one burst; false when the request has ended
  bool prompt_turn(Slot& s, const std::function<void()>& work);  // a request that only reads its prompt: work, then end
  void finish(Slot& s, Finish f, const std::string& error = "");
  void fail_lost(SeqRequest& r);  // ends a request that arrived after the device was lost
  bool make_room(uint32_t pages, const Slot* keep);  // drop idle caches until `pages` pages are free

  Forward& fwd_;
  PagePool pool_;
  uint32_t max_queue_, burst_;
  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<SeqRequest>> queue_;
  uint32_t n_active_ = 0;
  Totals totals_;  // under mu_
  std::atomic<uint32_t> pages_free_{0};
  bool quit_ = false;
  std::string lost_;  // under mu_: device_lost()
  uint64_t fault_after_ = 0, tokens_seen_ = 0;  // worker only
  std::thread worker_;
};

const char* finish_name(Finish f);

}  // namespace ztvm
