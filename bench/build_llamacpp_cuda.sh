#!/usr/bin/env bash
# Builds llama.cpp's llama-bench with CUDA for the H200 (sm_90) from the source tarball we carry
# (bench/prepare.sh makes it), on the H200 machine: Ubuntu 24.04, CUDA 13, no network.
# It took 342 s there with 16 jobs.
#
#   bench/build_llamacpp_cuda.sh [TARBALL] [WORKDIR]
#
# Prints the path of the llama-bench binary on its last line of stdout; logs go to stderr.
# Env: JOBS (default: all cores).
set -euo pipefail

TARBALL=${1:-.cache/bench/llamacpp-src.tar.xz}
WORK=${2:-/tmp/llamacpp}
JOBS=${JOBS:-$(nproc)}
log() { echo "[build_llamacpp $(date +%T)] $*" >&2; }

[ -f "$TARBALL" ] || { log "no source tarball at $TARBALL (run bench/prepare.sh here first)"; exit 1; }
COMMIT=unknown
[ -f "$(dirname "$TARBALL")/llamacpp-commit.txt" ] && COMMIT=$(cat "$(dirname "$TARBALL")/llamacpp-commit.txt")

# nvcc is not always on PATH on a bare CUDA install.
if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13*/bin; do [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break; done
fi
command -v nvcc >/dev/null 2>&1 || { log "nvcc not found"; exit 1; }
log "nvcc: $(nvcc --version | tail -1); cmake: $(cmake --version | head -1); $JOBS jobs; commit $COMMIT"

rm -rf "$WORK" && mkdir -p "$WORK/src"
tar xJf "$TARBALL" -C "$WORK/src"
log "extracted $(du -sh "$WORK/src" | cut -f1) to $WORK/src"

# CUDA for sm_90 only; NCCL off (it defaults on and looks for NCCL); nothing but the library and
# tools configured; no OpenSSL/UI downloads (no network there). GGML_NATIVE off keeps the binary
# portable to another H200 host (the CPU side does not matter with every layer on the GPU).
# Static libraries make llama-bench one file that can be carried to a later session.
start=$(date +%s)
cmake -S "$WORK/src" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_NCCL=OFF -DGGML_NATIVE=OFF \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_COMMIT="$COMMIT" >"$WORK/configure.log" 2>&1 || { tail -30 "$WORK/configure.log" >&2; log "configure failed"; exit 1; }
log "configured in $(( $(date +%s) - start )) s"
cmake --build "$WORK/build" --target llama-bench -j "$JOBS" >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log" >&2; log "build failed"; exit 1; }
BIN="$WORK/build/bin/llama-bench"
[ -x "$BIN" ] || { log "no binary at $BIN"; exit 1; }
log "built $BIN ($(du -h "$BIN" | cut -f1)) in $(( $(date +%s) - start )) s"
echo "$BIN"
