#!/usr/bin/env bash
# The guard itself: in a made-up layout (a checkout, a build folder beside it, a sibling and a
# hidden folder beside it), reads of the sibling are recorded and nothing else is.
# Usage: open_guard_test.sh LIBOPEN_GUARD
set -euo pipefail
lib=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/work/repo/sub" "$t/work/repo-build" "$t/work/shared" "$t/work/.cache"
for f in repo/sub/a repo-build/b shared/c .cache/d; do echo x > "$t/work/$f"; done
log=$t/log
run() { (cd "$t/work/repo/sub" && LD_PRELOAD=$lib ZTVM_OPEN_GUARD_ROOT="$t/work/repo:$t/work/repo-build" \
         ZTVM_OPEN_GUARD_LOG=$log "$@") >/dev/null; }
run cat a ../../repo-build/b ../../.cache/d /etc/hostname
[ ! -s "$log" ] || { echo "FAIL: allowed reads were recorded:"; cat "$log"; exit 1; }
run cat ../../shared/c
run ls "$t/work/shared"
run /usr/bin/test -e "$t/work/shared/missing" || true
run stat "$t/work/shared/c"
run python3 -c "open('$t/work/repo/../shared/c').read()"
n=$(grep -c "$t/work/shared" "$log" || true)
[ "$n" -ge 6 ] || { echo "FAIL: expected 6 or more sibling reads recorded, got $n:"; cat "$log"; exit 1; }
# With the list of what was beside the checkout before the tests, what they made there since is theirs.
: > "$log"
echo shared > "$t/siblings"
mkdir -p "$t/work/scratch" && echo x > "$t/work/scratch/e"
ZTVM_OPEN_GUARD_SIBLINGS=$t/siblings run cat ../../scratch/e
[ ! -s "$log" ] || { echo "FAIL: a folder made after the list was flagged:"; cat "$log"; exit 1; }
ZTVM_OPEN_GUARD_SIBLINGS=$t/siblings run cat ../../shared/c
grep -q "$t/work/shared/c" "$log" || { echo "FAIL: a listed sibling's read was not recorded"; exit 1; }
echo "ok: $n sibling reads recorded, none of the allowed ones; new folders beside the checkout allowed"

