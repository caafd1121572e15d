// The gated delta rule of a gated DeltaNet layer (Qwen3.5) over the tokens of a pass, in order, in one
// dispatch. Per token and value head h, with q, k its key head's rows of the conv's output and
// S = state[h] ([DK][DV], carried between passes; zero at pos0 == 0):
//   q, k L2-normalised (eps 1e-6), q / sqrt(DK);  beta = sigmoid(b);  g = A softplus(a + dt_bias)
//   S *= exp(g);  delta = (v - S^T k) beta;  S += k delta^T;  o = S^T q
// Each column j of S evolves on its own given k, q, g and beta: a workgroup owns COLS columns of one
// head and walks the tokens. Its 64 threads are R = 64 / COLS row groups x COLS columns, each thread
// keeping RPT = DK / R rows of its column in registers, so that S is read and written once a pass
// however many tokens it has; the row groups' partial sums of S^T k and S^T q meet in workgroup memory.
// The norms of q and k scale the sums after the fact (S^T (k / |k|) = (S^T k) / |k|), so they are
// summed alongside S^T k: three barriers a token.
//!include common

override NK: u32;
override DK: u32;
override NV: u32;
override DV: u32;
override TILED: bool;  // value head h reads key head h % NK (llama.cpp's order), else h / (NV / NK) (HF's)
override COLS: u32;    // columns of S a workgroup
const WG = 64u;
const MAX_RPT = 32u;
const MAX_DK = 512u;

@group(0) @binding(0) var<storage, read_write> o: array<f32>;      // [token][NV][DV]
@group(0) @binding(1) var<storage, read_write> state: array<f32>;  // [NV][DK][DV]
@group(0) @binding(2) var<storage, read> x: array<f32>;            // the conv's [token][q NK DK | k NK DK | v NV DV]
@group(0) @binding(3) var<storage, read> a: array<f32>;            // [token][NV], ssm_alpha x
@group(0) @binding(4) var<storage, read> b: array<f32>;            // [token][NV], ssm_beta x
@group(0) @binding(5) var<storage, read> A: array<f32>;            // [NV], ssm_a = -exp(A_log)
@group(0) @binding(6) var<storage, read> dt_bias: array<f32>;      // [NV]
@group(0) @binding(7) var<uniform> step: Step;

var<workgroup> qk: array<f32, 2 * MAX_DK>;  // the token's raw q, then k (at MAX_DK)
var<workgroup> sq_q: array<f32, WG>;        // partial sums of q^2 and k^2
var<workgroup> sq_k: array<f32, WG>;
var<workgroup> part_k: array<f32, WG>;      // [row group][column] partials of S^T k, then S^T q
var<workgroup> part_q: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let R = WG / COLS;
  let RPT = DK / R;
  let g = flat_group(wid, nwg);
  let h = g / (DV / COLS);
  let col = lid % COLS;
  let rg = lid / COLS;
  let j = (g % (DV / COLS)) * COLS + col;
  let kh = select(h / (NV / NK), h % NK, TILED);
  let CH = 2u * NK * DK + NV * DV;
  let i0 = rg * RPT;  // this thread's first row of S
  var s: array<f32, MAX_RPT>;
  for (var r = 0u; r < RPT; r++) { s[r] = select(0.0, state[(h * DK + i0 + r) * DV + j], step.pos0 > 0u); }
  for (var t = 0u; t < step.n_tokens; t++) {
    let row = t * CH;
    for (var i = lid; i < DK; i += WG) {
      qk[i] = x[row + kh * DK + i];
      qk[MAX_DK + i] = x[row + (NK + kh) * DK + i];
    }
    // The gates: the same few scalars in every thread, cheaper than another barrier.
    let ga = a[t * NV + h] + dt_bias[h];
    let softplus = select(log(1.0 + exp(ga)), ga, ga > 20.0);  // torch's threshold
    let decay = exp(A[h] * softplus);
    let beta = 1.0 / (1.0 + exp(-b[t * NV + h]));
    workgroupBarrier();
    var qq = 0.0;
    var kk = 0.0;
    for (var i = lid; i < DK; i += WG) {
      qq += qk[i] * qk[i];
      kk += qk[MAX_DK + i] * qk[MAX_DK + i];
    }
    sq_q[lid] = qq;
    sq_k[lid] = kk;
    var pk = 0.0;
    for (var r = 0u; r < RPT; r++) {
      s[r] *= decay;
      pk += s[r] * qk[MAX_DK + i0 + r];
    }
    part_k[lid] = pk;
    workgroupBarrier();
    qq = 0.0;
    kk = 0.0;
    for (var i = 0u; i < min(WG, DK); i++) {
      qq += sq_q[i];
      kk += sq_k[i];
    }
    let inv_k = inverseSqrt(kk + 1e-6);
    var kv = 0.0;
    for (var q = 0u; q < R; q++) { kv += part_k[q * COLS + col]; }
    let v = x[row + 2u * NK * DK + h * DV + j];
    let dk = (v - kv * inv_k) * beta * inv_k;  // delta, and the 1 / |k| of the k it multiplies
    var pq = 0.0;
    for (var r = 0u; r < RPT; r++) {
      s[r] += qk[MAX_DK + i0 + r] * dk;
      pq += s[r] * qk[i0 + r];
    }
    part_q[lid] = pq;
    workgroupBarrier();
    if (rg == 0u) {
      var out = 0.0;
      for (var q = 0u; q < R; q++) { out += part_q[q * COLS + col]; }
      o[t * NV * DV + h * DV + j] = out * inverseSqrt(qq + 1e-6) * inverseSqrt(f32(DK));
    }
  }
  for (var r = 0u; r < RPT; r++) { state[(h * DK + i0 + r) * DV + j] = s[r]; }
}
