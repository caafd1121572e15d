#!/usr/bin/env bash
# Steps 2-3 of the fixture pipeline (see tools/llamacpp/README.md):
#   2. `ztvm convert` turns each Hugging Face fixture directory into GGUFs of
#      several weight types, taking the 512-token vocab from stories260K;
#   3. llama.cpp (tools/llamacpp/bin/dump_logits) computes its logits and greedy
#      continuation for each GGUF, on the ids that make_fixtures.py chose.
#
# Usage: tools/make_gguf_fixtures.sh ZTVM_BINARY [MODELS_DIR] [OUT_DIR]
#   MODELS_DIR  HF fixture dirs from tools/make_fixtures.py (default tests/fixtures/models)
#   OUT_DIR     default tests/fixtures/gguf; per model NAME it writes
#                 OUT_DIR/NAME/NAME-TYPE.gguf
#                 OUT_DIR/NAME/llamacpp_logits_TYPE.npy    float32 [n_ids, 512]
#                 OUT_DIR/NAME/llamacpp_greedy24_TYPE.txt  24 greedy ids
#   TYPES=...   env override of the weight types (default "F32 F16 Q8_0 Q4_0 Q4_K")
#   KEEP_GGUF=0 env: delete each GGUF after llama.cpp has read it (keeps only refs)
#   CONVERT_ONLY=1 env: convert and record digests only (where llama.cpp is not built: this machine)
#   ZTVM_BINARY "-": convert nothing, evaluate the GGUFs a CONVERT_ONLY run left in OUT_DIR (the GPU
#     machine, which runs llama.cpp but not ztvm: tools/llamacpp/device_refs.sh)
#
# Needs tools/llamacpp/build.sh to have been run. Not part of CI.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    sed -n '2,20p' "$0" >&2
    exit 2
fi
ztvm=$1
[[ "$ztvm" == - ]] || ztvm=$(realpath "$1")
convert_only=${CONVERT_ONLY:-0}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
models=${2:-$repo/tests/fixtures/models}
out=${3:-$repo/tests/fixtures/gguf}
types=${TYPES:-F32 F16 Q8_0 Q4_0 Q4_K}
keep=${KEEP_GGUF:-1}
vocab="$repo/testdata/stories260K/stories260K-f32.gguf"
dump="$repo/.cache/llamacpp/bin/dump_logits"

[[ "$ztvm" == - || -x "$ztvm" ]] || { echo "make_gguf_fixtures: $ztvm is not an executable" >&2; exit 1; }
[[ "$convert_only" == 1 || -x "$dump" ]] || { echo "make_gguf_fixtures: $dump missing: run tools/llamacpp/build.sh" >&2; exit 1; }
[[ "$ztvm" == - || -f "$vocab" ]] || { echo "make_gguf_fixtures: vocab source $vocab missing" >&2; exit 1; }
[[ -d "$models" ]] || { echo "make_gguf_fixtures: models dir $models missing" >&2; exit 1; }

n_done=0
for model_dir in "$models"/*/; do
    model_dir=${model_dir%/}
    name=$(basename "$model_dir")
    if [[ ! -f "$model_dir/config.json" || ! -f "$model_dir/ids.txt" ]]; then
        echo "skip $name: no config.json or ids.txt"
        continue
    fi
    ids=$(tr -s ' \n' ',' < "$model_dir/ids.txt" | sed 's/^,//; s/,$//')
    mkdir -p "$out/$name"
    for type in $types; do
        gguf="$out/$name/$name-$type.gguf"
        if [[ "$ztvm" != - ]]; then
            "$ztvm" convert "$model_dir" -o "$gguf" --type "$type" --vocab "$vocab" --name "ztvm-fixture"
            # Tests convert again and compare against this digest before trusting the references.
            sha256sum "$gguf" | cut -d' ' -f1 > "$out/$name/$name-$type.sha256"
        fi
        [[ "$convert_only" == 1 ]] && { n_done=$((n_done + 1)); continue; }
        # One thread, F32 KV cache, no BOS added: see dump_logits.cpp.
        "$dump" -m "$gguf" --ids "$ids" -o "$out/$name/llamacpp_logits_$type.npy" --greedy 24 \
            > "$out/$name/dump_$type.log"
        sed -n 's/^greedy: //p' "$out/$name/dump_$type.log" > "$out/$name/llamacpp_greedy24_$type.txt"
        rm "$out/$name/dump_$type.log"
        [[ "$keep" == 1 ]] || rm "$gguf"
        echo "$name $type: $(cat "$out/$name/llamacpp_greedy24_$type.txt")"
        n_done=$((n_done + 1))
    done
done
echo "make_gguf_fixtures: $n_done GGUFs converted and evaluated by llama.cpp into $out"
