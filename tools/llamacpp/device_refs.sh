#!/usr/bin/env bash
# llama.cpp references made on the GPU machine (16 cores, g++ and cmake, no network): builds
# llama.cpp for the CPU from a carried source archive (tools/llamacpp/build.sh's steps 3-5), then
#   1. its logits and greedy continuations for GGUFs that `ztvm convert` wrote here beforehand
#      (tools/make_gguf_fixtures.sh with ZTVM=-: the .gguf files are already in OUT_GGUF/NAME/);
#   2. llama-quantize's per-tensor type choices for the mixes synth writes, from F16 synth GGUFs
#      (QUANT_IN/*.gguf -> OUT/quant_mix/<file>-<MIX>.types, "name type" a line, read back by gguf-py).
#
#   tools/llamacpp/device_refs.sh SRC_TAR_XZ OUT_GGUF QUANT_IN OUT
# SRC_TAR_XZ: `git archive` of the pinned llama.cpp commit (bench/prepare.sh makes one; the GPU
# backends may be left out). Run from the repository root.
set -euo pipefail
src_tar=$1 out_gguf=$2 quant_in=$3 out=$4
repo=$(pwd)
cache=$repo/.cache/llamacpp
mkdir -p "$cache/src" "$out"
tar xJf "$src_tar" -C "$cache/src"
# build.sh checks the commit of a git checkout; an archive carries none, so skip steps 1-2 there.
SKIP_SOURCE=1 bash tools/llamacpp/build.sh -j"$(nproc)" > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "llama.cpp built ($(ls "$cache/bin" | tr '\n' ' '))"

TYPES=${TYPES:?TYPES names the converted types} bash tools/make_gguf_fixtures.sh - tests/fixtures/models "$out_gguf"

mkdir -p "$out/quant_mix"
for f in "$quant_in"/*.gguf; do
  [[ -f "$f" ]] || continue
  for mix in ${MIXES:-Q5_K_M Q3_K_M IQ4_XS Q4_K_M}; do
    name=$(basename "$f" .gguf)
    "$cache/bin/llama-quantize" "$f" "/tmp/$name-$mix.gguf" "$mix" "$(nproc)" > "/tmp/$name-$mix.log" 2>&1 ||
      { tail -20 "/tmp/$name-$mix.log"; exit 1; }
    # Each tensor's name and type as gguf-py (llama.cpp's reader) sees them.
    python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
from gguf import GGUFReader
for t in GGUFReader(sys.argv[2]).tensors: print(t.name, t.tensor_type.name)' "$cache/src/gguf-py" "/tmp/$name-$mix.gguf" \
      > "$out/quant_mix/$name-$mix.types"
    echo "$name $mix: $(wc -l < "$out/quant_mix/$name-$mix.types") tensors"
    rm -f "/tmp/$name-$mix.gguf"
  done
done
