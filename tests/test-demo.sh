#!/bin/sh
# The README's first command, run as a test on this build tree: every
# step prints, the VFs end up on vfio-pci, one goes back, and the demo
# cleans up after itself (no mount, no directory left).
set -eu
: "${top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_srcdir:=$top_builddir}"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -x "$top_builddir/tests/pcisim/pcisim" ] || skip "pcisim not built"
[ -e /dev/fuse ] || skip "no /dev/fuse: pcisim cannot mount"
command -v python3 >/dev/null || skip "python3 is needed"

out=$(mktemp "${TMPDIR:-/tmp}/svff-demo-test.XXXXXX")
trap 'rm -f "$out"' EXIT
before=$(ls -d /tmp/svff-demo.* 2>/dev/null | sort || true)
mounts_before=$(grep -c svff-demo /proc/self/mounts || true)

rc=0
SVFF_BUILDDIR="$top_builddir" sh "$top_srcdir/scripts/demo" > "$out" 2>&1 || rc=$?
if grep -q "cannot mount\|fusermount" "$out" && [ "$rc" -ne 0 ]; then
        skip "FUSE cannot be mounted here: $(tail -n 3 "$out")"
fi
[ "$rc" -eq 0 ] || fail "demo exited $rc: $(tail -n 30 "$out")"

for want in "== Simulated host" "== Discovered SR-IOV physical functions" \
            "== Create 8 VFs on 0000:01:00.0" "== Daemon status" "is back on" "== Done"; do
        grep -qF -- "$want" "$out" || fail "demo output lacks '$want': $(cat "$out")"
done
[ "$(grep -c 'vfio-pci' "$out")" -ge 8 ] || fail "the VFs are not shown on vfio-pci: $(cat "$out")"
grep -q "Error\|FAIL" "$out" && fail "demo printed an error: $(cat "$out")"

after=$(ls -d /tmp/svff-demo.* 2>/dev/null | sort || true)
[ "$before" = "$after" ] || fail "demo left a directory behind: $after"
[ "$(grep -c svff-demo /proc/self/mounts || true)" = "$mounts_before" ] || fail "demo left a mount behind"
echo "PASS"
