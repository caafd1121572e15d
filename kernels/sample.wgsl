// Random sampling on the GPU, one workgroup, in llama.cpp's order: penalties over the recent generated
// tokens; keep the tokens that pass top-k, top-p and min-p (judged on the untempered distribution);
// draw one from softmax(logits / temperature) over what is left, with a counter-based RNG keyed by
// (seed, step) — the same seed gives the same text. Top-k and
// top-p thresholds are found by bisection on the logit value (each probe is one pass counting or
// summing over the vocabulary), so nothing is sorted. Writes ids[0] and tokens[out_index] like argmax.
//!include common
//!include block_sum
//!include NEXT

override N: u32;  // vocabulary size

struct Sampling {
  temperature: f32,
  top_p: f32,
  min_p: f32,
  repeat_penalty: f32,
  presence_penalty: f32,
  frequency_penalty: f32,
  top_k: u32,
  repeat_last_n: u32,
  seed_lo: u32,
  seed_hi: u32,
  _p0: u32,
  _p1: u32,
}

@group(0) @binding(0) var<storage, read_write> ids: array<u32>;
@group(0) @binding(1) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> logits: array<f32>;  // shaped in place
@group(0) @binding(3) var<uniform> sp: Sampling;
@group(0) @binding(4) var<uniform> step: Step;

const WG: u32 = 256u;  // also block_sum.wgsl's width
var<workgroup> red: array<f32, 256>;
var<workgroup> redu: array<u32, 256>;

fn max_f(lid: u32, v: f32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
fn min_f(lid: u32, v: f32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] = min(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
fn sum_u(lid: u32, v: u32) -> u32 {
  redu[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { redu[lid] += redu[lid + s]; }
    workgroupBarrier();
  }
  let r = redu[0];
  workgroupBarrier();
  return r;
}

// PCG-style hash: a uniform float in [0, 1) from (seed, counter).
fn uniform01(a: u32, b: u32, c: u32) -> f32 {
  var x = a * 747796405u + b * 2891336453u + c * 277803737u + 1u;
  x = ((x >> ((x >> 28u) + 4u)) ^ x) * 277803737u;
  x = (x >> 22u) ^ x;
  return f32(x >> 8u) / 16777216.0;
}

var<workgroup> picked: u32;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
  let out = step.out_index;
  // 1. Penalties on the last repeat_last_n sampled tokens (one thread per distinct token: the first
  //    occurrence in the window counts them all).
  let first = select(0u, out - min(out, sp.repeat_last_n), out > 0u);
  for (var i = first + lid; i < out; i += WG) {
    let t = tokens[i];
    var seen_before = false;
    var count = 0u;
    for (var j = first; j < out; j++) {
      if (tokens[j] == t) {
        if (j < i) { seen_before = true; }
        count++;
      }
    }
    if (!seen_before) {
      var l = logits[t];
      l = select(l * sp.repeat_penalty, l / sp.repeat_penalty, l > 0.0);
      logits[t] = l - sp.presence_penalty - sp.frequency_penalty * f32(count);
    }
  }
  storageBarrier();
  workgroupBarrier();
  // 2. The largest logit.
  var mx = -3.0e38;
  for (var i = lid; i < N; i += WG) { mx = max(mx, logits[i]); }
  let lmax = max_f(lid, mx);
  var lo = lmax + log(max(sp.min_p, 1e-30));  // min-p: p >= min_p * p_max
  if (sp.min_p <= 0.0) { lo = -3.0e38; }
  // 3. Top-k: the largest threshold t with count(l >= t) >= k, by bisection on [min, max].
  if (sp.top_k > 0u && sp.top_k < N) {
    var mn = 3.0e38;
    for (var i = lid; i < N; i += WG) { mn = min(mn, logits[i]); }
    var a = min_f(lid, mn);
    var b = lmax;
    for (var it = 0u; it < 32u; it++) {
      let mid = 0.5 * (a + b);
      var c = 0u;
      for (var i = lid; i < N; i += WG) { c += select(0u, 1u, logits[i] >= mid); }
      if (sum_u(lid, c) >= sp.top_k) { a = mid; } else { b = mid; }
    }
    lo = max(lo, a);
  }
  // 4. Top-p: the largest threshold whose kept mass is >= top_p of the (min-p/top-k filtered) mass.
  var total = 0.0;
  for (var i = lid; i < N; i += WG) {
    let l = logits[i];
    if (l >= lo) { total += exp(l - lmax); }
  }
  total = block_sum(total, lid);
  if (sp.top_p < 1.0) {
    var a = lo;
    var b = lmax;
    for (var it = 0u; it < 32u; it++) {
      let mid = 0.5 * (a + b);
      var m = 0.0;
      for (var i = lid; i < N; i += WG) {
        let l = logits[i];
        if (l >= mid) { m += exp(l - lmax); }
      }
      if (block_sum(m, lid) >= sp.top_p * total) { a = mid; } else { b = mid; }
    }
    lo = a;
  }
  // 5. Draw with weights exp((l - max) / T): thread j owns a contiguous slice; a scan of the slice
  //    masses finds the slice holding u.
  let inv_t = 1.0 / sp.temperature;
  let per = (N + WG - 1u) / WG;
  let s0 = lid * per;
  let s1 = min(N, s0 + per);
  var m = 0.0;
  for (var i = s0; i < s1; i++) {
    let l = logits[i];
    if (l >= lo) { m += exp((l - lmax) * inv_t); }
  }
  let total_t = block_sum(m, lid);
  red[lid] = m;
  workgroupBarrier();
  if (lid == 0u) {
    let u = uniform01(sp.seed_lo, sp.seed_hi, out) * total_t;
    var acc = 0.0;
    var pick = 0xFFFFFFFFu;
    var last = 0xFFFFFFFFu;
    for (var j = 0u; j < WG && pick == 0xFFFFFFFFu; j++) {
      if (acc + red[j] > u) {
        for (var i = j * per; i < min(N, j * per + per); i++) {
          let l = logits[i];
          if (l >= lo) {
            last = i;
            acc += exp((l - lmax) * inv_t);
            if (acc > u) { pick = i; break; }
          }
        }
      } else {
        acc += red[j];
        if (red[j] > 0.0) {  // remember a kept token in case rounding leaves u past the end
          for (var i = j * per; i < min(N, j * per + per); i++) { if (logits[i] >= lo) { last = i; } }
        }
      }
    }
    if (pick == 0xFFFFFFFFu) { pick = last; }
    if (pick == 0xFFFFFFFFu) { pick = 0u; }
    ids[0] = pick;
    tokens[out] = pick;
    picked = pick;
  }
  workgroupBarrier();
  embed_next(picked, lid);  // NEXT = next_embed: the token's embedding row for the next step
}
