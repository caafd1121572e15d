#!/usr/bin/env bash
# What each decode kernel role costs in the stream, on the H200: the "new" build that bench/ab_prepare.sh
# packed into .cache/ab runs `ztvm bench --profile` once per model for its decode roles and their
# dispatches per token, then the same bench with each role left out (`--knockout`, the output is then
# not the model's), with the full step measured before and after them to show drift. The time a role
# saves is its share of the step as the GPU overlaps it; --profile's timestamps serialise every
# dispatch and overstate short ones.
# H200:   device `run`, carry [".gl", ".cache/ab"], command `bash bench/knockout_h200.sh`
# Env:    MODELS ("shape:quant ..." for `ztvm synth`, or .gguf paths; default qwen3-4b:Q4_0), ARGS (bench arguments,
#         default "-p 35 -n 64 -r 3"; add "-d 4096" for long-context steps), MIN_DISPATCHES (roles with
#         fewer dispatches per token are not knocked out; default 2).
# Output: $OUT/knockout.log, one line per (model, role): dispatches, tok/s, us per token and per dispatch saved.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/ab_unpack.sh  # $A: the packed builds, unpacked
Z="$A/new/ztvm"
MODELS=${MODELS:-"qwen3-4b:Q4_0"}
ARGS=${ARGS:-"-p 35 -n 64 -r 3"}
MIN_DISPATCHES=${MIN_DISPATCHES:-2}
M=/tmp/ztvm-ab-models
LOG=${OUT:-/tmp}/knockout.log
mkdir -p "$M"
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
# shellcheck disable=SC2086  # ARGS is a word list on purpose
tps() { "$Z" bench -m "$1" $ARGS "${@:2}" 2>&1 | sed -nE 's/.*decode ([0-9.]+) tok\/s.*/\1/p' | head -1; }
say "build $(cat "$A/new-commit.txt") | bench: $ARGS"
for m in $MODELS; do
  shape=${m%%:*} quant=${m##*:}
  case "$shape" in qwen*) v=qwen2 ;; phi*) v=phi-3 ;; *) v=llama-bpe ;; esac
  f="$M/$shape-$quant.gguf"
  case "$m" in *.gguf) f=$m ;; *) [ -f "$f" ] || "$Z" synth --shape "$shape" --type "$quant" --vocab "$A/vocab/ggml-vocab-$v.gguf" -o "$f" >/dev/null ;; esac
  # The decode table of --profile: "role dispatches us/step share GB/s" rows after its header.
  # shellcheck disable=SC2086
  roles=$("$Z" bench -m "$f" $ARGS --profile 2>&1 | sed -n '/^decode, GPU time/,$p' |
          awk -v min="$MIN_DISPATCHES" 'NR > 2 && $1 != "total" && $2 >= min {print $1 ":" $2}')
  base=$(tps "$f")
  say "$m all: $base tok/s"
  for rd in $roles; do
    role=${rd%%:*} n=${rd##*:}
    t=$(tps "$f" --knockout "$role")
    say "$m $role: $n dispatches, $t tok/s, $(awk -v b="$base" -v t="$t" -v n="$n" \
        'BEGIN { s = 1e6 / b - 1e6 / t; printf "%.0f us per token saved, %.1f per dispatch", s, s / n }')"
  done
  say "$m all (again): $(tps "$f") tok/s"
done
