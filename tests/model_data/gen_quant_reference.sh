#!/usr/bin/env bash
# Rebuilds quant_reference.gguf from llama.cpp's ggml. LLAMA_CPP: a llama.cpp checkout built with
# cmake into $LLAMA_CPP/build (the source ships inside npm node-llama-cpp@3.21.1, llama/gitRelease.bundle).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${LLAMA_CPP:?set LLAMA_CPP to a built llama.cpp checkout}"
g++ -std=c++17 -O1 -I "$LLAMA_CPP/ggml/include" "$here/gen_quant_reference.cpp" \
  -L "$LLAMA_CPP/build/bin" -lggml-base -Wl,-rpath,"$LLAMA_CPP/build/bin" -o /tmp/gen_quant_reference
/tmp/gen_quant_reference "$here/quant_reference.gguf"
