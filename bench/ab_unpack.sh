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
