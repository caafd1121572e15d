#!/usr/bin/env bash
# Ours-alone A/B on the H200: two ztvm builds on the same `ztvm synth` files, interleaved, so a kernel
# change is measured against its baseline in one run (the "ours alone" entries of EXPERIMENTS.md).
# Not a comparison with llama.cpp: that is run_h200.sh.
#
# Here:   bench/ab_prepare.sh OLD_BUILD_DIR NEW_BUILD_DIR     (fills .cache/ab, prints the carry size)
# H200:   device `run`, carry [".gl", ".cache/ab"], command `bash bench/ab_h200.sh`
# Env:    MODELS ("shape:quant ..." for `ztvm synth`, or paths to .gguf files; default 1B Q4_0 and
#         4B Q4_K_M), ROUNDS (2), FIRST_ROUND (1; 2 for the second round of a run split over two calls),
#         BENCH ("-p 35 -n 128 -r 3"; several runs separated by ';'; comma lists, "-d 0,4096", run
#         their cases on one model load, a line each), AB_ENV_OLD / AB_ENV_NEW (env
#         assignments for each side, e.g. to try a knob on one binary). Sides past the second (new2, ...)
#         run after them in each round, with AB_ENV_NEW unless AB_ENV_<side> (AB_ENV_new2) is set.
#         AB_ARGS_<side> (AB_ARGS_new="--steps-per-submit 2"): bench arguments added for that side alone.
#         Even rounds run the sides in reverse order, so that over two rounds no side always runs first
#         or last (the GPU's state drifts over a run: clocks, temperature).
# Output: one line per (round, model, bench, side) on stdout and in $OUT/ab.log; a side whose tokens
#         differ from the first side measured on that model and bench is flagged "TOKENS DIFFER".
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/ab_unpack.sh  # $A: the packed builds, unpacked
MODELS=${MODELS:-"llama-3.2-1b:Q4_0 qwen3-4b:Q4_K_M"}
ROUNDS=${ROUNDS:-2}
FIRST_ROUND=${FIRST_ROUND:-1}
BENCH=${BENCH:-"-p 35 -n 128 -r 3"}
LOG=${OUT:-/tmp}/ab.log
M=/tmp/ztvm-ab-models
mkdir -p "$M"
[ "$FIRST_ROUND" -gt 1 ] || : > "$LOG"  # a later round in the same call appends to the first's log
say() { echo "$*" | tee -a "$LOG"; }
vocab_of() { case "$1" in qwen*) echo ggml-vocab-qwen2.gguf ;; phi*) echo ggml-vocab-phi-3.gguf ;; *) echo ggml-vocab-llama-bpe.gguf ;; esac; }
SIDES=$(cat "$A/sides.txt" 2>/dev/null || echo "old new")
say "$(for s in $SIDES; do printf '%s %s | ' "$s" "$(cat "$A/$s-commit.txt")"; done)rounds $ROUNDS | bench: $BENCH"
model_file() { case "$1" in *.gguf) echo "$1" ;; *) echo "$M/${1%%:*}-${1##*:}.gguf" ;; esac; }
for m in $MODELS; do
  case "$m" in *.gguf) continue ;; esac
  shape=${m%%:*} quant=${m##*:}
  "$A/new/ztvm" synth --shape "$shape" --type "$quant" --vocab "$A/vocab/$(vocab_of "$shape")" -o "$M/$shape-$quant.gguf" >/dev/null
done
IFS=';' read -ra RUNS <<< "$BENCH"
# case_lines ARGS < BENCH_OUTPUT: "LABEL<tab>RESULT<tab>FINGERPRINT" per case measured: the result and
# host lines joined, LABEL the bench arguments, or with several cases "-d D -p P -n G -r R" of each.
case_lines() {
  awk -v args="$1" '
    function flush() { if (res != "") print (multi ? label : args) "\t" res "\t" fp; res = ""; fp = "" }
    /^== case / { flush(); multi = 1; next }
    /^model .* \| prompt / {
      split($0, f, " \\| "); split(f[2], pd, " "); split(f[3], g, " "); split(f[4], rr, " ")
      d = pd[4]; sub(/\)$/, "", d)
      label = "-d " d " -p " pd[2] " -n " g[2] " -r " rr[2]
    }
    /^(TTFT|decode host|tokens)/ { res = res (res == "" ? "" : " ") $0 }
    /^tokens / { fp = $NF }
    END { flush() }'
}
declare -A REF_FP REF_SIDE  # per "model args": the first side's token fingerprint, and that side
for r in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
  ORDER=$SIDES
  [ $((r % 2)) -eq 0 ] && ORDER=$(tr ' ' '\n' <<< "$SIDES" | tac | paste -sd' ')
  for m in $MODELS; do
    f=$(model_file "$m")
    for args in "${RUNS[@]}"; do
      for side in $ORDER; do
        envs=${AB_ENV_NEW:-}; [ "$side" = old ] && envs=${AB_ENV_OLD:-}
        own="AB_ENV_$side"; [ -n "${!own:-}" ] && envs=${!own}  # AB_ENV_new2=... for that side alone
        more="AB_ARGS_$side"; more=${!more:-}  # bench arguments for that side alone
        # shellcheck disable=SC2086  # args, more and envs are word lists on purpose
        out=$(env $envs "$A/$side/ztvm" bench -m "$f" $args $more 2>&1) || true
        # A line per case: one, or a bench with comma lists (-d 0,4096) runs several on one model load,
        # each named by its own -d -p -n -r (case_lines, above).
        cases=$(case_lines "$args" <<< "$out")
        [ -n "$cases" ] || cases="$args"$'\t'"$(tail -1 <<< "$out")"$'\t'  # or the error line
        while IFS=$'\t' read -r label line fp; do
          # The first side measured on a (model, case) sets the tokens the others should match; a
          # difference is flagged, not fatal (a change in the order of sums can flip a near-tie).
          key="$m $label"
          if [ -n "$fp" ] && [ -z "${REF_FP[$key]:-}" ]; then REF_FP[$key]=$fp REF_SIDE[$key]=$side
          elif [ -n "$fp" ] && [ "${REF_FP[$key]}" != "$fp" ]; then line="$line | TOKENS DIFFER from ${REF_SIDE[$key]}"; fi
          say "r$r $m [$label] $side: $line"
        done <<< "$cases"
      done
    done
  done
done
