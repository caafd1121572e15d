// Shared by the GPU tests: one device per test process, and the error measure the bounds use.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/graph_ops.h"
#include "gpu/device.h"

namespace ztvm::test {

inline gpu::Device& device() {
  static gpu::Device dev;
  return dev;
}

// Normalised mean squared error: sum (got - want)^2 / sum want^2.
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    num += (double)(got[i] - want[i]) * (got[i] - want[i]);
    den += (double)want[i] * want[i];
  }
  return den > 0 ? num / den : num;
}

// Op i's variants by their names in its family ("single", "few", "split", "main", ...).
inline std::vector<std::pair<const char*, const Variant*>> named_variants(const Graph& g, size_t i) {
  if (auto* m = dynamic_cast<const MatmulOp*>(g.ops.at(i).get()))
    return {{"single", &m->single}, {"long_single", &m->long_single}, {"few", &m->few}, {"split", &m->split},
            {"long_main", &m->long_main}, {"wide", &m->wide}, {"main", &m->main}};
  if (auto* r = dynamic_cast<const RowOp*>(g.ops[i].get()))
    return {{"single", &r->single}, {"long_main", &r->long_main}, {"main", &r->main}};
  if (auto* a = dynamic_cast<const AttentionOp*>(g.ops[i].get()))
    return {{"decode", &a->decode}, {"decode_q8", &a->decode_q8}, {"decode_split", &a->decode_split},
            {"flash", &a->flash}, {"flash_q8", &a->flash_q8}, {"flash_q8_only", &a->flash_q8_only},
            {"flash_split", &a->flash_split}, {"blocked", &a->blocked}, {"main", &a->main}};
  return {};
}

// The profile role of op i's variant `name` ("" where it has none).
inline std::string role(const Graph& g, size_t i, const std::string& name) {
  for (auto [n, v] : named_variants(g, i))
    if (n == name) return v->role;
  return "";
}

// Which of op i's variants a pass of n tokens from pos0 runs: "skip", or the variant's name,
// matched on the pipeline and bindings it dispatches.
inline std::string runs(const Graph& g, size_t i, uint32_t n, uint32_t pos0 = 0) {
  std::vector<std::string> lines;
  {
    gpu::Recorder rec(device(), "runs");
    rec.trace(&lines);
    g.ops.at(i)->encode(rec, Pass{pos0, n, false});
  }
  if (lines.empty()) return "skip";
  for (auto [name, v] : named_variants(g, i))
    if (*v && lines[0].rfind(v->pipeline->label() + " x", 0) == 0 &&
        lines[0].find("[" + v->group.entries() + "]") != std::string::npos)
      return name;
  return "unknown: " + lines[0];
}

// The GEMM, whichever of its tilings the pass takes ("main" or "wide" -> "gemm"), else runs().
inline std::string runs_gemm(const Graph& g, size_t i, uint32_t n, uint32_t pos0 = 0) {
  const std::string r = runs(g, i, n, pos0);
  return r == "main" || r == "wide" ? "gemm" : r;
}

}  // namespace ztvm::test
