#!/usr/bin/env bash
# Fills .cache/ab for bench/ab_h200.sh with ztvm builds (stripped) and what they need on the H200:
#   bench/ab_prepare.sh OLD_BUILD_DIR NEW_BUILD_DIR [MORE_BUILD_DIRS...]
# The sides are named old, new, new2, new3, ... in argument order (a binary is ~2 MB of the carry).
# A build dir of another commit: `git worktree add /tmp/old <commit> && cmake -S /tmp/old -B build-old
# -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-old --target ztvm`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/ab_prepare.sh OLD_BUILD_DIR NEW_BUILD_DIR [MORE_BUILD_DIRS...]" >&2; exit 1; }
A=.cache/ab
LIMIT=$(( 64 * 1024 * 1024 ))
rm -rf "$A" && mkdir -p "$A"
n=0
for dir in "$@"; do
  n=$(( n + 1 ))
  case $n in 1) side=old ;; 2) side=new ;; *) side=new$(( n - 1 )) ;; esac
  [ -x "$dir/ztvm" ] || { echo "ab_prepare: no $dir/ztvm" >&2; exit 1; }
  mkdir -p "$A/$side"
  strip -o "$A/$side/ztvm" "$dir/ztvm"
  if [ -f "$dir/commit.txt" ]; then cp "$dir/commit.txt" "$A/$side-commit.txt"  # from ab_build.sh
  else git -C "$dir/.." rev-parse --short=12 HEAD > "$A/$side-commit.txt" 2>/dev/null || echo unknown > "$A/$side-commit.txt"; fi
  echo "$side" >> "$A/sides.txt"
done
# tools/shader-stats from the new build where it was built and SHADER_STATS=1 asks (bench/shader_stats_h200.sh).
[ -x "$2/shader_stats" ] && [ -n "${SHADER_STATS:-}" ] && strip -o "$A/shader_stats" "$2/shader_stats"
# Dawn and the shared libraries: from the new build (the old binary finds Dawn through LD_LIBRARY_PATH).
strip --strip-unneeded -o "$A/libwebgpu_wrapper.so" "$2/libwebgpu_wrapper.so"
cp -L "$(ldd "$2/ztvm" | awk '/libutf8proc.so.2/ {print $3}')" "$A/libutf8proc.so.2"
for lib in libcpp-httplib.so.0.11 libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" "$A/$lib"
done
# The vocab files travel in the tree (testdata/vocab/*.xz): ab_unpack.sh unpacks them there.
gzip -1 "$A"/*/ztvm "$A/libwebgpu_wrapper.so"  # ab_h200.sh unpacks them: four builds fit the carry
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
carry=$(du -cb "$A" .gl | tail -1 | cut -f1)
echo "carry [\".gl\", \".cache/ab\"]: $carry bytes; with the tree ($tree) $(( (tree + carry) / 1048576 )) MiB of 64"
[ $(( tree + carry )) -le $LIMIT ] || { echo "ab_prepare: over the 64 MiB limit" >&2; exit 1; }
