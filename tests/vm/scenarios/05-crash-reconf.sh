# Crash mid-reconf: svffd, built with fault points, SIGKILLs itself at
# FAULT during a live 'reconf PF 4' with 4 VFs assigned to 4 running
# domains. Restarted, it resumes or rolls back from its journal: every
# assignment is back, attached, at the same guest address (query-pci in
# every domain), the VFs on vfio-pci. Then a re-attach fails (fault
# injected): the domain is named, its VF stays paused and unpause brings
# it back.
#
# Skips until svffctl has 'reconf'. 'tests/vm/run ... 05-crash-reconf.sh
# setup-only' runs the part before it (domains and assignments) anyway.

# The fault point: after numvfs 0 was written, with every VF gone.
FAULT=after-numvfs-0

if ! vm_have_reconf && [ "${1:-}" != setup-only ]; then
        vm_skip "reconf is not in this build ('svffctl reconf --help' fails)"
fi
if ! "$(vm_svff_bin svffd)" --version | grep -q '^+FAULT-POINTS$' && [ "${1:-}" != setup-only ]; then
        vm_skip "svffd is built without fault points (configure --enable-fault-points; scripts/check does)"
fi
vm_assigned_setup 4
before=$(vm_places)
echo "$before"
! echo "$before" | grep -q ' $' || vm_fail "a VF is missing from its domain's query-pci"
[ "${1:-}" != setup-only ] || vm_skip "setup only"

# reconf_at FAULT OUT: restarts svffd with the fault point FAULT armed
# (SVFF_FAULT) and runs 'reconf PF 4': output in OUT (and shown), exit
# status in $rc.
reconf_at() {
        vm_svffd_stop
        export SVFF_FAULT="$1"
        vm_svffd_start
        unset SVFF_FAULT
        vm_log "reconf $pf 4, fault point $1"
        rc=0
        svffctl reconf "$pf" 4 --cycle >"$2" 2>&1 || rc=$?
        cat "$2"
}

reconf_at "$FAULT" "$SVFF_VM_RUNDIR/reconf.out"
assert_true "svffctl reconf fails when svffd dies" test "$rc" -ne 0
rc=0
wait "$svffd_pid" || rc=$?
svffd_pid=
assert_eq "svffd's end: SIGKILL at $FAULT (128 + 9)" 137 "$rc"

vm_log "svffd restarted after the crash"
vm_svffd_start
# all_back: every assignment attached again (svffd's view).
all_back() {
        [ "$(svffctl list --json | jq -r '[.pfs[].vfs[] | select(.assigned_to != null) |
                .assigned_to.state] | map(select(. == "attached")) | length')" = 4 ]
}
vm_wait 60 all_back || vm_fail "not every assignment is back 60 s after the restart: $(svffctl list)"
vm_log "every assignment attached again"
assert_eq "numvfs after recovery" 4 "$(cat "$P/sriov_numvfs")"
assert_eq "every VF at the same guest address (query-pci)" "$before" "$(vm_places)"
set -- $doms
for v in $vfs; do
        assert_eq "VF $v on vfio-pci" vfio-pci "$(basename "$(readlink "/sys/bus/pci/devices/$v/driver")")"
        assert_eq "VF $v in $1's live XML at svffd's address" "$(vm_xml_addr "$1") attached $1" "$(vm_svff_addr "$v")"
        shift
done

# A re-attach that fails: the reconf names the domain left without its
# VF, whose assignment stays paused with its reservation. Only the live
# device was taken, so the persistent definition still holds it (once),
# and unpause brings the VF back at the same guest address.
reconf_at fail-reattach-1 "$SVFF_VM_RUNDIR/reconf-fail.out"
assert_eq "svffctl reconf's exit status after a failed re-attach" 1 "$rc"
paused=$(svffctl list --json | jq -r '.pfs[].vfs[] | select(.assigned_to.state == "held") | .address')
assert_eq "assignments left paused" 1 "$(echo "$paused" | grep -c .)"
set -- $doms
for v in $vfs; do
        [ "$v" != "$paused" ] || break
        shift
done
assert_true "the reply names domain '$1'" grep -q "'$1'" "$SVFF_VM_RUNDIR/reconf-fail.out"
assert_eq "VF $paused gone from $1's query-pci" "" "$(vm_qpci "$1" "$paused")"
assert_eq "hostdevs in $1's persistent definition" 1 "$(virsh dumpxml --inactive "$1" | grep -c '<hostdev ')"
svffctl unpause "$paused" || vm_fail "svffctl unpause $paused failed"
assert_eq "every VF at the same guest address after unpause (query-pci)" "$before" "$(vm_places)"
assert_eq "hostdevs in $1's persistent definition after unpause" 1 \
        "$(virsh dumpxml --inactive "$1" | grep -c '<hostdev ')"
assert_eq "VF $paused after unpause" "$(vm_xml_addr "$1") attached $1" "$(vm_svff_addr "$paused")"
