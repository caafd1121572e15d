#!/usr/bin/env bash
# Writes llama.cpp's reference outputs for the stories260K GGUFs in
# testdata/stories260K into tests/fixtures/stories260K/:
#   ids.txt              the evaluated sequence: BOS + "Once upon a time"
#                        (llama.cpp's tokenizer) + the first 25 ids of the
#                        f32 greedy continuation = 30 ids
#   logits_TYPE.npy      float32 [30, 512]: logits at every position
#   greedy_TYPE.txt      64 greedy ids continuing BOS + "Once upon a time"
# and checks that the f32 greedy text reproduces llama2.c's
# expected_greedy_once_upon_64.txt (60 generated tokens).
#
# Usage: tools/llamacpp/make_stories_refs.sh   (after tools/llamacpp/build.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dump="$repo/.cache/llamacpp/bin/dump_logits"
data="$repo/testdata/stories260K"
out="$repo/tests/fixtures/stories260K"
prompt="Once upon a time"
mkdir -p "$out"

label() { sed -n "s/^$1: //p"; }  # one labelled line of dump_logits' stdout

# 1. The id sequence, from the f32 model: prompt ids + 25 greedy ids.
f32_run=$("$dump" -m "$data/stories260K-f32.gguf" --prompt "$prompt" --greedy 25 2>/dev/null)
prompt_ids=$(label ids <<<"$f32_run")
cont_ids=$(label greedy <<<"$f32_run")
echo "$prompt_ids $cont_ids" > "$out/ids.txt"
ids_csv=$(tr ' ' ',' < "$out/ids.txt")
echo "prompt ids: $prompt_ids"
echo "ids.txt:    $(cat "$out/ids.txt")"

# 2. Per weight type: logits of the sequence, and 64 greedy ids from the prompt.
for type in f32 Q8_0 Q4_0; do
    gguf="$data/stories260K-$type.gguf"
    "$dump" -m "$gguf" --ids "$ids_csv" -o "$out/logits_$type.npy" >/dev/null 2>&1
    "$dump" -m "$gguf" --prompt "$prompt" --greedy 64 2>/dev/null | label greedy > "$out/greedy_$type.txt"
    echo "greedy_$type: $(cat "$out/greedy_$type.txt")"
done

# 3. The f32 greedy text against llama2.c's run.c output. run.c's 64 steps
# count the 4 prompt tokens after BOS, so it generated 60 tokens.
text=$("$dump" -m "$data/stories260K-f32.gguf" --prompt "$prompt" --greedy 60 --text 2>/dev/null |
       sed -n '/^text: /,$p' | sed '1s/^text:  //')
expected=$(cat "$data/expected_greedy_once_upon_64.txt")
if [[ "$text" == "$expected" ]]; then
    echo "f32 greedy (60 tokens) == expected_greedy_once_upon_64.txt"
else
    echo "f32 greedy text differs from expected_greedy_once_upon_64.txt:" >&2
    diff <(echo "$expected") <(echo "$text") >&2 || true
    exit 1
fi
