#include "server/job.h"

#include "server/json_rule.h"

#include <cmath>

namespace ztvm::server {

ApiError failure(const SeqResult& res, const std::string& what) {
  const std::string why = res.error.empty() ? std::string(finish_name(res.finish)) : res.error;
  if (res.device_lost)
    return ApiError(503, what + ": " + why + "; the server is shutting down", "unavailable", "", "device_lost");
  return ApiError(500, what + ": " + why, "server_error");
}

Job::Job(const Tokenizer& tok, const GenOptions& opts) : tok_(tok), dec_(tok), stops_(opts.stop) {}

std::shared_ptr<Job> Job::start(Scheduler& sched, const Tokenizer& tok, std::vector<int32_t> prompt, uint32_t n_max,
                                const GenOptions& opts, std::shared_ptr<const JsonSchema> json) {
  auto job = std::make_shared<Job>(tok, opts);
  job->n_prompt_ = (uint32_t)prompt.size();
  auto r = std::make_shared<SeqRequest>();
  r->prompt = std::move(prompt);
  r->n_max = n_max;
  r->sampling = opts.sampling;
  if (json) r->rule = std::make_shared<JsonRule>(tok, std::move(json));
  // The HTTP side owns the job; the worker only looks it up. If the client's handler is gone (a
  // dropped connection), the next token finds no job and generation stops.
  std::weak_ptr<Job> w = job;
  r->on_token = [w](int32_t id) {
    auto j = w.lock();
    return j && j->on_token(id);
  };
  r->on_done = [w](const SeqResult& res) {
    if (auto j = w.lock()) j->on_done(res);
  };
  if (opts.top_logprobs >= 0)
    r->on_logits = [w, n_top = opts.top_logprobs](const std::vector<float>& logits, int32_t picked) {
      auto j = w.lock();
      if (!j || j->tok_.is_eog(picked)) return;
      TokenLogprob t = token_logprob(logits, picked, n_top);
      std::lock_guard<std::mutex> lk(j->mu_);
      j->logprobs_.push_back(std::move(t));
    };
  job->req_ = r;
  if (!sched.submit(r))
    throw ApiError(503, "the server is busy: too many queued requests, retry later", "unavailable", "", "server_busy");
  return job;
}

bool Job::on_token(int32_t id) {
  if (tok_.is_eog(id)) {
    eog_ = true;
    return false;
  }
  std::string shown = stops_.push(dec_.push(id));
  if (!shown.empty()) {
    std::lock_guard<std::mutex> lk(mu_);
    text_ += shown;
  }
  cv_.notify_all();
  return !stops_.stopped();
}

void Job::on_done(const SeqResult& r) {
  std::string rest;
  if (!stops_.stopped()) {
    rest = stops_.push(dec_.flush());
    if (!stops_.stopped()) rest += stops_.flush();
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    text_ += rest;
    result_ = r;
    done_ = true;
  }
  cv_.notify_all();
}

bool Job::take(std::string& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait_for(lk, timeout, [&] { return done_ || !text_.empty(); });
  out += text_;
  text_.clear();
  return done_;
}

std::vector<TokenLogprob> Job::score_prompt(Scheduler& sched, const Tokenizer& tok, const std::vector<int32_t>& prompt,
                                            int n_top) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    SeqResult result;
    std::vector<TokenLogprob> lps;
  };
  auto sh = std::make_shared<Shared>();
  auto r = std::make_shared<SeqRequest>();
  r->prompt = prompt;
  r->score = true;
  r->on_token = [](int32_t) { return false; };
  r->on_logits = [sh, n_top](const std::vector<float>& logits, int32_t next) {
    sh->lps.push_back(token_logprob(logits, next, n_top));  // the worker alone writes it until done
  };
  r->on_done = [sh](const SeqResult& res) {
    std::lock_guard<std::mutex> lk(sh->mu);
    sh->result = res;
    sh->done = true;
    sh->cv.notify_all();
  };
  if (!sched.submit(r))
    throw ApiError(503, "the server is busy: too many queued requests, retry later", "unavailable", "", "server_busy");
  std::unique_lock<std::mutex> lk(sh->mu);
  sh->cv.wait(lk, [&] { return sh->done; });
  if (sh->result.finish != Finish::Stopped) throw failure(sh->result, "scoring the prompt failed");
  std::vector<TokenLogprob> out;
  if (!prompt.empty() && prompt[0] != tok.bos_id()) out.push_back(TokenLogprob{prompt[0], NAN, {}});
  out.insert(out.end(), sh->lps.begin(), sh->lps.end());
  return out;
}

void Job::take_logprobs(std::vector<TokenLogprob>& out) {
  std::lock_guard<std::mutex> lk(mu_);
  out.insert(out.end(), std::make_move_iterator(logprobs_.begin()), std::make_move_iterator(logprobs_.end()));
  logprobs_.clear();
}

const char* Job::finish_reason() const { return result_.finish == Finish::Length ? "length" : "stop"; }

uint32_t Job::completion_tokens() const { return result_.stats.n_generated - (eog_ ? 1 : 0); }

json Job::timings() const {
  const GenerateStats& s = result_.stats;
  const uint32_t n = s.n_generated;
  return {{"prompt_n", s.n_prefilled},
          {"prompt_ms", s.ttft_ms},
          {"predicted_n", n},
          {"predicted_ms", s.decode_ms},
          {"predicted_per_second", s.decode_ms > 0 && n > 1 ? (n - 1) * 1000.0 / s.decode_ms : 0.0},
          {"cache_n", result_.n_reused},
          {"queue_ms", result_.queue_ms}};
}

}  // namespace ztvm::server
