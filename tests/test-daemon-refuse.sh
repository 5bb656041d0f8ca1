#!/bin/sh
# Operations that would destroy working VFs are refused before they touch
# anything: init with a driver that is not registered, with more VFs than
# the PF supports, or over assigned VFs (another count, another driver);
# each leaves the VFs as they were, and the error names the driver, the
# PF and what to do. A reload never re-applies a policy over an
# operator's init: the owner of the count shows in list and status.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
start_pcisim qdma
start_svffd

# all_on DRIVER N: the PF has N VFs, every one bound to DRIVER.
all_on() {
        [ "$(sys_numvfs $PF)" = "$2" ] || return 1
        i=0
        while [ $i -lt "$2" ]; do
                [ "$(sys_driver "$(sys_vf $PF $i)")" = "$1" ] || return 1
                i=$((i + 1))
        done
}

ctl init $PF 4 > "$T/out" || fail "init 4: $(cat "$T/out")"
all_on vfio-pci 4 || fail "init 4 did not give 4 VFs on vfio-pci"
VF0=$(sys_vf $PF 0)

# A driver that is not registered: refused before numvfs is written.
rc=0
ctl init $PF 2 --driver nosuchdrv > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init with an unknown driver"
grep -q "No PCI driver 'nosuchdrv' is registered" "$T/err" || fail "unknown driver message: $(cat "$T/err")"
grep -q "PF $PF" "$T/err" && grep -q "nothing was changed" "$T/err" && grep -q "modprobe nosuchdrv" "$T/err" ||
        fail "the message does not name the PF, or say what to do: $(cat "$T/err")"
all_on vfio-pci 4 || fail "init with an unknown driver destroyed the VFs: numvfs $(sys_numvfs $PF)"
ctl status --json | jget 'len(d["operations"]), len(d["drift"])' | grep -qx '0 0' ||
        fail "the refused init left an operation or drift: $(ctl status)"

# More VFs than the PF supports: refused, VFs kept.
rc=0
ctl init $PF 300 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init above totalvfs"
grep -q "supports at most 252 VFs" "$T/err" || fail "totalvfs message: $(cat "$T/err")"
all_on vfio-pci 4 || fail "init above totalvfs destroyed the VFs"
ctl status --json | jget 'len(d["operations"])' | grep -qx 0 || fail "an operation was left behind"

# A refusal of a well-formed request says why on stderr and exits 1;
# a malformed argument is a usage error (2) that names what is wrong.
# No policy matches the PF: nothing to hand its count to.
rc=0
ctl init --policy $PF > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init --policy without a policy"
grep -q "No policy with a VF count matches PF $PF" "$T/err" || fail "init --policy message: $(cat "$T/err")"
varlink_call io.svff.Init "{\"pf\": \"$PF\", \"policy\": true}" > "$T/out"
grep -q '"io.svff.NoPolicy"' "$T/out" && grep -q '"device": *"'$PF'"' "$T/out" && grep -q '"message"' "$T/out" ||
        fail "Init policy without a policy over varlink: $(cat "$T/out")"
# A driver name with a space: malformed.
rc=0
ctl init $PF 2 --driver "bad drv" > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 2 "init with a malformed driver name"
grep -q "'bad drv' is not a driver name" "$T/err" || fail "malformed driver message: $(cat "$T/err")"
all_on vfio-pci 4 || fail "a refused init changed the VFs"

# Assigned VFs (an assignment recorded while svffd was stopped, as a
# stand-in for an attach: no libvirt here): neither another count nor
# another driver, both of which would take the VF from its domain.
stop_svffd TERM || fail "svffd exit status"
store_assign "$VF0" 0000:05:00.0
start_svffd
rc=0
ctl init $PF 2 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init to another count over an assignment"
grep -q "svffctl reconf $PF 2" "$T/err" || fail "count over assignment: $(cat "$T/err")"
rc=0
ctl init $PF 4 --driver qdma-vf 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init to another driver over an assignment"
grep -q "must stay on vfio-pci" "$T/err" && grep -q "svffctl detach" "$T/err" ||
        fail "driver over assignment: $(cat "$T/err")"
all_on vfio-pci 4 || fail "a refused init over an assignment changed the VFs"

# The assigned VF unbound behind svffd's back: its domain cannot start
# with it; status names the domain and the init that binds it again.
printf '%s' "$VF0" > "$SYS/bus/pci/drivers/vfio-pci/unbind"
seen_unbound() { ctl_status > "$T/status" && grep -q driver-changed "$T/status"; }
wait_for seen_unbound || fail "no drift after the unbind: $(cat "$T/status")"
grep -q "^  $PF: driver-changed: 1 VF of domain 'vm1' unbound (expected vfio-pci): the domain cannot start with it$" \
        "$T/status" || fail "the drift does not name the domain: $(cat "$T/status")"
grep -q "^  $PF: next step: run 'svffctl init $PF 4' to bind it to vfio-pci again\.$" "$T/status" ||
        fail "the drift's next step: $(cat "$T/status")"
expect_eq "$(ctl status --json | jget '[(x["domain"], x["next_step"]) for x in d["drift"] if x["kind"] == "driver-changed"]')" \
        "[('vm1', \"run 'svffctl init $PF 4' to bind it to vfio-pci again\")]" "the drift's domain and next step in JSON"
ctl init $PF 4 > /dev/null || fail "the init status advises"
rc=0; ctl status --quiet || rc=$?
expect_eq "$rc" 0 "status after the advised init"

echo "PASS"
