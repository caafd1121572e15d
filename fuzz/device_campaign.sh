#!/usr/bin/env bash
# fuzz/campaign.sh on the GPU machine (16 cores, no clang there): the fuzz binaries packed here with
# their two shared libraries (.cache/fuzzpack/bin.tar.xz: strip build-asan/fuzz_* into bin/, add
# libpcre2-8.so.0 and libutf8proc.so.2), testdata/ decompressed as the build stages it. Brings back
# the table, each target's log tail and every crash / timeout / oom input (not the grown corpora).
#   fuzz/device_campaign.sh SECONDS OUT    (WORKERS as campaign.sh reads it)
set -uo pipefail
seconds=$1 out=$2
work=/tmp/fuzzwork
rm -rf "$work" && mkdir -p "$work"
tar xJf .cache/fuzzpack/bin.tar.xz -C "$work"
cp -r testdata "$work/testdata"
find "$work/testdata" -name '*.xz' | while read -r f; do
  xz -d "$f" 2>/dev/null || { python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$f" && rm "$f"; }
done
export LD_LIBRARY_PATH=$work/bin
bash fuzz/campaign.sh "$work/bin" "$work/testdata" "$work/campaign" "$seconds" | tee "$out/campaign.txt"
for d in "$work"/campaign/fuzz_*; do
  t=$(basename "$d")
  mkdir -p "$out/$t"
  tail -5 "$d/log.txt" > "$out/$t/log-tail.txt"
  find "$d" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) -exec cp {} "$out/$t/" \;
done
