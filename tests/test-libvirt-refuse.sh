#!/bin/sh
# Refusals of well-formed requests, with libvirt's QEMU driver: each is
# an io.svff error the interface declares, with the device or domain and
# a message that svffctl prints, and exits 1 (a refusal), not 2 (a usage
# error): a live attach to a domain that is shut off, NIC settings for a
# VF without a device class, an unpause of a VF that is not paused, a
# pause of one that is not attached. Nothing is changed by any of them.
# A reconf to the count the PF has is a no-op that says so (no domain
# definition or store record touched), unless --cycle asks for the full
# cycle.
. "$(dirname "$0")/libvirt-embed-lib.sh"

define vm1
PF=0000:01:00.0
NIC=0000:03:00.0
start_pcisim_qdma_nic
svff_conf
start_connected
ctl init $PF 2 >"$T/out" 2>&1 || fail "init: $(cat "$T/out")"
ctl init $NIC 2 >"$T/out" 2>&1 || fail "init NIC: $(cat "$T/out")"
VF0=$(sys_vf $PF 0); N0=$(sys_vf $NIC 0)
asg="[v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == 0][0]['assigned_to']"
nasg="[v for p in d['pfs'] if p['address'] == '$NIC' for v in p['vfs'] if v['index'] == 0][0]['assigned_to']"

# refused WHAT CMD...: svffctl CMD exits 1 (a refusal), its message on
# stderr ($T/err), not left to svffd's log.
refused() {
        _what=$1
        shift
        _rc=0
        ctl "$@" >"$T/out" 2>"$T/err" || _rc=$?
        expect_eq "$_rc" 1 "exit status of $_what"
        grep -q "debug log" "$T/err" && fail "$_what: the reason is left to the log: $(cat "$T/err")"
        return 0
}
# vl_error ERROR WHAT: the varlink reply in $T/vl is ERROR with a message.
vl_error() {
        grep -q "\"$1\"" "$T/vl" && grep -q '"message"' "$T/vl" || fail "$2 over varlink: $(cat "$T/vl")"
}

note "attach --live to a domain that is shut off"
refused "attach --live" attach "$VF0" vm1 --live
grep -q "Domain 'vm1' is not running: a live attach needs a running domain" "$T/err" ||
        fail "attach --live message: $(cat "$T/err")"
varlink_call io.svff.Attach "{\"vf\": \"$VF0\", \"domain\": \"vm1\", \"live\": true}" >"$T/vl"
vl_error io.svff.DomainNotRunning "attach --live"
grep -q '"domain": *"vm1"' "$T/vl" || fail "DomainNotRunning does not name the domain: $(cat "$T/vl")"
expect_eq "$(ctl list --json | jget "$asg")" None "VF 0's assignment after the refusal"

note "NIC settings for a VF without a device class"
refused "attach --mac --vlan" attach "$N0" vm1 --mac 52:54:00:12:34:56 --vlan 100
grep -q "VF $N0 has no device class" "$T/err" || fail "attach --mac message: $(cat "$T/err")"
varlink_call io.svff.Attach "{\"vf\": \"$N0\", \"domain\": \"vm1\", \"class\": {\"mac\": \"52:54:00:12:34:56\"}}" >"$T/vl"
vl_error io.svff.NoDeviceClass "attach with class settings"
grep -q "\"device\": *\"$N0\"" "$T/vl" || fail "NoDeviceClass does not name the VF: $(cat "$T/vl")"
expect_eq "$(ctl list --json | jget "$nasg")" None "the NIC VF's assignment after the refusal"

note "unpause of an attached VF, pause of a paused one"
ctl attach "$VF0" vm1 >"$T/out" 2>&1 || fail "attach: $(cat "$T/out")"
refused "unpause of an attached VF" unpause "$VF0"
grep -q "VF $VF0 is attached, not held: there is nothing to unpause" "$T/err" ||
        fail "unpause message: $(cat "$T/err")"
varlink_call io.svff.Unpause "{\"vf\": \"$VF0\"}" >"$T/vl"
vl_error io.svff.NotPaused "unpause of an attached VF"
expect_eq "$(ctl list --json | jget "$asg['state']")" attached "state after the refused unpause"
ctl pause "$VF0" >"$T/out" 2>&1 || fail "pause: $(cat "$T/out")"
refused "pause of a paused VF" pause "$VF0"
grep -q "VF $VF0 is held, not attached: there is nothing to pause" "$T/err" ||
        fail "pause message: $(cat "$T/err")"
varlink_call io.svff.Pause "{\"vf\": \"$VF0\"}" >"$T/vl"
vl_error io.svff.NotAttached "pause of a paused VF"
ctl unpause "$VF0" >"$T/out" 2>&1 || fail "unpause: $(cat "$T/out")"
check_vfs "after the refusals"

note "reconf to the count the PF has: nothing to do"
stop_svffd || fail "svffd exit status"
virsh_ dumpxml --inactive vm1 >"$T/before.xml" || fail "dumpxml vm1"
grep -q "ua-svff" "$T/before.xml" || fail "vm1 does not have the VF: $(cat "$T/before.xml")"
gen=$(jget 'd["generation"]' <"$STATE/store.json")
start_connected
# Its dry run says the same, and plans no cycle.
ctl reconf $PF 2 --dry-run >"$T/out" 2>"$T/err" || fail "reconf --dry-run to the same count: $(cat "$T/out" "$T/err")"
expect_eq "$(cat "$T/out")" "PF $PF: already 2 VFs; nothing to do (--cycle takes them through 0 anyway)" \
        "reconf --dry-run to the same count"
ctl reconf $PF 2 --dry-run --json >"$T/out" || fail "reconf --dry-run --json to the same count"
expect_eq "$(jget '(d["dry_run"], d["executable"], d["steps"], "plan" in d)' <"$T/out")" "(True, True, [], False)" \
        "reconf --dry-run --json to the same count"
ctl reconf $PF 2 --dry-run --cycle >"$T/out" 2>"$T/err" || fail "reconf --dry-run --cycle: $(cat "$T/out" "$T/err")"
grep -q "nothing to do" "$T/out" && fail "reconf --dry-run --cycle plans nothing: $(cat "$T/out")"
ctl reconf $PF 2 >"$T/out" 2>"$T/err" || fail "reconf to the same count: $(cat "$T/out" "$T/err")"
grep -q "already 2 VFs; nothing to do" "$T/out" || fail "reconf to the same count: $(cat "$T/out")"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after the no-op reconf"
expect_eq "$(jget 'd["generation"]' <"$STATE/store.json")" "$gen" "store generation after the no-op reconf"
stop_svffd || fail "svffd exit status"
virsh_ dumpxml --inactive vm1 >"$T/after.xml" || fail "dumpxml vm1"
cmp -s "$T/before.xml" "$T/after.xml" || fail "the no-op reconf changed vm1: $(diff "$T/before.xml" "$T/after.xml")"

note "reconf --cycle: the full cycle at the same count"
start_connected
ctl reconf $PF 2 --cycle >"$T/out" 2>"$T/err" || fail "reconf --cycle: $(cat "$T/out" "$T/err")"
grep -q "nothing to do" "$T/out" && fail "reconf --cycle did nothing: $(cat "$T/out")"
[ "$(jget 'd["generation"]' <"$STATE/store.json")" -gt "$gen" ] || fail "reconf --cycle recorded nothing"
expect_eq "$(ctl list --json | jget "$asg['state']")" attached "state after reconf --cycle"
check_vfs "after reconf --cycle"
stop_svffd || fail "svffd exit status"

echo "PASS"
