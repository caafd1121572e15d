#!/usr/bin/env bash
# Fills .cache/bench with what bench/run_h200.sh needs on the H200 machine, which has no network
# and starts bare (see bench/README.md). Run here, after building ztvm:
#
#   bench/prepare.sh [BUILD_DIR]      (default: build)
#
# Then the lead runs bench/run_h200.sh there with carry [".gl", ".cache/bench"]. The carried paths
# must stay under 64 MiB in all: this script prints their size and fails above the limit.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
B=.cache/bench
SRC=.cache/llamacpp/src           # llama.cpp as shipped in npm node-llama-cpp (tools/llamacpp/build.sh pins it)
LIMIT=$(( 64 * 1024 * 1024 ))

[ -x "$BUILD/ztvm" ] || { echo "prepare: no $BUILD/ztvm: build it first (cmake --build $BUILD --target ztvm)" >&2; exit 1; }
[ -d .gl ] || { echo "prepare: no .gl/ (Vulkan loader debs): see ../shared/GPU_MACHINE.md" >&2; exit 1; }
mkdir -p "$B"
# Keep a carried llama-bench from an earlier run (bench/README.md), replace everything else.
find "$B" -mindepth 1 -maxdepth 1 ! -name llamacpp-bin -exec rm -rf {} +

# ztvm, Dawn beside it (rpath $ORIGIN), and libutf8proc, which Ubuntu 24.04 lacks. Symbols are
# stripped and the two big files gzipped to save carry space (run_h200.sh unpacks them); the dynamic
# symbol table that linking uses is kept.
strip -o "$B/ztvm" "$BUILD/ztvm"
strip --strip-unneeded -o "$B/libwebgpu_wrapper.so" "$BUILD/libwebgpu_wrapper.so"
xz -9e -T2 "$B/ztvm" "$B/libwebgpu_wrapper.so"  # xz, not gzip: 3 MB less, which the llama.cpp source needs
cp -L "$(ldd "$BUILD/ztvm" | awk '/libutf8proc.so.2/ {print $3}')" "$B/libutf8proc.so.2"
# cpp-httplib (ztvm serve) and the brotli libraries it links, which a bare Ubuntu may lack; the
# run scripts put $B on LD_LIBRARY_PATH because those are not ztvm's direct dependencies.
for lib in libcpp-httplib.so.0.11 libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" "$B/$lib"
done
xz -9e "$B/libutf8proc.so.2" "$B"/libcpp-httplib.so.* "$B"/libbrotli*.so.1
git rev-parse --short=12 HEAD > "$B/ztvm-commit.txt"
git diff --quiet HEAD -- src kernels CMakeLists.txt || sed -i 's/$/-dirty/' "$B/ztvm-commit.txt"

# The pinned llama.cpp source, if this checkout has none yet: build.sh's steps 1-2 (npm pack and the
# git bundle inside it; a fresh machine starts without .cache/).
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  nlc=$(sed -n 's/^NLC_VERSION=//p' tools/llamacpp/build.sh)
  mkdir -p .cache/llamacpp
  [ -f ".cache/llamacpp/node-llama-cpp-$nlc.tgz" ] || (cd .cache/llamacpp && npm pack --silent "node-llama-cpp@$nlc" >/dev/null)
  tmp=$(mktemp -d)
  tar xzf ".cache/llamacpp/node-llama-cpp-$nlc.tgz" -C "$tmp" package/llama/gitRelease.bundle
  rm -rf "$SRC" && git clone -q "$tmp/package/llama/gitRelease.bundle" "$SRC" && rm -rf "$tmp"
fi
want=$(sed -n 's/^LLAMA_COMMIT=//p' tools/llamacpp/build.sh)
[ "$(git -C "$SRC" rev-parse HEAD)" = "$want" ] || { echo "prepare: $SRC is not at $want (delete it to re-extract)" >&2; exit 1; }

# llama.cpp source without what a llama-bench build never reads (models, docs, tests, examples, web UI).
git -C "$SRC" rev-parse --short HEAD > "$B/llamacpp-commit.txt"
git -C "$SRC" archive --format=tar HEAD -- . ':!models' ':!docs' ':!media' ':!tools/ui' ':!tests' ':!benches' \
  ':!examples' ':!pocs' ':!.github' | xz -9 -T2 > "$B/llamacpp-src.tar.xz"

# The vocab files are not carried: run_h200.sh unpacks them from the tree's testdata/vocab/*.xz.
rm -rf "$B/vocab"

echo "ztvm $(cat "$B/ztvm-commit.txt"), llama.cpp $(cat "$B/llamacpp-commit.txt")"
echo "libraries ztvm needs (Ubuntu 24.04 has libpcre2-8, libstdc++, libc; Dawn and libutf8proc are carried):"
ldd "$BUILD/ztvm" | awk '{print "  " $1}'
du -ab .gl "$B" | sort -n | tail -12
# The device tool's limit covers the working tree (tracked files) and the carried paths together.
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
total=$(( $(du -cb .gl "$B" | tail -1 | cut -f1) + tree ))
if (( total > LIMIT )) && [ -f "$B/llamacpp-bin/llama-bench.gz" ]; then
  echo "prepare: over the limit with both a carried llama-bench and its source: dropping the source" \
       "(run_h200.sh cannot rebuild llama.cpp if the carried binary fails to run)" >&2
  rm "$B/llamacpp-src.tar.xz"
  total=$(( $(du -cb .gl "$B" | tail -1 | cut -f1) + tree ))
fi
awk -v t="$total" 'BEGIN { printf "carry [\".gl\", \".cache/bench\"] with the tree: %d bytes (%.1f MiB of 64)\n", t, t / 1048576 }'
if (( total > LIMIT )); then echo "prepare: over the 64 MiB carry limit" >&2; exit 1; fi
