#!/usr/bin/env bash
# Builds llama.cpp for the CPU as an outside reference for tests and fixtures,
# plus our own tools/llamacpp/dump_logits.cpp linked against it.
#
# The llama.cpp source comes from the npm package node-llama-cpp (pinned), which
# ships the whole llama.cpp tree as a git bundle (package/llama/gitRelease.bundle)
# at a fixed commit. npm is the only registry that carries it here.
#
# Everything lands under <repo>/.cache/llamacpp (git-ignored):
#   node-llama-cpp-<ver>.tgz   the npm tarball
#   src/                       llama.cpp source, cloned from the bundle
#   build/                     CMake build (shared libs in build/bin)
#   bin/                       llama-quantize, llama-perplexity (links), dump_logits
#
# Idempotent: each step is skipped when its output is already there.
# A dev tool, not part of CI. Usage: tools/llamacpp/build.sh [-jN] (default -j2).
set -euo pipefail

NLC_VERSION=3.21.1
LLAMA_COMMIT=80fb11ac73e66d89eae2c6a91d8a77428fa733ed
JOBS=${1:--j2}

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache="$repo/.cache/llamacpp"
src="$cache/src"
build="$cache/build"
bin="$cache/bin"
mkdir -p "$cache" "$bin"

# SKIP_SOURCE=1: the source is already in $src, unpacked from a `git archive` of LLAMA_COMMIT (the GPU
# machine has no npm and the archive no git history): steps 1-2 and the commit check are skipped.
if [[ "${SKIP_SOURCE:-0}" != 1 ]]; then
    # 1. npm tarball (npm pack only downloads; it runs no install scripts).
    tgz="$cache/node-llama-cpp-$NLC_VERSION.tgz"
    if [[ ! -f "$tgz" ]]; then
        (cd "$cache" && npm pack "node-llama-cpp@$NLC_VERSION" >/dev/null)
    fi

    # 2. llama.cpp source from the git bundle inside the tarball.
    if [[ ! -f "$src/CMakeLists.txt" ]]; then
        tmp=$(mktemp -d)
        tar xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle
        rm -rf "$src"
        git clone -q "$tmp/package/llama/gitRelease.bundle" "$src"
        rm -rf "$tmp"
    fi
    actual=$(git -C "$src" rev-parse HEAD)
    if [[ "$actual" != "$LLAMA_COMMIT" ]]; then
        echo "build.sh: $src is at $actual, expected $LLAMA_COMMIT (delete it to re-extract)" >&2
        exit 1
    fi
fi
# 3. Configure. No -march=native: a native build died with "Illegal instruction"
# on this machine type (the build host and the run host can differ), so pin a
# conservative x86-64 set: AVX2 + FMA + F16C + BMI2, nothing AVX-512.
if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$src" -B "$build" \
        -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=ON \
        -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
        -DGGML_AVX512=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF \
        -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF
fi

# 4. Build only what we use: libllama (+ ggml), and the two tools.
cmake --build "$build" "$JOBS" --target llama llama-quantize llama-perplexity
for tool in llama-quantize llama-perplexity; do
    ln -sf "$build/bin/$tool" "$bin/$tool"
done

# 5. Our dump_logits, linked against the shared libllama with an rpath into the build.
out="$bin/dump_logits"
if [[ ! -x "$out" || "$here/dump_logits.cpp" -nt "$out" || "$build/bin/libllama.so" -nt "$out" ]]; then
    g++ -std=c++17 -O2 -Wall -Wextra -Werror \
        -I "$src/include" -I "$src/ggml/include" \
        "$here/dump_logits.cpp" -o "$out" \
        -L "$build/bin" -lllama -lggml -lggml-base \
        -Wl,-rpath,"$build/bin"
fi
echo "llama.cpp $LLAMA_COMMIT built: $bin"
ls "$bin"
