#!/usr/bin/env bash
# The H200 race, one command on the H200 machine, under 10 minutes (see bench/README.md):
#   1. builds llama.cpp's llama-bench with CUDA in the background (or uses one built before: below),
#   2. meanwhile writes the models with `ztvm synth` and runs a short solo check of ztvm on each,
#   3. then interleaved rounds A/B/A/B per model (ztvm bench, then llama-bench, same GGUF file),
#      the models in MODELS order in odd rounds and in reverse in even ones,
#   4. summarizes after every pair, so a run cut short still leaves its numbers in $OUT.
#
# Env: OUT (results folder; the device tool sets it), MODELS ("shape:quant ..."), ROUNDS (3),
# REPS (runs per measurement, 3), BUDGET_S (510: no step starts later), HARD_S (580: every step is
# killed by then), BENCH_DIR (.cache/bench), MODEL_DIR (/tmp/ztvm-models), SYNTH_THREADS (8),
# SKIP_GPU_ENV (set: do not unpack .gl/ into /, for a dry run on a machine that has Vulkan),
# REUSE_MODELS (set: models already in MODEL_DIR are not written again).
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
T0=$(date +%s)
OUT=${OUT:-$ROOT/out-h200}
B=${BENCH_DIR:-$ROOT/.cache/bench}
MODELS=${MODELS:-"llama-3.2-1b:Q4_0 llama-3.2-1b:Q4_K_M qwen3-4b:Q4_0 qwen3-4b:Q4_K_M"}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-3}
BUDGET_S=${BUDGET_S:-510}
HARD_S=${HARD_S:-580}
MODEL_DIR=${MODEL_DIR:-/tmp/ztvm-models}
SYNTH_THREADS=${SYNTH_THREADS:-8}
RAW=$OUT/raw
mkdir -p "$RAW" "$MODEL_DIR"
exec > >(tee -a "$OUT/run.log") 2>&1
# The vocab files travel in the tree (testdata/vocab/*.xz), not in the carry: unpacked here.
mkdir -p "$B/vocab"
for v in llama-bpe qwen2 phi-3 qwen35; do
  f="$ROOT/testdata/vocab/ggml-vocab-$v.gguf.xz" g="$B/vocab/ggml-vocab-$v.gguf"
  [ -s "$g" ] || xz -dc "$f" > "$g" 2>/dev/null ||
    python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$f" > "$g"
done

elapsed() { echo $(( $(date +%s) - T0 )); }
log() { printf '[%4ds] %s\n' "$(elapsed)" "$*"; }
meta() { printf '%s=%s\n' "$1" "$2" >> "$OUT/meta.env"; }  # KEY=VALUE lines read by summarize_h200.py

# step NAME LIMIT_S STDOUT_FILE|- CMD...: runs CMD under a timeout capped by HARD_S, unless the
# budget is spent; logs start, end, rc and seconds (also to steps.txt). CMD's stderr goes to
# raw/NAME.err (its tail is logged when CMD fails); stdout to the file, or the log. Returns CMD's rc.
step() {
  local name=$1 limit=$2 out=$3
  shift 3
  local now
  now=$(elapsed)
  if (( now >= BUDGET_S )); then
    log "SKIP $name: past the ${BUDGET_S}s budget"
    echo "$name skipped 0" >> "$OUT/steps.txt"
    return 125
  fi
  (( limit > HARD_S - now )) && limit=$(( HARD_S - now ))
  log "START $name (limit ${limit}s): $*"
  local s rc
  s=$(date +%s)
  if [ "$out" = - ]; then timeout -k 5 "$limit" "$@" 2> "$RAW/$name.err"; else timeout -k 5 "$limit" "$@" > "$out" 2> "$RAW/$name.err"; fi
  rc=$?
  log "END $name rc=$rc in $(( $(date +%s) - s ))s"
  if (( rc != 0 )); then tail -15 "$RAW/$name.err" | sed "s/^/    $name: /"; fi
  echo "$name $rc $(( $(date +%s) - s ))" >> "$OUT/steps.txt"
  return $rc
}

summarize() {
  timeout 30 python3 bench/summarize_h200.py --out "$OUT" >> "$OUT/summarize.log" 2>&1 \
    || log "summarize failed (see summarize.log)"
}

# --- machine, environment ---------------------------------------------------------------------
: > "$OUT/meta.env"
meta date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
meta ztvm_commit "$(cat "$B/ztvm-commit.txt" 2>/dev/null || echo unknown)"
meta llamacpp_commit "$(cat "$B/llamacpp-commit.txt" 2>/dev/null || echo unknown)"
meta models "$MODELS"
meta rounds "$ROUNDS"
meta reps "$REPS"
meta cpus "$(nproc)"
log "models: $MODELS | rounds $ROUNDS | reps $REPS | budget ${BUDGET_S}s | out $OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || log "nvidia-smi failed"
head -12 "$OUT/nvidia-smi.txt"
nvidia-smi -q > "$OUT/nvidia-smi-q-before.txt" 2>&1
meta gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
meta driver "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
meta clocks_max "$(nvidia-smi --query-gpu=clocks.max.sm,clocks.max.mem --format=csv,noheader | head -1)"
# A clock/power trace for the whole run: idle readings say nothing about clocks under load.
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv,noheader,nounits -lms 250 > "$OUT/smi_trace.csv" 2>/dev/null &
SMI_PID=$!

# shellcheck source=bench/gpu_env.sh
if [ -z "${SKIP_GPU_ENV:-}" ]; then source bench/gpu_env.sh || log "gpu_env.sh failed"; fi
ZTVM=$B/ztvm
for f in "$B/ztvm.gz" "$B/libwebgpu_wrapper.so.gz"; do [ -f "$f" ] && gunzip -f "$f"; done  # older packs
for f in "$B"/*.xz; do [ "$f" = "$B/llamacpp-src.tar.xz" ] || xz -df "$f"; done  # prepare.sh packs them
[ -f "$ZTVM" ] && chmod +x "$ZTVM"
export LD_LIBRARY_PATH="$PWD/$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x "$ZTVM" ] || log "ERROR: no ztvm binary at $ZTVM (run bench/prepare.sh before carrying .cache/bench)"
step ztvm_gpu 30 "$OUT/ztvm_gpu.txt" "$ZTVM" gpu || log "ztvm gpu failed: Vulkan/Dawn not usable?"

# --- llama.cpp: a carried binary, else build it in the background -------------------------------
LB=""
BUILD_PID=""
# The build's folder is in the working tree (ignored by git), which the device tool keeps between
# calls on a warm machine: `bash bench/build_llamacpp_cuda.sh` in a call of its own first gives this
# run its whole budget for rounds (bench/README.md).
LLAMACPP_WORK=${LLAMACPP_WORK:-$ROOT/.cache/llamacpp}
for cand in "$LLAMACPP_WORK/build/bin/llama-bench" "$B/llamacpp-bin/llama-bench" "$B/llamacpp-bin/llama-bench.gz"; do
  [ -f "$cand" ] || continue
  if [ "${cand%.gz}" != "$cand" ]; then gunzip -c "$cand" > /tmp/llama-bench && chmod +x /tmp/llama-bench && cand=/tmp/llama-bench; fi
  if "$cand" --help > /dev/null 2>&1; then LB=$cand; meta llamacpp_binary "built before this run"; log "using $cand, built before this run"; break; fi
  log "$cand does not run; building instead"
done
if [ -z "$LB" ]; then
  log "building llama.cpp (CUDA sm_90) in the background: $OUT/llamacpp_build.log"
  setsid bash bench/build_llamacpp_cuda.sh "$B/llamacpp-src.tar.xz" "$LLAMACPP_WORK" \
    > "$OUT/llamacpp_build.out" 2> "$OUT/llamacpp_build.log" &
  BUILD_PID=$!
  BUILD_T0=$(date +%s)
fi

# --- models -------------------------------------------------------------------------------------
# Qwen3.5/3.6: llama.cpp's qwen35 test vocabulary (Qwen2's 151,936 tokens, the qwen35 pre-tokenizer),
# padded by synth to the real 248,320 embedding rows as llama.cpp's converter pads a short one.
vocab_for() {
  case $1 in
    llama-3.2-1b) echo "$B/vocab/ggml-vocab-llama-bpe.gguf" ;;
    qwen3-4b | qwen3-30b-a3b) echo "$B/vocab/ggml-vocab-qwen2.gguf" ;;
    qwen3.5-4b | qwen3.6-35b-a3b) echo "$B/vocab/ggml-vocab-qwen35.gguf" ;;
    phi-3-mini | tiny) echo "$B/vocab/ggml-vocab-phi-3.gguf" ;;  # tiny: dry runs of this script
  esac
}
READY=""
for m in $MODELS; do
  shape=${m%%:*} quant=${m##*:} tag=${m/:/_}
  f=$MODEL_DIR/$tag.gguf
  # A 30B/35B MoE file is 17-21 GB: up to minutes of writing (30B: 10 s in a recorded run), not seconds.
  limit=150
  case $shape in *-a3b) limit=300 ;; esac  # qwen3-30b-a3b, qwen3.6-35b-a3b
  if [ -n "${REUSE_MODELS:-}" ] && [ -s "$f" ]; then  # written by an earlier call on this warm machine
    log "reusing $f"
    READY="$READY $m"
    meta "model.$tag.bytes" "$(stat -c %s "$f")"
  elif step "synth_$tag" "$limit" - "$ZTVM" synth --shape "$shape" --type "$quant" --vocab "$(vocab_for "$shape")" \
       -o "$f" --threads "$SYNTH_THREADS"; then
    READY="$READY $m"
    meta "model.$tag.bytes" "$(stat -c %s "$f")"
  else
    log "no model $tag: it is left out of the rounds"
  fi
done
meta models_ready "${READY# }"

# A solo ztvm run per model while llama.cpp compiles (catches failures early; the CPU is busy
# compiling, so these numbers are not paired and not used for ratios).
# Files past ONE_LOAD_BYTES skip it: their load alone is most of a minute, and their first round shows the same.
for m in $READY; do
  tag=${m/:/_}
  (( $(stat -c %s "$MODEL_DIR/$tag.gguf") > ${ONE_LOAD_BYTES:-8000000000} )) && continue
  step "solo_$tag" 60 - "$ZTVM" bench -m "$MODEL_DIR/$tag.gguf" -p 35 -n 128 -r 1 --json "$RAW/solo_${tag}.json"
done

# --- wait for the build ---------------------------------------------------------------------------
if [ -n "$BUILD_PID" ]; then
  while kill -0 "$BUILD_PID" 2>/dev/null && (( $(elapsed) < BUDGET_S )); do sleep 2; done
  if kill -0 "$BUILD_PID" 2>/dev/null; then
    log "llama.cpp build not done at the budget: stopping it; this run has no llama.cpp numbers"
    kill -- -"$BUILD_PID" 2>/dev/null
    meta llamacpp_binary "build unfinished"
  elif wait "$BUILD_PID"; then
    LB=$(tail -1 "$OUT/llamacpp_build.out")
    meta llamacpp_binary "built"
    meta llamacpp_build_s "$(( $(date +%s) - BUILD_T0 ))"
    log "llama-bench: $LB (built in $(( $(date +%s) - BUILD_T0 ))s)"
  else
    log "llama.cpp build FAILED; tail of its log:"
    tail -20 "$OUT/llamacpp_build.log"
    meta llamacpp_binary "build failed"
  fi
fi
summarize

# --- interleaved rounds: A (ztvm) then B (llama.cpp), per model, R times -------------------------
LB_FLAGS="-fa 1 -ngl 99 -r $REPS -o json"
ONE_LOAD_BYTES=${ONE_LOAD_BYTES:-8000000000}  # files above this run ztvm's four cases in one load
# Warm-up on both sides, so that neither is measured while the GPU clocks up from idle (it idles during
# each model load): ztvm bench runs unmeasured passes for >= 500 ms (--warmup-ms); llama-bench's first
# test is a pp4096 that is not reported (0.4-1.1 s with its own warm-up run), before pp32/512/1024.
meta ours_flags "bench -p 35 -n 128 | -p 512 -n 1 | -p 1024 -n 1 | -d 4096 -p 35 -n 128; -r $REPS --warmup 1 --warmup-ms 500"
meta llamacpp_flags "-p 4096,32,512,1024 -n 128 $LB_FLAGS (pp4096 as warm-up, not reported) | -p 0 -n 128 -d 4096 $LB_FLAGS"
# Even rounds take the models in reverse: no file always runs first after llama.cpp's build, and when
# the budget ends a round early the file it cuts is not always the last one (which lost its second
# round on 2026-12-04 while the first had two).
for r in $(seq 1 "$ROUNDS"); do
  order=$READY
  (( r % 2 == 0 )) && order=$(printf '%s\n' $READY | tac | tr '\n' ' ')
  for m in $order; do
    tag=${m/:/_} f=$MODEL_DIR/${m/:/_}.gguf p=$RAW/${tag}_r$r
    (( $(elapsed) >= BUDGET_S )) && break 2
    log "=== round $r/$ROUNDS $m ==="
    if (( $(stat -c %s "$f") > ONE_LOAD_BYTES )); then
      # A file this big takes ~50 s to load (Qwen3-30B-A3B, 18.6 GB): the four cases in one load, each
      # with its own warm-up as in separate runs, split into the files the summary reads.
      step "ours_${tag}_r${r}_all" 300 - "$ZTVM" bench -m "$f" --case 0:35:128 --case 0:512:1 --case 0:1024:1 \
        --case 4096:35:128 -r "$REPS" --json "${p}_ours_all.json"
      python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
for c, row in zip(["p35", "p512", "p1024", "d4096"], r): json.dump(row, open(sys.argv[2] + "_ours_" + c + ".json", "w"), indent=2)' \
        "${p}_ours_all.json" "$p" 2>/dev/null || log "ours_${tag}_r${r}_all: no results to split"
    else
      step "ours_${tag}_r${r}_p35" 90 - "$ZTVM" bench -m "$f" -p 35 -n 128 -r "$REPS" --json "${p}_ours_p35.json"
      step "ours_${tag}_r${r}_p512" 60 - "$ZTVM" bench -m "$f" -p 512 -n 1 -r "$REPS" --json "${p}_ours_p512.json"
      step "ours_${tag}_r${r}_p1024" 60 - "$ZTVM" bench -m "$f" -p 1024 -n 1 -r "$REPS" --json "${p}_ours_p1024.json"
      step "ours_${tag}_r${r}_d4096" 90 - "$ZTVM" bench -m "$f" -d 4096 -p 35 -n 128 -r "$REPS" --json "${p}_ours_d4096.json"
    fi
    if [ -n "$LB" ]; then
      # shellcheck disable=SC2086
      step "llamacpp_${tag}_r${r}" 120 "${p}_llamacpp.json" "$LB" -m "$f" -p 4096,32,512,1024 -n 128 $LB_FLAGS
      # -p 0: only tg128 at depth 4096 (the default -p 512 would add a pp512 @ d4096 test).
      # shellcheck disable=SC2086
      step "llamacpp_${tag}_r${r}_d4096" 120 "${p}_llamacpp_d4096.json" "$LB" -m "$f" -p 0 -n 128 -d 4096 $LB_FLAGS
    fi
    summarize
  done
done
(( $(elapsed) >= BUDGET_S )) && log "budget of ${BUDGET_S}s reached: later rounds were not started"

# --- wrap up ------------------------------------------------------------------------------------
kill "$SMI_PID" 2>/dev/null
nvidia-smi -q > "$OUT/nvidia-smi-q-after.txt" 2>&1
summarize
python3 bench/render_bench.py --results "$OUT" --out "$OUT/BENCH.md" >> "$OUT/summarize.log" 2>&1 || log "render failed"
log "done in $(elapsed)s; results: $OUT/h200-latest.json, $OUT/BENCH.md, raw runs in $RAW"
sleep 1  # let tee flush run.log
