#!/usr/bin/env bash
# A long fuzz campaign: every target at once in libFuzzer's fork mode, for SECONDS, each with the
# workers given in WORKERS ("fuzz_gguf=2 fuzz_tokenize=4 ..."; 2 where not named). Crashes, timeouts
# and out-of-memory inputs are kept going past (-ignore_*) and saved under OUT/<target>/; new corpus
# entries go to OUT/<target>/corpus. Prints each target's executions and findings at the end.
#
#   fuzz/campaign.sh BIN_DIR TESTDATA_DIR OUT SECONDS
# BIN_DIR holds the fuzz_* binaries (build-asan/); TESTDATA_DIR the staged data (build-asan/testdata).
set -uo pipefail
bin=$1 data=$2 out=$3 seconds=$4
here=$(cd "$(dirname "$0")" && pwd)
declare -A workers
for w in ${WORKERS:-}; do workers[${w%%=*}]=${w#*=}; done
mkdir -p "$out"
pids=()
for exe in "$bin"/fuzz_*; do
  t=$(basename "$exe")
  mkdir -p "$out/$t/corpus"
  ZTVM_TESTDATA=$data ASAN_OPTIONS=detect_leaks=1 "$exe" -fork="${workers[$t]:-2}" -ignore_crashes=1 \
    -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 -timeout=10 \
    -artifact_prefix="$out/$t/" "$out/$t/corpus" "$here/corpus/$t" > "$out/$t/log.txt" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"
printf '%-22s %14s %8s %8s %8s\n' target executions crashes timeouts ooms
for d in "$out"/fuzz_*; do
  t=$(basename "$d")
  # Fork mode's status lines: "#EXECS: cov: .. ft: .. corp: .. exec/s: .. oom/timeout/crash: O/T/C ..."
  last=$(grep -E '^#[0-9]+: ' "$d/log.txt" | tail -1)
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  otc=$(grep -oE 'oom/timeout/crash: [0-9]+/[0-9]+/[0-9]+' <<<"$last" | awk '{print $2}')
  printf '%-22s %14s %8s %8s %8s\n' "$t" "${execs:-?}" "$(cut -d/ -f3 <<<"$otc")" "$(cut -d/ -f2 <<<"$otc")" \
    "$(cut -d/ -f1 <<<"$otc")"
done
