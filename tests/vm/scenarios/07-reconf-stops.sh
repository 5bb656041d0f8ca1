# Every kind of stop in every phase of a live reconf, on the real kernel:
# 4 VFs assigned to 4 running domains, 'reconf PF 4' each time.
#
# 1. svffd SIGKILLs itself at a fault point in each phase (quiesce,
#    numvfs, bind, restore, commit). Restarted, it resumes or rolls back
#    from its journal.
# 2. svffd gets a SIGTERM at a step of quiesce and of numvfs: it
#    reaches its next safe point, exits 0, and a restart finishes the
#    job.
# 3. svffd's write of the new count fails (injected at svffd's write,
#    after the kernel took the 0): the PF goes back to its count and
#    every assignment comes back.
# 4. svffd dies in a live attach, after libvirt took the device:
#    restarted, it records the VF for that domain, and no other domain
#    can have it.
#
# After each: every assignment attached at the same guest address
# (query-pci in every domain), each VF on vfio-pci, in one domain's XML
# at most, and recorded for that one domain.

if ! vm_have_reconf; then
        vm_skip "reconf is not in this build ('svffctl reconf --help' fails)"
fi
if ! "$(vm_svff_bin svffd)" --version | grep -q '^+FAULT-POINTS$'; then
        vm_skip "svffd is built without fault points (configure --enable-fault-points; scripts/check does)"
fi
vm_assigned_setup 4
before=$(vm_places)
echo "$before"
! echo "$before" | grep -q ' $' || vm_fail "a VF is missing from its domain's query-pci"

# restart_with NAME [ACTION]: svffd again, with the fault NAME armed
# (SVFF_FAULT; ACTION: SVFF_FAULT_ACTION).
restart_with() {
        vm_svffd_stop
        export SVFF_FAULT="$1"
        [ -z "${2:-}" ] || export SVFF_FAULT_ACTION="$2"
        vm_svffd_start
        unset SVFF_FAULT SVFF_FAULT_ACTION
}

all_back() {
        [ "$(svffctl list --json | jq -r '[.pfs[].vfs[] | select(.assigned_to != null) |
                .assigned_to.state] | map(select(. == "attached")) | length')" = 4 ] &&
                [ -z "$(pf_unsettled)" ]
}
# pf_unsettled: what svffd still has to do about the PF's reconf (an
# operation in flight, a journal kept), one line each; nothing once done.
# A stop just before the journal is cleared leaves every record attached
# already: the records alone do not say the recovery ended.
pf_unsettled() {
        svffctl status --json | jq -r --arg pf "$pf" \
                '(.operations[] | select(.pf == $pf) | "operation: \(.op)"),
                 (.drift[] | select(.pf == $pf and .kind == "interrupted") | "journal kept: \(.message)")'
}

# one_domain_each WHEN: no VF in two domains' live XML, and svffd's record
# of each VF names the domain whose XML has it.
one_domain_each() {
        for v in $vfs; do
                b=$(echo "$v" | cut -d: -f2) s=$(echo "$v" | cut -d: -f3 | cut -d. -f1) f=${v##*.}
                holders=""
                for d in $doms; do
                        virsh -q dumpxml "$d" --xpath '//hostdev/source/address' 2>/dev/null |
                                grep -q "bus=.0x$b. slot=.0x$s. function=.0x$f." && holders="$holders $d"
                done
                assert_eq "$1: domains whose live XML has VF $v" 1 "$(echo $holders | wc -w)"
                assert_eq "$1: svffd's record of VF $v" "$(echo $holders)" \
                        "$(svffctl list --json | jq -r --arg vf "$v" '.pfs[].vfs[] | select(.address == $vf) | .assigned_to.domain')"
        done
}

# check_all_back WHEN: the end state every stop must leave.
check_all_back() {
        vm_wait 60 all_back || vm_fail "$1: not every assignment is back after 60 s: $(svffctl list)"
        assert_eq "$1: numvfs" 4 "$(cat "$P/sriov_numvfs")"
        assert_eq "$1: every VF at the same guest address (query-pci)" "$before" "$(vm_places)"
        for v in $vfs; do
                assert_eq "$1: VF $v on vfio-pci" vfio-pci "$(basename "$(readlink "/sys/bus/pci/devices/$v/driver")")"
        done
        one_domain_each "$1"
        assert_eq "$1: no reconf in flight nor left in the journal" "" "$(pf_unsettled)"
}

# 1. SIGKILL, one fault point per phase.
for fault in after-detach-2 after-numvfs-N after-rebind after-reattach-2 before-clear; do
        restart_with "$fault"
        vm_log "reconf $pf 4, SIGKILL at $fault"
        rc=0
        svffctl reconf "$pf" 4 --cycle >"$SVFF_VM_RUNDIR/reconf-$fault.out" 2>&1 || rc=$?
        drc=0
        wait "$svffd_pid" || drc=$?
        svffd_pid=
        assert_eq "$fault: svffd's end (SIGKILL, 128 + 9)" 137 "$drc"
        assert_true "$fault: svffctl reconf fails when svffd dies" test "$rc" -ne 0
        vm_svffd_start
        check_all_back "SIGKILL at $fault"
done

# 2. SIGTERM at a step: a clean exit once the step reached a safe point.
for fault in after-detach-2 after-numvfs-0; do
        restart_with "$fault" term
        vm_log "reconf $pf 4, SIGTERM at $fault"
        svffctl reconf "$pf" 4 --cycle >"$SVFF_VM_RUNDIR/reconf-term-$fault.out" 2>&1 || true
        cat "$SVFF_VM_RUNDIR/reconf-term-$fault.out"
        drc=0
        wait "$svffd_pid" || drc=$?
        svffd_pid=
        assert_eq "$fault: svffd's exit status after SIGTERM" 0 "$drc"
        if grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$SVFF_VM_RUNDIR/svffd.log"; then
                vm_fail "SIGTERM at $fault: sanitizer report in svffd.log"
        fi
        vm_svffd_start
        check_all_back "SIGTERM at $fault"
done

# 3. The write of the new count fails after the kernel took the 0.
restart_with fail-numvfs-N
vm_log "reconf $pf 4, the write of 4 fails"
rc=0
svffctl reconf "$pf" 4 --cycle >"$SVFF_VM_RUNDIR/reconf-numvfs.out" 2>&1 || rc=$?
cat "$SVFF_VM_RUNDIR/reconf-numvfs.out"
assert_eq "svffctl reconf's exit status after a failed numvfs write" 1 "$rc"
assert_true "the reply says the PF went back" grep -qi 'back' "$SVFF_VM_RUNDIR/reconf-numvfs.out"
check_all_back "failed numvfs write"

# 4. SIGKILL in a live attach, after libvirt took the device.
set -- $vfs
v1=$1
set -- $doms
d1=$1 d2=$2
svffctl detach "$v1" >/dev/null || vm_fail "svffctl detach $v1 failed"
restart_with after-attach-libvirt
vm_log "attach $v1 $d1, SIGKILL after libvirt took it"
svffctl attach "$v1" "$d1" >/dev/null 2>&1 || true
drc=0
wait "$svffd_pid" || drc=$?
svffd_pid=
assert_eq "attach: svffd's end (SIGKILL, 128 + 9)" 137 "$drc"
vm_svffd_start
vm_wait 30 all_back || vm_fail "attach: $v1 is not recorded attached after the restart: $(svffctl list)"
one_domain_each "SIGKILL in attach"
rc=0
svffctl attach "$v1" "$d2" >"$SVFF_VM_RUNDIR/attach-twice.out" 2>&1 || rc=$?
assert_true "attach of $v1 to $d2 while $d1 has it is refused" test "$rc" -ne 0
one_domain_each "second attach refused"
