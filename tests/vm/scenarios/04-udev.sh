# Real udev: systemd-udevd runs in the guest and svffd (sysfs_root /sys)
# listens to it. A policy for the NVMe PF asks for 2 VFs on vfio-pci: svffd
# applies it at start-up; the PF (its VFs off first) is then removed and
# the bus rescanned, and on the real remove and add events svffd
# re-creates the VFs and rebinds them by policy. 'svffctl monitor --json'
# shows pf-removed, then pf-added.

command -v jq >/dev/null || vm_fail "no jq (scripts/setup-deps installs it)"
udevd=/lib/systemd/systemd-udevd
[ -x "$udevd" ] || vm_fail "no $udevd (package udev)"
modprobe nvme
modprobe vfio-pci
pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
P=/sys/bus/pci/devices/$pf
vm_wait 10 test -e "$P/driver" || vm_fail "PF $pf did not bind nvme"

"$udevd" --daemon || vm_fail "systemd-udevd --daemon failed"
vm_cleanup 'udevadm control --exit 2>/dev/null'
udevadm trigger --subsystem-match=pci --action=add
udevadm settle --timeout=30 || vm_fail "udevadm settle timed out"
assert_exists /run/udev/control
vm_log "systemd-udevd running"

# debug: svffd names its uevent source ("udev" when udevd runs).
vm_svffd_start "{ \"log_level\": \"debug\", \"settle_msec\": 200,
  \"policies\": { \"nvme\": { \"match\": { \"address\": \"$pf\" },
                              \"numvfs\": 2, \"vf_driver\": \"vfio-pci\" } } }"
assert_true "svffd listens to udevd, not the bare kernel" \
        grep -q "Watching PCI uevents from udev\." "$SVFF_VM_RUNDIR/svffd.log"

# by_policy: svffd shows the PF with 2 VFs, both on vfio-pci, as sysfs does.
by_policy() {
        svffctl list --json >"$SVFF_VM_RUNDIR/list.json" 2>/dev/null || return 1
        [ "$(jq -r --arg a "$pf" '.pfs[] | select(.address == $a) |
                "\(.numvfs) \(.policy) \([.vfs[].driver] | join(","))"' "$SVFF_VM_RUNDIR/list.json")" = \
          "2 nvme vfio-pci,vfio-pci" ] &&
        [ "$(cat "$P/sriov_numvfs")" = 2 ] &&
        [ "$(basename "$(readlink "$P/virtfn0/driver")")" = vfio-pci ] &&
        [ "$(basename "$(readlink "$P/virtfn1/driver")")" = vfio-pci ]
}
vm_wait 30 by_policy || vm_fail "policy not applied at start-up: $(cat "$SVFF_VM_RUNDIR/list.json")"
assert_true "start-up: 2 VFs on vfio-pci by policy 'nvme'" by_policy

svffctl monitor --json >"$SVFF_VM_RUNDIR/monitor.json" 2>"$SVFF_VM_RUNDIR/monitor.err" &
monitor_pid=$!
vm_cleanup 'kill "$monitor_pid" 2>/dev/null'
vm_wait 10 grep -q subscribed "$SVFF_VM_RUNDIR/monitor.json" || vm_fail "svffctl monitor did not subscribe"

# VFs off, then remove the PF. Removing the PF alone leaves its VFs behind
# on this kernel (nvme keeps SR-IOV enabled on remove, and a VF has no
# 'remove'): they keep the VF addresses, and after the rescan every
# numvfs write fails ENOENT ("kobject_add_internal failed for
# 0000:00:03.1 with -EEXIST").
t=$(vm_now)
echo 0 >"$P/sriov_numvfs"
echo 1 >"$P/remove"
assert_missing "$P"
# event NAME: the monitor printed the event NAME for the PF.
event() {
        jq -e -s --arg e "$1" --arg a "$pf" \
                'any(.[]; .event == $e and .pf == $a)' \
                "$SVFF_VM_RUNDIR/monitor.json" >/dev/null 2>&1
}
vm_wait 20 event pf-removed || vm_fail "no pf-removed for $pf: $(cat "$SVFF_VM_RUNDIR/monitor.json")"
assert_true "monitor: pf-removed for $pf" event pf-removed
absent=$(svffctl list --json | jq -r '[.absent[]?.address] | join(",")')
assert_eq "list --json: PF absent" "$pf" "$absent"

echo 1 >/sys/bus/pci/rescan
vm_wait 10 test -e "$P/sriov_totalvfs" || vm_fail "PF $pf did not come back on rescan"
vm_wait 40 by_policy || vm_fail "VFs not re-created by policy after rescan: $(cat "$SVFF_VM_RUNDIR/list.json")"
vm_log "remove + rescan -> 2 VFs on vfio-pci again: $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
assert_true "after rescan: 2 VFs on vfio-pci by policy 'nvme'" by_policy
assert_true "monitor: pf-added for $pf" event pf-added
assert_eq "monitor: pf-removed before pf-added" "pf-removed pf-added" \
        "$(jq -r -s --arg a "$pf" '[.[] | .event as $e |
                select(($e == "pf-removed" or $e == "pf-added") and .pf == $a) | $e] |
                join(" ")' "$SVFF_VM_RUNDIR/monitor.json")"
for i in 0 1; do
        g=$(basename "$(readlink "$P/virtfn$i/iommu_group")")
        assert_true "VF $i /dev/vfio/$g is a character device" test -c "/dev/vfio/$g"
done
kill "$monitor_pid" 2>/dev/null || true
