#!/bin/sh
# The README's first command, run as a test on this build tree: every
# step prints, the VFs end up on vfio-pci, one goes back, and the demo
# cleans up after itself (no mount, no directory left). The scenario is
# SVFF_DEMO_SCENARIO (default qdma); tests/test-demo-SCENARIO.sh run the
# others the README lists, each with the counts its PF allows.
. "$(dirname "$0")/tour-lib.sh"
scenario=${SVFF_DEMO_SCENARIO:-qdma}

command -v jq >/dev/null || skip "jq is needed"
command -v python3 >/dev/null || skip "python3 is needed to read the scenario"
command -v virsh >/dev/null || skip "virsh (libvirt-clients) is not installed"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
# The demo runs libvirt's embedded QEMU driver inside svffd, which forks;
# GCC 12's ASan allocator deadlocks in such children, and TSan does not
# support them (see daemon-lib.sh).
if ldd "$top_builddir/daemon/svffd" 2>/dev/null | grep -q "lib[at]san"; then
        skip "svffd is built with a sanitizer, under which libvirt's embedded driver's forks deadlock; the demo runs on the plain build (distcheck)"
fi
case $scenario in
nvme|nic)
        grep -qs '^#define SVFF_FAULT_POINTS 1' "$top_builddir/config.h" ||
                skip "the $scenario scenario's device stand-in is in test builds only (--enable-fault-points); distcheck builds so" ;;
esac

# The demo works under TMPDIR: a private one shows exactly what it leaves.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/svff-demo-test.XXXXXX")
out="$tmp.out"
trap 'rm -rf "$tmp" "$out"' EXIT
mounts_before=$(grep -c "$tmp" /proc/self/mounts || true)

rc=0
TMPDIR="$tmp" SVFF_BUILDDIR="$top_builddir" sh "$top_srcdir/scripts/demo" "$scenario" > "$out" 2>&1 || rc=$?
if grep -q "cannot mount\|fusermount" "$out" && [ "$rc" -ne 0 ]; then
        skip "FUSE cannot be mounted here: $(tail -n 3 "$out")"
fi
[ "$rc" -eq 0 ] || fail "demo exited $rc: $(tail -n 30 "$out")"

# The PF the demo works on and the counts it picks: the first PF's
# limit, 8 -> 4 with 8 or more, else one below the limit -> the limit.
pf=$(python3 -c "import json,sys; print([d['address'] for d in json.load(open(sys.argv[1]))['devices'] if d.get('totalvfs')][0])" \
        "$top_srcdir/tests/pcisim/scenarios/$scenario.json")
total=$(python3 -c "import json,sys; print([d['totalvfs'] for d in json.load(open(sys.argv[1]))['devices'] if d.get('totalvfs')][0])" \
        "$top_srcdir/tests/pcisim/scenarios/$scenario.json")
if [ "$total" -ge 8 ]; then first=8 second=4; else first=$((total - 1)) second=$total; fi

for want in "== Simulated host: pcisim with scenario '$scenario'" "== Discovered SR-IOV physical functions" \
            "== Create $first VFs on $pf" "== Change the VF count $first -> $second" "== Daemon status" \
            "; svffd forgot it." "== Done" "survives: same VF index, guest address and alias" \
            "PF $pf has $second VFs on vfio-pci; 3 assignment(s) kept."; do
        grep -qF -- "$want" "$out" || fail "demo output lacks '$want': $(cat "$out")"
done
if [ "$scenario" = qdma ]; then
        for want in "VF 0000:01:00.4 attached to domain 'vm1'" "VF 0000:01:00.6 attached to domain 'vm3'" \
                    "vm1: VF 01:00.4 at guest 03:00.0, alias ua-svff-0000-01-00-4"; do
                grep -qF -- "$want" "$out" || fail "demo output lacks '$want': $(cat "$out")"
        done
        # list's row of an assigned VF: domain, guest address and state
        # (and its device class's state after them); the demo's domains
        # are not running, so the VF is in vm2's definition only.
        grep -qE '^0000:01:00\.5 +VF1 +vfio-pci .* vm2 +03:00\.0 +defined( |$)' "$out" ||
                fail "demo output lacks VF 0000:01:00.5's list row, assigned to vm2: $(cat "$out")"
fi
# Every scenario shows its PF's device class. The NVMe one, on the
# controller stand-in, attaches a namespace to each VM's VF; the NIC one,
# on the PF driver's stand-in, a MAC, a VLAN or trust. show reads the
# stand-in after the reconf, which started every VF from the driver's
# defaults again: each VF has its assignment's settings back. Each row
# (svffd's record) is seen after the attaches and after the reconf.
grep -qF -- "== The PF's device class, and what it can still give its VFs" "$out" ||
        fail "demo output lacks the show step: $(cat "$out")"
case $scenario in
nvme)
        for want in "(simulated: the NVMe PF's controller is svff's stand-in model" "  device class: nvme" \
                    "namespaces: 4 (NSID 1, 2, 3, 4); on VFs: none; on none: 1, 2, 3, 4" \
                    "namespaces: 4 (NSID 1, 2, 3, 4); on VFs: 1, 2, 3; on none: 4"; do
                grep -qF -- "$want" "$out" || fail "demo output lacks '$want': $(cat "$out")"
        done
        for i in 1 2 3; do
                grep -qE "^0000:00:04\.$i +VF$((i - 1)) +vfio-pci .* vm$i +03:00\.0 +defined +online ns $i$" "$out" ||
                        fail "demo output lacks VF $((i - 1))'s row with namespace $i: $(cat "$out")"
        done ;;
nic)
        for want in "(simulated: the NIC PF's driver behind rtnetlink is svff's stand-in" "  device class: nic" \
                    "VFs as read now: 6, 0 with a MAC, 0 on a VLAN, 0 trusted" \
                    "VFs as read now: 6, 3 with a MAC, 2 on a VLAN, 1 trusted" \
                    "VFs as read now: 7, 3 with a MAC, 2 on a VLAN, 1 trusted"; do
                grep -qF -- "$want" "$out" || fail "demo output lacks '$want': $(cat "$out")"
        done
        for row in '0000:03:10\.0 +VF0 .* vm1 +03:00\.0 +defined +mac \.\.:00:01 vlan 100' \
                   '0000:03:10\.4 +VF1 .* vm2 +03:00\.0 +defined +mac \.\.:00:02 vlan 100' \
                   '0000:03:11\.0 +VF2 .* vm3 +03:00\.0 +defined +mac \.\.:00:03 trust'; do
                [ "$(grep -cE "^$row\$" "$out")" = 2 ] ||
                        fail "demo output lacks the row '$row' after the attaches and after the reconf: $(cat "$out")"
        done ;;
qdma) grep -qF "  device class: qdma" "$out" || fail "demo output lacks the qdma class: $(cat "$out")" ;;
esac
[ "$(grep -c 'vfio-pci' "$out")" -ge "$first" ] || fail "the VFs are not shown on vfio-pci: $(cat "$out")"
grep -q "Error\|FAIL" "$out" && fail "demo printed an error: $(cat "$out")"

[ -z "$(ls -A "$tmp")" ] || fail "demo left something behind: $(ls -A "$tmp")"
[ "$(grep -c "$tmp" /proc/self/mounts || true)" = "$mounts_before" ] || fail "demo left a mount behind"
echo "PASS"
