#!/usr/bin/env bash
# Per-kernel GPU time on the H200 (`ztvm bench --profile`) for the "new" build that bench/ab_prepare.sh
# packed into .cache/ab. Run through the device tool with carry [".gl", ".cache/ab"]:
#   MODELS="qwen3-4b:Q4_0" ARGS="-p 35 -n 64 -r 1" bash bench/profile_h200.sh
# Writes $OUT/profile-<shape>-<quant>.txt. The timestamps add a few microseconds per dispatch, so the
# roles' shares are what to read, not the token rate. PROFILE=--profile-pipelines: a row per pipeline
# (each matrix shape apart: a prefill's q, o, gate|up and down GEMMs) instead of per role.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/ab_unpack.sh  # $A: the packed builds, unpacked
MODELS=${MODELS:-"qwen3-4b:Q4_0"}
ARGS=${ARGS:-"-p 35 -n 64 -r 1"}
mkdir -p "${OUT:-/tmp}"
for m in $MODELS; do
  shape=${m%%:*} quant=${m##*:}
  f=$(ab_model "$m")
  # shellcheck disable=SC2086  # ARGS is a word list on purpose
  "$A/new/ztvm" bench -m "$f" $ARGS "${PROFILE:---profile}" > "${OUT:-/tmp}/profile-$shape-$quant.txt" 2>&1 || true
done
