#!/usr/bin/env bash
# tools/shader-stats end to end on this machine's Vulkan device: ztvm writes Dawn's SPIR-V for every
# pipeline it builds (ZTVM_DUMP_SPIRV), and shader_stats rebuilds each one with the driver and prints
# a line per pipeline. lavapipe reports no statistics, so here this checks the dump, the assembler and
# the pipeline layouts; the H200's driver fills in the numbers (bench/README.md).
# Usage: shader_stats_test.sh ZTVM SHADER_STATS MODEL
set -euo pipefail
ztvm=$1 stats=$2 model=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ZTVM_DUMP_SPIRV=$dir "$ztvm" bench -m "$model" -p 70 -n 2 -r 1 --warmup 0 >/dev/null
n=$(wc -l < "$dir/index.tsv")
[ "$n" -ge 10 ] || { echo "FAIL: $n pipelines dumped, expected 10 or more"; exit 1; }
grep -q $'\tgemm\|\tmatvec' "$dir/index.tsv" || { echo "FAIL: no matvec or GEMM among the dumped pipelines"; exit 1; }
[ "$(ls "$dir"/*.spvasm | wc -l)" -eq "$n" ] || { echo "FAIL: index lists $n pipelines, files differ"; exit 1; }
out=$("$stats" "$dir")
lines=$(grep -c $'^[0-9]\\{3\\}\t' <<<"$out" || true)
[ "$lines" -eq "$n" ] || { echo "FAIL: $lines result lines for $n pipelines"; echo "$out"; exit 1; }
if grep -q ERROR <<<"$out"; then echo "FAIL:"; grep ERROR <<<"$out"; exit 1; fi
# A module that does not assemble is reported, not skipped.
echo "not spir-v" > "$dir/000.spvasm"
if "$stats" "$dir" > "$dir/bad.txt"; then echo "FAIL: a broken module passed"; exit 1; fi
grep -q $'^000\t.*ERROR' "$dir/bad.txt" || { echo "FAIL: the broken module is not named"; exit 1; }
echo "PASS: $n pipelines built by the driver ($(head -1 <<<"$out"))"
