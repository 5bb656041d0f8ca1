#!/bin/sh
# A VF's class state belongs to its assignment: no domain gets the disk of
# the one before. On pcisim's NVMe PF with the stand-in for its admin
# queue (SVFF_TEST_NVME_STANDIN, daemon-lib.sh: no real controller runs
# on the host; the VM tier's 08-nvme-class runs QEMU's) and a private
# libvirtd (virsh undefines a domain while svffd runs). Every check
# reads the stand-in's model as the device would answer it
# (SVFF_TEST_NVME_STANDIN_DUMP), not svff's records:
#   - detach, then attach to another domain (by VF, and from the pool
#     with --pf): the namespace went with the first assignment;
#   - an attach with another namespace: the old one is not left beside it;
#   - the first domain undefined: the next attach resets the VF;
#   - an attach that libvirt refuses, or a live one to a domain that is
#     shut off: its namespace does not stay;
#   - a VF lost under a paused assignment, its PF reconf'ed back, then
#     unpaused: the namespace is back on the same domain's VF.
SVFF_LIBVIRT=daemon
. "$(dirname "$0")/libvirt-embed-lib.sh"
# every message about a device carries its journal fields (log_fields_check)
SVFF_LOG_FIELDS=1; export SVFF_LOG_FIELDS

define vm1 vm2 vm3
PF=0000:00:04.0
DUMP="$T/standin"
mkdir -p "$DUMP"
SVFF_TEST_NVME_STANDIN_DUMP=$DUMP
export SVFF_TEST_NVME_STANDIN_DUMP
start_pcisim nvme
svff_conf ", \"policies\": { \"disks\": { \"match\": { \"address\": \"$PF\" }, \"nvme\": { \"vq\": 2, \"vi\": 1 } } }"
start_connected
ctl init $PF 2 >"$T/out" 2>&1 || fail "init: $(cat "$T/out")"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1)

# ns_of VF_INDEX: the namespaces the stand-in has attached to the VF's
# secondary controller (SCID = VF index + 1), as "1 3" or "".
ns_of() {
        awk -v c="$(($1 + 1))" '$1 == "ns" { for (i = 3; i <= NF; i++) if ($i == c) { sub(":", "", $2); printf "%s%s", s, $2; s = " " } }' \
                "$DUMP/$PF"
}
# online_of VF_INDEX: "online" or "offline".
online_of() { awk -v c="$(($1 + 1))" '$1 == "sc" && $2 == c { print $3 }' "$DUMP/$PF"; }
domain_of() { ctl list --json | jget "([v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == $1][0]['assigned_to'] or {}).get('domain')"; }

expect_eq "$(ns_of 1)" "" "VF 1's namespaces on the device after init"

# 1. attach with a namespace, detach, attach to another domain with none.
ctl attach "$VF1" vm1 --namespace 2 >"$T/out" 2>&1 || fail "attach $VF1 vm1 --namespace 2: $(cat "$T/out")"
expect_eq "$(ns_of 1)" "2" "VF 1's namespaces on the device in vm1"
ctl detach "$VF1" >"$T/out" 2>&1 || fail "detach $VF1: $(cat "$T/out")"
expect_eq "$(ns_of 1)" "" "VF 1's namespaces on the device after its detach from vm1"
expect_eq "$(online_of 1)" online "VF 1's secondary back in the pool"
ctl attach "$VF1" vm2 >"$T/out" 2>&1 || fail "attach $VF1 vm2: $(cat "$T/out")"
expect_eq "$(ns_of 1)" "" "VF 1's namespaces on the device in vm2 (vm1's disk must not follow)"
ctl detach "$VF1" >"$T/out" 2>&1 || fail "detach $VF1 from vm2: $(cat "$T/out")"
check_vfs "after the hand-over by VF"

# 2. the same from the pool: attach --pf takes the first free VF.
ctl attach "$VF0" vm1 --namespace 3 >"$T/out" 2>&1 || fail "attach $VF0 vm1 --namespace 3: $(cat "$T/out")"
ctl detach "$VF0" >"$T/out" 2>&1 || fail "detach $VF0: $(cat "$T/out")"
ctl attach --pf $PF vm2 >"$T/out" 2>&1 || fail "attach --pf $PF vm2: $(cat "$T/out")"
expect_eq "$(domain_of 0)" vm2 "the VF attach --pf took"
expect_eq "$(ns_of 0)" "" "VF 0's namespaces on the device in vm2 after attach --pf"
ctl detach "$VF0" >"$T/out" 2>&1 || fail "detach $VF0 from vm2: $(cat "$T/out")"

# 3. a new namespace replaces the old one, not beside it.
ctl attach "$VF1" vm1 --namespace 2 >"$T/out" 2>&1 || fail "attach --namespace 2: $(cat "$T/out")"
ctl detach "$VF1" >"$T/out" 2>&1 || fail "detach: $(cat "$T/out")"
ctl attach "$VF1" vm1 --namespace 3 >"$T/out" 2>&1 || fail "attach --namespace 3: $(cat "$T/out")"
expect_eq "$(ns_of 1)" "3" "VF 1's namespaces after an attach with namespace 3"
ctl detach "$VF1" >"$T/out" 2>&1 || fail "detach: $(cat "$T/out")"

# 4. the first domain undefined: its assignment is dropped without a
# detach, and the next tenant still gets a clean VF.
ctl attach "$VF1" vm3 --namespace 2 >"$T/out" 2>&1 || fail "attach $VF1 vm3: $(cat "$T/out")"
virsh_ undefine vm3 >/dev/null || fail "undefine vm3"
wait_for grep -q "VF $VF1 is back in the pool" "$T/svffd.log" || fail "svffd did not see vm3 undefined"
wait_for grep -q "VF $VF1 back in the pool: its assignment's class state released" "$T/svffd.log" ||
        fail "vm3's undefine did not release VF 1's class state"
expect_eq "$(ns_of 1)" "" "VF 1's namespaces once vm3 was undefined"
ctl attach "$VF1" vm2 >"$T/out" 2>&1 || fail "attach $VF1 vm2 after vm3's undefine: $(cat "$T/out")"
expect_eq "$(ns_of 1)" "" "VF 1's namespaces in vm2 after vm3 was undefined"
ctl detach "$VF1" >"$T/out" 2>&1 || fail "detach: $(cat "$T/out")"

# 5. an attach libvirt refuses (the guest address is taken): the class
# step it ran is undone, and nothing is recorded.
ctl attach "$VF0" vm1 --guest-address 00:05.0 >"$T/out" 2>&1 || fail "attach $VF0 at 00:05.0: $(cat "$T/out")"
rc=0
ctl attach "$VF1" vm1 --guest-address 00:05.0 --namespace 2 >"$T/out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "a second device at vm1's 00:05.0 was accepted: $(cat "$T/out")"
expect_eq "$(ns_of 1)" "" "VF 1's namespaces after the refused attach"
expect_eq "$(domain_of 1)" None "VF 1's assignment after the refused attach"
ctl detach "$VF0" >"$T/out" 2>&1 || fail "detach $VF0: $(cat "$T/out")"
# ...and a live attach to a domain that is shut off, refused before its
# class step runs
rc=0
ctl attach "$VF1" vm2 --live --namespace 2 >"$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "exit status of a live attach to vm2, shut off"
expect_eq "$(ns_of 1)" "" "VF 1's namespaces after the refused live attach"
expect_eq "$(domain_of 1)" None "VF 1's assignment after the refused live attach"
check_vfs "after the refused attach"

# 6. a VF lost under its paused assignment, its PF reconf'ed back, then
# unpaused as the drift says: the domain gets its namespace back, on its
# own VF. A reconf that cannot put a VF back leaves the assignment and
# drops the VF's record with the VF; svffd is stopped to leave the store
# and the PF in that state.
ctl attach "$VF1" vm1 --namespace 2 >"$T/out" 2>&1 || fail "attach for the pause: $(cat "$T/out")"
ctl pause "$VF1" >"$T/out" 2>&1 || fail "pause $VF1: $(cat "$T/out")"
stop_svffd || fail "svffd did not stop"
echo 0 > "$SYS/bus/pci/devices/$PF/sriov_numvfs" || fail "numvfs 0"
echo 1 > "$SYS/bus/pci/devices/$PF/sriov_numvfs" || fail "numvfs 1"
jq --arg vf "$VF1" 'del(.vfs[$vf])' "$STATE/store.json" >"$T/store.json" && mv "$T/store.json" "$STATE/store.json" ||
        fail "dropping VF 1's record"
start_connected
ctl_status >"$T/out" 2>&1
grep -q "svffctl unpause $VF1" "$T/out" || fail "status does not advise the unpause of the lost VF: $(cat "$T/out")"
ctl reconf $PF 2 >"$T/out" 2>&1 || fail "reconf $PF back to 2: $(cat "$T/out")"
expect_eq "$(ns_of 1)" "" "VF 1's namespaces after the reconf back (its record was gone)"
ctl unpause "$VF1" >"$T/out" 2>&1 || fail "unpause $VF1: $(cat "$T/out")"
expect_eq "$(ns_of 1)" "2" "VF 1's namespaces after the unpause"
expect_eq "$(domain_of 1)" vm1 "VF 1's domain after the unpause"
check_vfs "after the unpause"
log_fields_check
echo "PASS: test-libvirt-tenant"
