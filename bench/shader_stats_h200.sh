#!/usr/bin/env bash
# What the H200's driver made of each kernel: registers per thread, shared memory, instruction counts
# (tools/shader-stats). The "new" build that bench/ab_prepare.sh packed into .cache/ab writes Dawn's
# SPIR-V for every pipeline a run builds (ZTVM_DUMP_SPIRV), and shader_stats, packed beside it, has the
# driver rebuild each one. Run through the device tool with carry [".gl", ".cache/ab"]:
#   MODELS="qwen3-4b:Q4_0" ARGS="-p 1024 -n 4 -r 1" bash bench/shader_stats_h200.sh
# Writes $OUT/stats-<shape>-<quant>.txt: a line per pipeline, its kernel's label and the statistics;
# IR=LABEL_PART adds the driver's internal representations of the pipelines so labelled.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/ab_unpack.sh  # $A: the packed builds, unpacked
[ -x "$A/shader_stats" ] || { echo "shader_stats_h200: .cache/ab holds no shader_stats (SHADER_STATS=1 bench/ab_prepare.sh packs it from the new build)" >&2; exit 1; }
MODELS=${MODELS:-"qwen3-4b:Q4_0"}
ARGS=${ARGS:-"-p 1024 -n 4 -r 1"}
mkdir -p "${OUT:-/tmp}"
for m in $MODELS; do
  shape=${m%%:*} quant=${m##*:}
  f=$(ab_model "$m")
  dir=/tmp/spirv-$shape-$quant
  # shellcheck disable=SC2086  # ARGS is a word list on purpose
  ZTVM_DUMP_SPIRV=$dir "$A/new/ztvm" bench -m "$f" $ARGS > /dev/null
  "$A/shader_stats" "$dir" ${IR:+--ir "$IR"} > "${OUT:-/tmp}/stats-$shape-$quant.txt" 2>&1 || true
done
