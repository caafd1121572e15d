#!/usr/bin/env bash
# Builds ztvm at each given commit and packs them for bench/ab_h200.sh (through ab_prepare.sh):
#   bench/ab_build.sh 4e28790 ad763a8 HEAD      (sides old, new, new2, ... in that order)
# One worktree and build folder under /tmp/ztvm-ab are reused, so each commit after the first is an
# incremental build (a minute or two here); each side's binary and Dawn library are kept in
# /tmp/ztvm-ab/<commit>/ with the commit's name for the log.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/ab_build.sh OLD_COMMIT NEW_COMMIT [MORE_COMMITS...]" >&2; exit 1; }
W=/tmp/ztvm-ab
[ -d "$W/src/.git" ] || [ -f "$W/src/.git" ] || { git worktree prune; git worktree add -f --detach "$W/src" HEAD >/dev/null; }
mkdir -p "$W/src/third_party/dawn"
cp third_party/dawn/libwebgpu_wrapper.so "$W/src/third_party/dawn/"
dirs=()
for c in "$@"; do
  sha=$(git rev-parse --short=12 "$c")
  git -C "$W/src" checkout -q --detach "$sha"
  cmake -S "$W/src" -B "$W/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  echo "ab_build: $c ($sha)"
  cmake --build "$W/build" --target ztvm -j"$(nproc)" >/dev/null
  mkdir -p "$W/$sha"
  cp "$W/build/ztvm" "$W/build/libwebgpu_wrapper.so" "$W/$sha/"
  if cmake --build "$W/build" --target shader_stats -j"$(nproc)" >/dev/null 2>&1; then cp "$W/build/shader_stats" "$W/$sha/"; fi
  echo "$sha" > "$W/$sha/commit.txt"
  dirs+=("$W/$sha")
done
bash bench/ab_prepare.sh "${dirs[@]}"
