# Sourced from the repository root by ab_h200.sh, profile_h200.sh and knockout_h200.sh: the Vulkan
# loader on the H200 (elsewhere, in a dry run here, whatever Vulkan is installed), and the builds that
# ab_prepare.sh packed into .cache/ab ($A) unpacked, with Dawn and the other libraries on the path.
[ -d /usr/local/nvidia ] && source bench/gpu_env.sh
# Unpacked into a copy, so that a dry run here leaves .cache/ab packed (unpacked, it outgrows the carry).
A=/tmp/ztvm-ab-unpacked
rm -rf "$A" && cp -r .cache/ab "$A"
export LD_LIBRARY_PATH=$A
for f in "$A"/*/ztvm.gz "$A/libwebgpu_wrapper.so.gz"; do [ -f "$f" ] && gunzip -f "$f"; done
chmod +x "$A"/*/ztvm 2>/dev/null || true
mkdir -p "$A/vocab"
for f in testdata/vocab/*.gguf.xz; do
  v="$A/vocab/$(basename "${f%.xz}")"
  xz -dc "$f" > "$v" 2>/dev/null || python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$f" > "$v"
done

# ab_model SHAPE:QUANT: the path of that `ztvm synth` file in /tmp/ztvm-ab-models, written first if
# missing (by the new build); a path ending in .gguf is taken as it is.
ab_model() {
  case "$1" in *.gguf) echo "$1"; return ;; esac
  local shape=${1%%:*} quant=${1##*:} v
  case "$shape" in qwen*) v=qwen2 ;; phi*) v=phi-3 ;; *) v=llama-bpe ;; esac
  mkdir -p /tmp/ztvm-ab-models
  local f="/tmp/ztvm-ab-models/$shape-$quant.gguf"
  [ -f "$f" ] || "$A/new/ztvm" synth --shape "$shape" --type "$quant" --vocab "$A/vocab/ggml-vocab-$v.gguf" -o "$f" >/dev/null 2>&1
  echo "$f"
}
