#include "engine/generator.h"

#include "engine/sample_cpu.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <stdexcept>

namespace ztvm {

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

Generator::Generator(Forward& fwd, uint32_t ring, PagePool* pool) : fwd_(fwd), pool_(pool), depth_(ring) {
  grow_ring(std::max(ring, 2 * kAutoMaxSteps));
  if (fwd.config().has_recurrent_state()) states_ = std::make_unique<StateRing>(fwd, cached_);
}

void Generator::grow_ring(uint32_t n) {
  while (ring_.size() < n)
    ring_.push_back(fwd_.device().buffer("readback.ring" + std::to_string(ring_.size()), 4, gpu::kReadback));
}

uint32_t Generator::auto_steps_per_submit(double ms_per_token) {
  if (!(ms_per_token > 0)) return 1;
  return (uint32_t)std::clamp(std::floor(kAutoGroupMs / ms_per_token), 1.0, (double)kAutoMaxSteps);
}

Generator::~Generator() { release(); }

void Generator::set_steps_per_submit(uint32_t k) {
  if (k > Forward::kStepSlots)
    throw std::invalid_argument("decode steps per submission: " + std::to_string(k) + " (1.." +
                                std::to_string(Forward::kStepSlots) + ", or 0 for automatic)");
  steps_per_submit_ = k;
  grow_ring(2 * k);
}

bool Generator::reserve(uint32_t n_tokens) {
  if (!pool_) return n_tokens <= fwd_.max_context();
  const uint32_t need = (n_tokens + Forward::kPage - 1) / Forward::kPage;
  if (need <= pages_.size()) return true;
  if (need - pages_.size() > pool_->available()) return false;
  while (pages_.size() < need) pages_.push_back(pool_->take());
  return true;
}

void Generator::reset() {
  cached_.clear();
  if (states_) states_->clear();
}

void Generator::release() {
  reset();
  if (pool_) pool_->give(pages_);
}

size_t Generator::rewind(size_t keep) {
  if (states_) keep = states_->resume((uint32_t)keep);
  cached_.resize(keep);
  return keep;
}

// The last few chunk boundaries, so that a ring of size() keeps one older snapshot beside them (an
// earlier turn's end). A one-token pass continues a generation: the live state covers it.
void Generator::snapshot(gpu::Recorder& rec, size_t from, size_t at, uint32_t n, size_t end) {
  if (!states_ || end - from < 2) return;
  const size_t chunk = fwd_.max_chunk(), n_chunks = (end - from + chunk - 1) / chunk, i = (at - from) / chunk;
  if (i + std::max<uint32_t>(1, states_->size() - 1) >= n_chunks) states_->save(rec, (uint32_t)(at + n));
}

void Generator::bind_pages(uint32_t n_tokens) {
  if (!pool_) return;
  if (!reserve(n_tokens))
    throw std::runtime_error("KV cache full: " + std::to_string(n_tokens) + " tokens need more pages than are free");
  fwd_.use_pages(pages_);
}

void Generator::check_ids(const std::vector<int32_t>& ids) const {
  for (int32_t id : ids)
    if (id < 0 || (uint32_t)id >= fwd_.config().vocab_size)
      throw std::runtime_error("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                               std::to_string(fwd_.config().vocab_size - 1) + ")");
}

std::vector<float> Generator::logits(const std::vector<int32_t>& ids) {
  std::vector<float> out;
  out.reserve((size_t)ids.size() * fwd_.config().vocab_size);
  each_logits(ids, [&](uint32_t, const float* row) { out.insert(out.end(), row, row + fwd_.config().vocab_size); });
  return out;
}

void Generator::each_logits(const std::vector<int32_t>& ids, const std::function<void(uint32_t, const float*)>& row) {
  check_ids(ids);
  gpu::Device& dev = fwd_.device();
  const uint32_t vocab = fwd_.config().vocab_size, chunk = fwd_.logits_rows();
  if (ids.size() > fwd_.max_context())
    throw std::runtime_error(std::to_string(ids.size()) + " tokens exceed the context of " + std::to_string(fwd_.max_context()));
  rewind(0);
  bind_pages((uint32_t)ids.size());
  for (size_t at = 0; at < ids.size(); at += chunk) {
    uint32_t n = (uint32_t)std::min<size_t>(chunk, ids.size() - at);
    fwd_.write_ids(ids.data() + at, n);
    gpu::Recorder rec(dev, "logits");
    fwd_.encode(rec, Head::AllLogits, (uint32_t)at, n);
    rec.submit();
    const std::vector<float> l = dev.read_as<float>(fwd_.logits(), (uint64_t)n * vocab);
    for (uint32_t r = 0; r < n; r++) row((uint32_t)at + r, l.data() + (size_t)r * vocab);
    cached_.insert(cached_.end(), ids.begin() + at, ids.begin() + at + n);
  }
  if (states_) states_->ran();
  dev.check();
}

std::vector<float> Generator::embedding(const std::vector<int32_t>& ids, Pooling pooling) {
  if (ids.empty()) throw std::runtime_error("empty input: an embedding needs at least one token");
  check_ids(ids);
  if (ids.size() > fwd_.max_context())
    throw std::runtime_error("input of " + std::to_string(ids.size()) + " tokens exceeds the context of " +
                             std::to_string(fwd_.max_context()) + " tokens");
  gpu::Device& dev = fwd_.device();
  const uint32_t d = fwd_.config().hidden_size, n_ids = (uint32_t)ids.size();
  bind_pages(n_ids);
  size_t keep = 0;  // positions whose keys and values are reused (always recompute the last)
  if (pooling == Pooling::Last)
    while (keep < cached_.size() && keep + 1 < ids.size() && cached_[keep] == ids[keep]) keep++;
  keep = rewind(keep);
  Pooler pool(pooling, d, n_ids);
  for (size_t at = keep; at < ids.size(); at += fwd_.max_chunk()) {
    const uint32_t n = (uint32_t)std::min<size_t>(fwd_.max_chunk(), ids.size() - at);
    fwd_.write_ids(ids.data() + at, n);
    gpu::Recorder rec(dev, "embedding");
    fwd_.encode(rec, Head::None, (uint32_t)at, n);
    snapshot(rec, keep, at, n, ids.size());
    rec.submit();
    cached_.insert(cached_.end(), ids.begin() + at, ids.begin() + at + n);
    uint32_t first, count;
    pool.wanted((uint32_t)at, n, first, count);
    if (count == 0) continue;
    std::vector<float> rows = dev.read_as<float>(fwd_.hidden(), (uint64_t)count * d, (uint64_t)(first - at) * d * 4);
    pool.add(rows.data(), count);
  }
  if (states_) states_->ran();
  dev.check();
  return pool.finish();
}

void Generator::prefill(const std::vector<int32_t>& prompt, size_t end, uint32_t n_max, Head last_head,
                        GenerateStats& st) {
  if (prompt.empty()) throw std::runtime_error("empty prompt: at least one token (e.g. BOS) is needed");
  check_ids(prompt);
  if (prompt.size() + n_max > fwd_.max_context())
    throw std::runtime_error("prompt of " + std::to_string(prompt.size()) + " tokens + " + std::to_string(n_max) +
                             " to generate exceeds the context of " + std::to_string(fwd_.max_context()) + " tokens");
  bind_pages((uint32_t)(prompt.size() + n_max));
  st.n_prompt = (uint32_t)prompt.size();
  // Prefix reuse: keep cached entries that match the prompt; always recompute at least the last token.
  // Models with a recurrent state (gated DeltaNet) go back to the newest state held inside that prefix.
  size_t keep = 0;
  while (keep < cached_.size() && keep + 1 < prompt.size() && cached_[keep] == prompt[keep]) keep++;
  keep = rewind(keep);
  const uint32_t chunk = fwd_.max_chunk();
  for (size_t at = keep; at < end; at += chunk) {
    uint32_t n = (uint32_t)std::min<size_t>(chunk, end - at);
    bool last = at + n == end;
    fwd_.write_ids(prompt.data() + at, n);
    gpu::Recorder rec(fwd_.device(), "prefill");
    fwd_.encode(rec, last ? last_head : Head::None, (uint32_t)at, n, 0);
    snapshot(rec, keep, at, n, end);
    if (last && last_head != Head::None) rec.copy(fwd_.ids(), 0, ring_[0], 0, 4);
    rec.submit();
    cached_.insert(cached_.end(), prompt.begin() + at, prompt.begin() + at + n);
    st.n_prefilled += n;
  }
  if (states_) states_->ran();
}

GenerateStats Generator::generate(const std::vector<int32_t>& prompt, uint32_t n_max,
                                  const std::function<bool(int32_t)>& on_token, const SamplingParams& sampling,
                                  TokenConstraint* rule, const LogitsTap* tap) {
  if (rule || (tap && *tap)) return generate_ruled(prompt, n_max, on_token, sampling, rule, tap);
  const Head head = sampling.greedy() ? Head::LastSample : Head::LastRandom;
  if (!sampling.greedy()) fwd_.set_sampling(sampling);
  gpu::Device& dev = fwd_.device();
  GenerateStats st;
  auto t0 = Clock::now();
  prefill(prompt, prompt.size(), n_max, head, st);
  if (n_max == 0) {
    dev.wait_idle();
    return st;
  }

  // Decode: step i embeds the id step i-1 sampled (ids[0] on the GPU). Up to ring.size() steps are in
  // flight; the host maps the oldest slot, hands its token out, and stops on request.
  struct InFlight { uint32_t slot; WGPUFuture map; };
  std::deque<InFlight> flight;
  std::vector<uint32_t> map_status(ring_.size());  // a failed map (a lost device) has no range to read
  auto map_slot = [&](uint32_t slot) {
    WGPUBufferMapCallbackInfo mi{};
    mi.mode = WGPUCallbackMode_WaitAnyOnly;
    mi.userdata1 = &map_status[slot];
    mi.callback = [](uint32_t status, WGPUStringView, void* st, void*) { *static_cast<uint32_t*>(st) = status; };
    flight.push_back({slot, wgpuBufferMapAsync(ring_[slot].get(), WGPUMapMode_Read, 0, 4, mi)});
  };
  map_slot(0);
  uint32_t issued = 1;
  bool stop = false;
  Clock::time_point t_first;
  while (!flight.empty()) {
    // Keep the pipeline full before waiting.
    const Clock::time_point t_enc = Clock::now();
    // Automatic: one a submission until two tokens have told the step's time.
    const uint32_t k = steps_per_submit_ ? steps_per_submit_
                       : st.n_generated < 2 ? 1
                                            : auto_steps_per_submit(ms_since(t_first) / (st.n_generated - 1));
    const uint32_t in_flight = std::min<uint32_t>(std::max(depth_, 2 * k), (uint32_t)ring_.size());
    while (!stop && issued < n_max && flight.size() + std::min(k, n_max - issued) <= in_flight) {
      const uint32_t first = issued, n = std::min(k, n_max - issued);
      gpu::Recorder rec(dev, "decode");
      for (uint32_t i = 0; i < n; i++, issued++) {
        const uint32_t pos = (uint32_t)(cached_.size() + issued - 1);
        if (k == 1) fwd_.encode(rec, head, pos, 1, issued);
        else fwd_.encode_step(rec, head, pos, issued, i);
        rec.copy(fwd_.ids(), 0, ring_[issued % ring_.size()], 0, 4);
      }
      rec.submit();
      st.submissions++;
      for (uint32_t i = first; i < issued; i++) map_slot(i % ring_.size());
    }
    st.encode_ms += ms_since(t_enc);
    const Clock::time_point t_wait = Clock::now();
    InFlight f = flight.front();
    flight.pop_front();
    dev.wait(f.map, "a generated token");
    st.wait_ms += ms_since(t_wait);
    dev.check();
    if (map_status[f.slot] != WGPUMapAsyncStatus_Success) throw gpu::GpuError("reading a generated token failed");
    int32_t tok = *static_cast<const int32_t*>(wgpuBufferGetConstMappedRange(ring_[f.slot].get(), 0, 4));
    wgpuBufferUnmap(ring_[f.slot].get());
    if (stop) continue;  // drained: steps issued before the stop was known
    if (st.n_generated == 0) {
      t_first = Clock::now();
      st.ttft_ms = ms_since(t0);
    }
    st.n_generated++;
    if (!on_token(tok) || st.n_generated >= n_max) stop = true;
  }
  st.decode_ms = ms_since(t_first);
  // The cache now holds the prompt and every token the steps fed back: all generated but the last,
  // with those of steps drained past a stop, since the KV cache and the recurrent state took them too.
  const std::vector<uint32_t> gen = dev.read_as<uint32_t>(fwd_.tokens(), issued);
  for (uint32_t i = 0; i + 1 < issued; i++) cached_.push_back((int32_t)gen[i]);
  if (states_) states_->ran();
  return st;
}

// Under a rule the host picks each token from its step's logits: the prompt's last token, then each
// pick, goes through the model alone with all its logits read back.
GenerateStats Generator::generate_ruled(const std::vector<int32_t>& prompt, uint32_t n_max,
                                        const std::function<bool(int32_t)>& on_token, const SamplingParams& sampling,
                                        TokenConstraint* rule, const LogitsTap* tap) {
  gpu::Device& dev = fwd_.device();
  GenerateStats st;
  const auto t0 = Clock::now();
  Clock::time_point t_first;
  prefill(prompt, prompt.size() - 1, n_max, Head::None, st);
  const uint32_t vocab = fwd_.config().vocab_size;
  std::vector<int32_t> picked;
  int32_t tok = prompt.back();
  for (uint32_t i = 0; i < n_max; i++) {
    const uint32_t pos = (uint32_t)cached_.size();
    fwd_.write_ids(&tok, 1);
    gpu::Recorder rec(dev, "decode under a rule");
    fwd_.encode(rec, Head::AllLogits, pos, 1);
    rec.submit();
    std::vector<float> logits = dev.read_as<float>(fwd_.logits(), vocab);
    dev.check();
    cached_.push_back(tok);
    if (i == 0) st.n_prefilled++;  // the prompt's last token
    std::vector<float> raw;  // the tap's copy: sample_cpu applies the penalties in place
    if (tap && *tap) raw = logits;
    const int32_t next = sample_cpu(logits, sampling, picked, st.n_generated, rule);
    if (next < 0) break;  // nothing may follow: the rule has ended the text
    if (tap && *tap) (*tap)(raw, next);
    if (st.n_generated == 0) {
      t_first = Clock::now();
      st.ttft_ms = ms_since(t0);
    }
    st.n_generated++;
    st.submissions++;
    picked.push_back(next);
    if (rule) rule->accept(next);
    if (!on_token(next)) break;
    tok = next;
  }
  if (st.n_generated) st.decode_ms = ms_since(t_first);
  if (states_) states_->ran();
  return st;
}

}  // namespace ztvm
