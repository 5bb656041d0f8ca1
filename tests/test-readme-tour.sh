#!/bin/sh
# The README's "five-minute tour", extracted from README.md and run as
# written (in bash, as an operator's shell would) on this build tree, in
# a private directory instead of /tmp/tour: every command succeeds, and
# the cleanup leaves no mount and no directory behind (it used to race:
# kill, then fusermount3 -u failed with EBUSY and rm walked into the
# live mount).
. "$(dirname "$0")/tour-lib.sh"
command -v bash >/dev/null || skip "bash is needed (the tour uses job control: kill %1)"
command -v fusermount3 >/dev/null || skip "fusermount3 (fuse3) is needed"

T=$(mktemp -d "${TMPDIR:-/tmp}/svff-tour-test.XXXXXX")
cleanup() {
        mountpoint -q "$T/tour/sys" 2>/dev/null && { fusermount3 -u "$T/tour/sys" || umount -l "$T/tour/sys"; }
        rm -rf "$T"
}
trap cleanup EXIT

# The first sh block after the heading, with this build and directory.
awk '/^## A five-minute tour/ { on = 1 } on && /^```sh/ { code = 1; next } code && /^```/ { exit } code' \
        "$top_srcdir/README.md" > "$T/tour.raw"
[ -s "$T/tour.raw" ] || fail "no tour found in README.md"
grep -q "fusermount3 -u" "$T/tour.raw" || fail "the tour does not unmount"
sed -e "s|^b=build;|b='$top_builddir';|" -e "s|/tmp/tour|$T/tour|g" "$T/tour.raw" > "$T/tour.sh"

rc=0
(cd "$top_srcdir" && timeout 120 bash -e "$T/tour.sh") > "$T/out" 2>&1 || rc=$?
if [ "$rc" != 0 ] && grep -q "fuse: device not found\|cannot mount" "$T/out"; then
        skip "FUSE cannot be mounted here: $(tail -n 3 "$T/out")"
fi
[ "$rc" = 0 ] || fail "the tour failed ($rc): $(tail -n 30 "$T/out")"
grep -q "valid, 1 policy: fpga" "$T/out" || fail "config check step: $(cat "$T/out")"
grep -q "^0000:01:00.0 *PF *qdma-pf *4/252 " "$T/out" || fail "the list after 'status --wait' does not show the policy's 4 VFs: $(cat "$T/out")"
grep -q "^    PF queues (qdma/qmax): " "$T/out" || fail "the show step does not show the qdma class: $(cat "$T/out")"
grep -q "^Release VF 0000:01:00.4 (VF 0 of PF 0000:01:00.0, which keeps its 8 VFs): re-probed" "$T/out" &&
grep -q "\[release\] undo what the PF's device class set up on VF 0, for the next owner" "$T/out" ||
        fail "the release's dry run does not print its plan: $(cat "$T/out")"
grep -q "driver-changed" "$T/out" || fail "the drift step shows no drift: $(cat "$T/out")"
grep -qx "exit 5" "$T/out" || fail "status's exit status with drift is not 5: $(cat "$T/out")"
[ ! -e "$T/tour" ] || fail "the tour left $T/tour behind: $(ls -la "$T/tour" 2>&1)"
grep -q "$T" /proc/self/mounts && fail "the tour left a mount behind"
echo PASS
