#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>

namespace ztvm {

using Clock = std::chrono::steady_clock;
static double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

const char* finish_name(Finish f) {
  switch (f) {
    case Finish::Stopped: return "stop";
    case Finish::Length: return "length";
    case Finish::Cancelled: return "cancelled";
    case Finish::Error: return "error";
  }
  return "?";
}

struct Scheduler::Slot {
  Slot(Forward& fwd, PagePool& pool) : gen(fwd, 4, &pool) {}
  Generator gen;
  std::shared_ptr<SeqRequest> req;  // null: idle (its cache stays for prefix reuse)
  Clock::time_point submitted;
  std::vector<int32_t> tokens;      // prompt + generated so far
  uint32_t generated = 0;
  SeqResult result;
  uint64_t last_used = 0;
};

Scheduler::Scheduler(Forward& fwd, uint32_t slots, uint32_t max_queue, uint32_t burst)
    : fwd_(fwd), pool_(fwd.kv_pages()), max_queue_(max_queue), burst_(std::max<uint32_t>(1, burst)) {
  // Models with a recurrent state too: the Forward holds one live state (its DeltaNet layers'), and
  // each slot's generator parks its own in its ring of snapshots when another slot takes a turn
  // (state_ring.h: two copies of the state a switch, 50 MiB for a Qwen3.5-4B-sized model).
  for (uint32_t i = 0; i < std::max<uint32_t>(1, slots); i++) slots_.push_back(std::make_unique<Slot>(fwd, pool_));
  pages_free_ = pool_.available();
  worker_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

bool Scheduler::submit(std::shared_ptr<SeqRequest> r) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!lost_.empty()) {
      fail_lost(*r);
      return true;
    }
    if (queue_.size() >= max_queue_ || quit_) return false;
    r->submitted_ = Clock::now();
    queue_.push_back(std::move(r));
  }
  cv_.notify_all();
  return true;
}

std::string Scheduler::device_lost() const {
  std::lock_guard<std::mutex> lk(mu_);
  return lost_;
}

void Scheduler::fail_lost(SeqRequest& r) {  // under mu_
  SeqResult res;
  res.finish = Finish::Error;
  res.error = lost_;
  res.device_lost = true;
  totals_.requests++;
  totals_.failed++;
  r.on_done(res);
}

Scheduler::Load Scheduler::load() const {
  std::lock_guard<std::mutex> lk(mu_);
  return {n_active_, (uint32_t)queue_.size(), (uint32_t)slots_.size(), pages_free_, pool_.total()};
}

Scheduler::Totals Scheduler::totals() const {
  std::lock_guard<std::mutex> lk(mu_);
  return totals_;
}

static size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) n++;
  return n;
}

bool Scheduler::make_room(uint32_t pages, const Slot* keep) {
  while (pool_.available() < pages) {
    Slot* victim = nullptr;  // the least recently used idle slot that still holds pages
    for (auto& s : slots_)
      if (!s->req && s.get() != keep && s->gen.pages_held() > 0 && (!victim || s->last_used < victim->last_used))
        victim = s.get();
    if (!victim) return false;
    victim->gen.release();
  }
  return true;
}

bool Scheduler::admit(std::shared_ptr<SeqRequest> r, std::vector<Slot*>& active) {
  Slot* best = nullptr;
  size_t best_len = 0;
  for (auto& s : slots_) {
    if (s->req) continue;
    size_t len = common_prefix(s->gen.cached(), r->prompt);
    if (!best || len > best_len || (len == best_len && s->last_used < best->last_used)) {
      best = s.get();
      best_len = len;
    }
  }
  if (!best) return false;
  // Pages for the prompt and the first token; the bursts reserve the rest as they go.
  const uint32_t need_tokens = (uint32_t)r->prompt.size() + 1;
  const uint32_t need = (need_tokens + Forward::kPage - 1) / Forward::kPage;
  const uint32_t have = best->gen.pages_held();
  if (need > have && !make_room(need - have, best)) {
    if (!active.empty()) return false;  // wait for a running request to end
    best->gen.release();                // nothing else holds pages: this one cannot fit at all
    if (!make_room(need, nullptr)) {
      SeqResult res;
      res.finish = Finish::Error;
      res.error = "the KV cache (" + std::to_string(pool_.total() * Forward::kPage) + " tokens) cannot hold this prompt";
      r->on_done(res);
      return true;
    }
  }
  best->req = std::move(r);
  best->submitted = best->req->submitted_;
  best->tokens = best->req->prompt;
  best->generated = 0;
  best->result = SeqResult{};
  best->result.queue_ms = ms_between(best->submitted, Clock::now());
  active.push_back(best);
  std::lock_guard<std::mutex> lk(mu_);
  n_active_++;
  return true;
}

void Scheduler::finish(Slot& s, Finish f, const std::string& error) {
  s.result.finish = f;
  s.result.error = error;
  s.result.device_lost = f == Finish::Error && fwd_.device().lost();
  std::shared_ptr<SeqRequest> r = std::move(s.req);
  static uint64_t tick = 0;
  s.last_used = ++tick;
  {
    std::lock_guard<std::mutex> lk(mu_);
    n_active_--;
    const GenerateStats& st = s.result.stats;
    totals_.requests++;
    totals_.failed += f == Finish::Error;
    totals_.cancelled += f == Finish::Cancelled;
    totals_.embeddings += r->embed != Pooling::Unset && f == Finish::Stopped;
    totals_.prompt_tokens += st.n_prompt;
    totals_.prompt_computed += st.n_prefilled;
    totals_.generated += st.n_generated;
    totals_.prefill_ms += st.ttft_ms;
    totals_.decode_ms += st.decode_ms;
    if (s.result.device_lost && lost_.empty()) lost_ = error;
  }
  // A cancelled client's pages go back at once; an errored cache is not trusted; a finished one
  // stays for the next request of the same conversation.
  if (f == Finish::Cancelled || f == Finish::Error) s.gen.release();
  pages_free_ = pool_.available();
  r->on_done(s.result);
}

bool Scheduler::prompt_turn(Slot& s, const std::function<void()>& work) {
  try {
    const auto t0 = Clock::now();
    work();
    s.result.stats.n_prompt = s.result.stats.n_prefilled = (uint32_t)s.tokens.size();
    s.result.stats.ttft_ms = ms_between(t0, Clock::now());
  } catch (const std::exception& e) {
    finish(s, Finish::Error, e.what());
    return false;
  }
  finish(s, Finish::Stopped);
  return false;
}

bool Scheduler::step(Slot& s, bool alone) {
  SeqRequest& r = *s.req;
  if (r.cancelled) {
    finish(s, Finish::Cancelled);
    return false;
  }
  if (r.score) {  // the whole prompt in this turn, each position's logits to on_logits
    std::vector<float> row(fwd_.config().vocab_size);
    return prompt_turn(s, [&] {
      s.gen.each_logits(s.tokens, [&](uint32_t pos, const float* logits) {
        if (pos + 1 >= s.tokens.size() || !r.on_logits) return;
        row.assign(logits, logits + row.size());
        r.on_logits(row, s.tokens[pos + 1]);
      });
    });
  }
  if (r.embed != Pooling::Unset)  // the whole prompt in this turn, as a generation's prefill would be
    return prompt_turn(s, [&] { s.result.embedding = s.gen.embedding(s.tokens, r.embed); });
  uint32_t n = std::min(alone ? burst_ * 8 : burst_, r.n_max - s.generated);
  if (n == 0) {
    finish(s, Finish::Length);
    return false;
  }
  // Pages for this burst; when the pool is short, idle caches go first, then the burst shrinks.
  const uint32_t pos = (uint32_t)s.tokens.size();
  if (!s.gen.reserve(pos + n)) {
    const uint32_t need = (pos + n + Forward::kPage - 1) / Forward::kPage - s.gen.pages_held();
    make_room(need, &s);
    while (n > 0 && !s.gen.reserve(pos + n)) n--;
    if (n == 0) {
      finish(s, Finish::Length);  // out of KV memory: ends like a full context
      return false;
    }
  }
  SamplingParams sp = r.sampling;
  sp.seed += 0x9E3779B97F4A7C15ull * s.generated;  // a fresh stream per burst, same for the same seed
  bool stop = false, cancel = false;
  std::vector<int32_t> fresh;
  try {
    GenerateStats st = s.gen.generate(s.tokens, n, [&](int32_t t) {
      fresh.push_back(t);
      if (fault_after_ && ++tokens_seen_ == fault_after_)
        fwd_.device().force_loss("fault injected after " + std::to_string(fault_after_) + " tokens (ZTVM_FAULT_LOSE_DEVICE_AFTER)");
      if (r.cancelled) {
        cancel = true;
        return false;
      }
      if (!r.on_token(t)) {
        stop = true;
        return false;
      }
      return true;
    }, sp, r.rule.get(), r.on_logits ? &r.on_logits : nullptr);
    GenerateStats& acc = s.result.stats;
    if (s.generated == 0) {  // the burst that prefilled the prompt
      acc.n_prompt = st.n_prompt;
      acc.n_prefilled = st.n_prefilled;
      acc.ttft_ms = st.ttft_ms;
      s.result.n_reused = st.n_prompt - st.n_prefilled;
    }
    acc.n_generated += st.n_generated;
    acc.decode_ms += st.decode_ms + (s.generated ? st.ttft_ms : 0);
  } catch (const std::exception& e) {
    finish(s, Finish::Error, e.what());
    return false;
  }
  if (fresh.empty() && !cancel) stop = true;  // a rule that allows no token ends the text
  s.tokens.insert(s.tokens.end(), fresh.begin(), fresh.end());
  s.generated += (uint32_t)fresh.size();
  if (cancel) finish(s, Finish::Cancelled);
  else if (stop) finish(s, Finish::Stopped);
  else if (s.generated >= r.n_max) finish(s, Finish::Length);
  else return true;
  return false;
}

void Scheduler::run() {
  std::vector<Slot*> active;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return quit_ || !queue_.empty() || !active.empty(); });
      if (quit_) break;
    }
    // Admit queued requests while slots are free (in arrival order).
    while (active.size() < slots_.size()) {
      std::shared_ptr<SeqRequest> r;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (queue_.empty()) break;
        r = queue_.front();
        queue_.pop_front();
      }
      if (r->cancelled) {
        SeqResult res;
        res.finish = Finish::Cancelled;
        r->on_done(res);
        continue;
      }
      if (!admit(r, active)) {
        std::lock_guard<std::mutex> lk(mu_);
        queue_.push_front(r);
        break;
      }
    }
    // One burst for each active request, in turn.
    bool waiting;
    {
      std::lock_guard<std::mutex> lk(mu_);
      waiting = !queue_.empty();
    }
    const bool alone = active.size() == 1 && !waiting;
    for (size_t i = 0; i < active.size();) {
      if (step(*active[i], alone)) i++;
      else active.erase(active.begin() + (std::ptrdiff_t)i);
    }
    pages_free_ = pool_.available();
    // Once the device is lost nothing queued can run: each ends now, without touching the GPU (the
    // active ones fail at their next GPU wait).
    std::lock_guard<std::mutex> lk(mu_);
    if (!lost_.empty()) {
      for (auto& r : queue_) fail_lost(*r);
      queue_.clear();
    }
  }
  // Shutting down: everything still here ends as cancelled.
  for (Slot* s : active) finish(*s, Finish::Cancelled);
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& r : queue_) {
    SeqResult res;
    res.finish = Finish::Cancelled;
    r->on_done(res);
  }
  queue_.clear();
}

}  // namespace ztvm
