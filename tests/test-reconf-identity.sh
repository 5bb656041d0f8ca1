#!/bin/sh
# A reconf after which an NVMe VF would come back as another device to
# its guest: the subsystem NQN changed under svff (a firmware update, a
# configuration by hand), on the NVMe PF with the stand-in for its admin
# queue, told the new NQN through SVFF_TEST_NVME_STANDIN_NQN. A guest's
# multipath head takes a controller back only with the same NQN, NSID
# and namespace identifiers, so the reconf must not report the VF as
# handed back: it fails naming the NQN it found and the one recorded,
# and svffctl prints that. A VF of no domain has no head to re-join: the
# reconf takes the device's identity for it. Then status shows the
# change as drift. An init of the count the PF has refuses the same.
. "$(dirname "$0")/reconf-lib.sh"

DOMAINS="vm1"
define $DOMAINS
PF=0000:00:04.0
SVFF_TEST_NVME_STANDIN_NQN="$T/nqn"
export SVFF_TEST_NVME_STANDIN_NQN
start_pcisim nvme
svff_conf ", \"policies\": { \"disks\": { \"match\": { \"address\": \"$PF\" },
        \"nvme\": { \"vq\": 2, \"vi\": 1, \"namespace\": [1, 2] } } }"
start_connected
ctl init $PF 2 >"$T/out" 2>&1 || fail "init: $(cat "$T/out")"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1)
nqn_of() { ctl list --json | jget "[v for p in d['pfs'] for v in p['vfs'] if v['address'] == '$1'][0]['class']['state']['subnqn']"; }
expect_eq "$(nqn_of "$VF0")" "nqn.2019-08.org.qemu:svffnvme0" "VF 0's recorded subsystem NQN, as the device gives it"

note "a reconf with nothing assigned takes the device's identity"
echo "nqn.2019-08.org.qemu:renamed" >"$T/nqn"
ctl reconf $PF 2 --cycle >"$T/out" 2>&1 || fail "reconf with no assignment: $(cat "$T/out")"
expect_eq "$(nqn_of "$VF0")" "nqn.2019-08.org.qemu:renamed" "VF 0's recorded NQN after a reconf with no domain"

note "a reconf whose VF would come back to its domain as another device"
ctl attach "$VF0" vm1 --guest-address 05:00.0 >"$T/out" 2>&1 || fail "attach VF0: $(cat "$T/out")"
echo "nqn.2019-08.org.qemu:third" >"$T/nqn"
if ctl reconf $PF 2 --cycle >"$T/out" 2>&1; then
        fail "the reconf succeeded though VF 0's subsystem NQN changed under its domain: $(cat "$T/out")"
fi
grep -qF "VF 0 of PF $PF: the controller nvme0's subsystem NQN is now 'nqn.2019-08.org.qemu:third', recorded 'nqn.2019-08.org.qemu:renamed': a guest's NVMe multipath head takes a controller back only with the same subsystem NQN, NSID and namespace identifiers" "$T/out" ||
        fail "svffctl does not print the reason: $(cat "$T/out")"
cat "$T/out" >&2
expect_eq "$(store_py "print(d['assignments']['$VF0']['state'])")" held "VF 0's assignment after the reconf"
ctl_status >"$T/status" 2>&1 || fail "status: $(cat "$T/status")"
grep -qF "VF $VF0 (nvme class) is not what svffd set up: VF 0 of PF $PF: the controller nvme0's subsystem NQN is now 'nqn.2019-08.org.qemu:third'" "$T/status" ||
        fail "status does not show the change as drift: $(cat "$T/status")"

note "what the message says to do: detach the VF and attach it again"
ctl detach "$VF0" >"$T/out" 2>&1 || fail "detach VF0: $(cat "$T/out")"
ctl attach "$VF0" vm1 --guest-address 05:00.0 >"$T/out" 2>&1 || fail "attach VF0 again: $(cat "$T/out")"
expect_eq "$(nqn_of "$VF0")" "nqn.2019-08.org.qemu:third" "VF 0's recorded NQN after it was attached again"
ctl_status >"$T/status" 2>&1 || fail "status: $(cat "$T/status")"
grep -q "class-drift" "$T/status" && fail "class drift after the VF was attached again: $(cat "$T/status")"

note "an init of the count the PF has keeps the assigned VF's identity as a reconf does"
# The init leaves a VF as recorded alone; one whose device changed under
# its domain is refused by name, not provisioned as the new device.
echo "nqn.2019-08.org.qemu:fourth" >"$T/nqn"
if ctl init $PF 2 >"$T/out" 2>&1; then
        fail "the init gave VF 0 to its domain as another device: $(cat "$T/out")"
fi
grep -qF "subsystem NQN is now 'nqn.2019-08.org.qemu:fourth', recorded 'nqn.2019-08.org.qemu:third'" "$T/out" ||
        fail "svffctl does not print why the init was refused: $(cat "$T/out")"
grep -qF "PF $PF keeps its 2 VFs, and the init bound none of them to vfio-pci" "$T/out" ||
        fail "svffctl does not say the init left the VFs where they were: $(cat "$T/out")"
expect_eq "$(nqn_of "$VF0")" "nqn.2019-08.org.qemu:third" "VF 0's recorded NQN after the refused init"
expect_eq "$(store_py "print(d['assignments']['$VF0']['state'])")" attached "VF 0's assignment after the refused init"
expect_eq "$(sys_driver "$VF0")" vfio-pci "VF 0's driver after the refused init"
stop_svffd
check_xml
