#!/usr/bin/env bash
# The floor under a decode step on the H200: `ztvm gpu --read-chain` over the sizes a step's dispatches
# read (Q4_0 files: 18 bytes a 32-weight unit, the LM head Q6_K), beside `ztvm bench` of the same
# shapes in the same call, so the step's time can be read against a chain of plain reads of its bytes.
# Run through the device tool with carry [".gl", ".cache/ab"] (bench/ab_prepare.sh packs the "new" build):
#   bash bench/read_chain_h200.sh     (writes $OUT/read-chain.txt)
# Sizes in MB, per layer: qkv, attention (its cache: ~100 positions, or 4,131 at 4k), o, gate|up, down;
# at 4k also rope_kv (Qwen3) and attention_combine as one-workgroup dispatches; then the LM head and
# the argmax. Llama-3.2-1B: 16 layers, 2,048 wide, 8 KV heads of 64, FFN 8,192, vocab 128,256.
# Qwen3-4B: 36 layers, 2,560 wide, 32 query and 8 KV heads of 128, FFN 9,728, vocab 151,936.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/ab_unpack.sh  # $A: the packed builds, unpacked
Z="$A/new/ztvm"
R="${OUT:-/tmp}/read-chain.txt"
: > "$R"
run() { echo "== $*" >> "$R"; "$@" >> "$R" 2>&1 || echo "(exit $?)" >> "$R"; }
run "$Z" gpu --peak
run "$Z" gpu --read-chain "256x0"                                             # a dispatch's own cost
run "$Z" gpu --read-chain "16x[3.54,0.2,2.36,18.87,9.44]+215.5+0"            # 1B Q4_0, short
run "$Z" gpu --read-chain "16x[3.54,8.46,0,2.36,18.87,9.44]+215.5+0"         # 1B Q4_0, 4k
run "$Z" gpu --read-chain "36x[8.85,0.41,5.9,28.02,14.01]+319.06+0"          # 4B Q4_0, short
run "$Z" gpu --read-chain "36x[8.85,0,16.92,0,5.9,28.02,14.01]+319.06+0"     # 4B Q4_0, 4k
for m in ${MODELS-llama-3.2-1b:Q4_0 qwen3-4b:Q4_0}; do  # MODELS= : the chains only
  f=$(ab_model "$m")
  run "$Z" bench -m "$f" -p 35 -n 64 -r 3
  run "$Z" bench -m "$f" -d 4096 -p 35 -n 64 -r 3
done
