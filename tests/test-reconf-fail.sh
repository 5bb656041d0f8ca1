#!/bin/sh
# Failing reconf steps, injected through pcisim (and one libvirt attach
# failure through a test-build fault point): each ends in the best
# consistent state, and the reply names every domain that does not have
# its VF and why; none is reported restored without its device.
#   - numvfs 0 fails (EIO): nothing changed, every assignment put back;
#   - partial VF creation: the VFs that exist are restored, the others
#     stay paused with their reservation;
#   - a VF lost as it comes (no virtfn1, or a dangling one): the reconf
#     fails naming virtfn1, the others get the VF of their own index,
#     that domain's record stays, paused;
#   - a VF bind fails (driver_override EIO): that domain does not get it;
#   - numvfs 0 blocked past its deadline by a held VF: journal kept,
#     assignments paused; once released the same reconf completes it;
#   - a libvirt attach fails: that domain's assignment stays paused.
. "$(dirname "$0")/reconf-lib.sh"
# every message about a device carries its journal fields (log_fields_check)
SVFF_LOG_FIELDS=1; export SVFF_LOG_FIELDS

DOMAINS="vm1 vm2 vm3"
define $DOMAINS
start_pcisim qdma
svff_conf ', "numvfs_timeout_sec": 1'
start_connected
PF=0000:01:00.0
ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF2=$(sys_vf $PF 2); VF3=$(sys_vf $PF 3)
ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach VF0"
ctl attach "$VF1" vm2 --guest-address 06:00.0 >/dev/null || fail "attach VF1"
ctl attach "$VF2" vm3 --guest-address 07:00.0 >/dev/null || fail "attach VF2"
before=$(assignments_snapshot)
state_of() { store_py 'print(d["assignments"]["'"$1"'"]["state"])'; }
# outcome VF: "has_vf outcome" from the last reply
outcome() { jget '" ".join(str(a[k]) for a in d["assignments"] if a["vf"] == "'"$1"'" for k in ("has_vf", "outcome"))' < "$T/result.json"; }
# message_of VF: why the last reply says its domain lacks it
message_of() { jget '" ".join(str(a.get("message")) for a in d["assignments"] if a["vf"] == "'"$1"'")' < "$T/result.json"; }
# run_failing N: a reconf that must fail; the final reply in result.json,
# svffctl's JSON error (with the same message) in err
run_failing() {
        rc=0; ctl reconf $PF "$1" --cycle --json > "$T/out.json" 2> "$T/err" || rc=$?
        expect_eq "$rc" 1 "$2: exit status"
        tail -n 1 "$T/out.json" > "$T/result.json"
}

note "numvfs 0 fails with EIO: nothing changed, everything put back"
pcisim_ctl fail $PF sriov_numvfs EIO 1
run_failing 4 "numvfs EIO"
grep -q "nothing was changed" "$T/err" || fail "numvfs EIO message: $(cat "$T/err")"
grep -q "3 assignment(s) have their VF, 0 do not" "$T/err" || fail "numvfs EIO count: $(cat "$T/err")"
expect_eq "$(outcome "$VF0")" "True rolled-back" "VF0 after numvfs EIO"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after EIO"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "assignments after numvfs EIO"
expect_eq "$(journal)" None "journal after numvfs EIO"

note "partial creation: VF 2 is not created, vm3 is told and keeps its reservation"
pcisim_ctl partial $PF 2
run_failing 4 "partial creation"
expect_eq "$(outcome "$VF0")" "True restored" "VF0 after partial creation"
expect_eq "$(outcome "$VF1")" "True restored" "VF1 after partial creation"
expect_eq "$(outcome "$VF2")" "False no-vf" "VF2 after partial creation"
message_of "$VF2" | grep -q "VF 2 of PF $PF does not exist" ||
        fail "partial creation report: $(cat "$T/err")"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after partial creation"
expect_eq "$(state_of "$VF2")" held "VF2's record after partial creation"
expect_eq "$(state_of "$VF0")" attached "VF0's record after partial creation"
expect_eq "$(journal)" None "journal after partial creation"
# Back to 4 VFs; the reservation brings vm3's VF back.
ctl reconf $PF 4 >/dev/null || fail "reconf back to 4"
ctl unpause "$VF2" >/dev/null || fail "unpause VF2 after partial creation"
expect_eq "$(assignments_snapshot)" "$before" "assignments after unpausing VF2"

for how in "" dangling; do
        note "VF 1 lost as it comes (virtfn1 ${how:-gone}): a failure naming it, no shifted map, its record kept"
        pcisim_ctl drop-vf $PF 1 $how
        run_failing 4 "virtfn1 ${how:-gone}"
        grep -q "virtfn1" "$T/err" || fail "VF 1 lost ($how), the reconf says: $(cat "$T/err")"
        expect_eq "$(outcome "$VF0")" "True restored" "VF0 after VF 1 was lost ($how)"
        expect_eq "$(outcome "$VF1")" "False no-vf" "VF1 after it was lost ($how)"
        expect_eq "$(outcome "$VF2")" "True restored" "VF2 after VF 1 was lost ($how)"
        message_of "$VF1" | grep -q "no virtfn1" || fail "VF 1 lost ($how) report: $(cat "$T/err")"
        expect_eq "$(state_of "$VF1")" held "VF1's record after it was lost ($how)"
        expect_eq "$(state_of "$VF2")" attached "VF2's record after VF 1 was lost ($how)"
        expect_eq "$(journal)" None "journal after VF 1 was lost ($how)"
        # A reconf brings VF 1 back; its reservation brings vm2's VF back.
        ctl reconf $PF 4 >/dev/null || fail "reconf after VF 1 was lost ($how)"
        ctl unpause "$VF1" >/dev/null || fail "unpause VF1 after it was lost ($how)"
        expect_eq "$(assignments_snapshot)" "$before" "assignments after unpausing VF1 ($how)"
done

note "a VF cannot be bound (driver_override EIO): its domain is told"
pcisim_ctl fail '*' driver_override EIO 1
run_failing 4 "bind failure"
expect_eq "$(outcome "$VF0")" "False paused" "VF0 after its bind failed"
expect_eq "$(outcome "$VF1")" "True restored" "VF1 after VF0's bind failed"
message_of "$VF0" | grep -q "not vfio-pci" || fail "bind failure report: $(cat "$T/err")"
expect_eq "$(state_of "$VF0")" held "VF0's record after its bind failed"
ctl unpause "$VF0" >/dev/null || fail "unpause VF0 (svffd rebinds it)"
expect_eq "$(assignments_snapshot)" "$before" "assignments after unpausing VF0"
check_vfio $PF

note "numvfs 0 blocked by a held VF: reported, journal kept, completed once released"
hold_vf "$VF3"
run_failing 4 "held VF"
grep -q "journal is kept" "$T/err" || fail "held VF message: $(cat "$T/err")"
expect_eq "$(outcome "$VF1")" "False paused" "VF1 while the write is blocked"
expect_eq "$(state_of "$VF1")" held "VF1's record while the write is blocked"
[ "$(journal)" != None ] || fail "no journal while the write is blocked"
rc=0; ctl init $PF 4 2> "$T/err2" || rc=$?
expect_eq "$rc" 1 "init while a reconf is journaled"
grep -q "interrupted reconf" "$T/err2" || fail "init refusal: $(cat "$T/err2")"
# The pending write, or the reconf that completes the journal, removes
# every VF of the PF: none may be handed out meanwhile.
# refused_kept WHAT ARGS...: svffctl ARGS refused, naming the PF and the
# reconf that completes it.
# refused_now WHAT ARGS...: svffctl ARGS refused at once; a step on a VF
# of the PF would wait behind the kernel's write, so a call that waits
# fails. The refusal in err3.
refused_now() {
        what=$1
        shift
        rc=0; timeout 20 "$SVFFCTL" --socket "$SOCK" "$@" --json > "$T/out3" 2> "$T/err3" || rc=$?
        [ "$rc" != 124 ] || fail "$what waited behind the held write instead of being refused"
        [ "$rc" != 0 ] || fail "$what went ahead while the reconf's journal is kept: $(cat "$T/out3")"
        grep -q '"error":"io.svff.OperationInProgress"' "$T/err3" || fail "$what refusal: $(cat "$T/err3")"
}
refused_kept() {
        what=$1
        refused_now "$@"
        grep -q "PF $PF has an interrupted reconf to 4 VFs whose journal is kept" "$T/err3" ||
                fail "$what refusal does not name the PF: $(cat "$T/err3")"
        grep -q "run 'svffctl reconf $PF 4' to complete it" "$T/err3" ||
                fail "$what refusal does not say what to do: $(cat "$T/err3")"
}
refused_kept "attach of VF3" attach "$VF3" vm1
refused_kept "attach --pf" attach --pf $PF vm3
refused_kept "unpause of VF1" unpause "$VF1"
refused_kept "dry run of the unpause of VF1" unpause "$VF1" --dry-run
expect_eq "$(state_of "$VF1")" held "VF1's record after its unpause was refused"
# Nor taken back or given up while the write is in the kernel: each
# would wait behind it (a detach did, for as long as the VF was held).
# refused_write WHAT ARGS...
refused_write() {
        what=$1
        refused_now "$@"
        grep -q "A VF count write of PF $PF passed its deadline and is still in the kernel" "$T/err3" ||
                fail "$what refusal does not name the write: $(cat "$T/err3")"
        grep -q "'stuck writes' in 'svffctl status' is 0" "$T/err3" ||
                fail "$what refusal does not say what to wait for: $(cat "$T/err3")"
}
refused_write "detach of VF1" detach "$VF1"
refused_write "dry run of the detach of VF1" detach "$VF1" --dry-run
refused_write "pause of VF1" pause "$VF1"
refused_write "release --force of VF1" release --force "$VF1"
refused_write "release of VF3" release "$VF3"
refused_write "dry run of the release of VF3" release "$VF3" --dry-run
refused_write "the reconf that completes the journal" reconf $PF 4
expect_eq "$(state_of "$VF1")" held "VF1's record after its detach and release were refused"
expect_eq "$(store_py 'print(d["vfs"]["'"$VF3"'"]["driver"])')" vfio-pci "VF3's record after its release was refused"
store_py 'print(d["assignments"].get("'"$VF3"'"))' | grep -qx None || fail "VF3 assigned while the journal is kept"
release_vf
wait_for write_ended $PF 0 || fail "the held write did not finish after the release"
# The journal alone does not hold a detach: the reconf that completes
# it honours what the detach records (its dry run here, nothing changed).
ctl detach "$VF1" --dry-run > "$T/out" 2>&1 || fail "dry run of a detach once the write ended: $(cat "$T/out")"
ctl reconf $PF 4 > "$T/out" || fail "completing the blocked reconf: $(cat "$T/out")"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after completing"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "assignments after completing"
expect_eq "$(journal)" None "journal after completing"

note "numvfs N fails (ENOMEM) after the 0 write: back to 4 VFs, every assignment restored"
# The 0 write is held by VF 3 (pcisim checks its faults when a write
# starts), the fault armed while it waits, then VF 3 let go: the write
# of 4 -> 6 that follows is the one that fails.
stop_svffd || fail "svffd exit status"
svff_conf ', "numvfs_timeout_sec": 20'
start_connected
hold_vf "$VF3"
ctl reconf $PF 6 --json > "$T/out.json" 2> "$T/err" &
reconf_pid=$!
journal_numvfs() { [ "$(store_py 'print(d["journal"]["pfs"]["'$PF'"]["phase"])' 2>/dev/null)" = numvfs ]; }
wait_for journal_numvfs || fail "the reconf did not reach its numvfs phase: $(journal)"
sleep 0.5
pcisim_ctl fail $PF sriov_numvfs ENOMEM 1
release_vf
rc=0; wait $reconf_pid || rc=$?
expect_eq "$rc" 1 "numvfs ENOMEM after 0: exit status"
tail -n 1 "$T/out.json" > "$T/result.json"
grep -q "went back to 4 VFs" "$T/err" || fail "numvfs ENOMEM message: $(cat "$T/err")"
grep -q "3 assignment(s) have their VF, 0 do not" "$T/err" || fail "numvfs ENOMEM count: $(cat "$T/err")"
expect_eq "$(outcome "$VF0")" "True rolled-back" "VF0 after numvfs ENOMEM"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after ENOMEM"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "assignments after numvfs ENOMEM"
expect_eq "$(journal)" None "journal after numvfs ENOMEM"
ctl_status > "$T/status" || fail "status"
grep -q "Drift: *none" "$T/status" || fail "drift after the rollback: $(cat "$T/status")"

note "numvfs N fails and so does going back: the journal stays, status names the domains without their VF"
hold_vf "$VF3"
ctl reconf $PF 6 --json > "$T/out.json" 2> "$T/err" &
reconf_pid=$!
wait_for journal_numvfs || fail "the reconf did not reach its numvfs phase: $(journal)"
sleep 0.5
pcisim_ctl fail $PF sriov_numvfs EIO 2
release_vf
rc=0; wait $reconf_pid || rc=$?
expect_eq "$rc" 1 "numvfs EIO twice after 0: exit status"
grep -q "going back to 4 VFs failed too" "$T/err" || fail "double failure message: $(cat "$T/err")"
expect_eq "$(sys_numvfs $PF)" 0 "numvfs after both writes failed"
[ "$(journal)" != None ] || fail "no journal after the rollback failed"
ctl_status > "$T/status" || fail "status"
grep -q "Drift: *none" "$T/status" && fail "status says no drift while the domains lack their VFs: $(cat "$T/status")"
# One line for the PF's assignments without a VF, each domain named.
grep -q "^  $PF: assignment-without-vf: 3 assigned VFs that do not exist" "$T/status" ||
        fail "status does not count the assignments without a VF: $(cat "$T/status")"
grep -q "Domain 'vm1' is assigned VF $VF0, which does not exist$" "$T/status" ||
        fail "status does not name vm1's VF: $(cat "$T/status")"
# list keeps them: a row per VF, gone, with its domain, and the next step.
ctl list > "$T/list" || fail "list with the VFs gone"
for v in "$VF0 vm1" "$VF1 vm2" "$VF2 vm3"; do
        set -- $v
        grep -qE "^$1 +VF .* $2 .* gone\$" "$T/list" || fail "list has no gone row for $1 of $2: $(cat "$T/list")"
        grep -q "^$1 gone: domain '$2' lacks it; 'svffctl reconf' its PF back" "$T/list" ||
                fail "list does not say what brings $1 back: $(cat "$T/list")"
done
ctl list --json > "$T/list.json" || fail "list --json with the VFs gone"
expect_eq "$(jget 'sorted((g["address"], g["pf"], g["assigned_to"]["domain"]) for p in d["pfs"] for g in p["gone"])' < "$T/list.json")" \
        "[('$VF0', '$PF', 'vm1'), ('$VF1', '$PF', 'vm2'), ('$VF2', '$PF', 'vm3')]" "List's gone VFs"
ctl list --domain vm2 --json > "$T/list.json" || fail "list --domain vm2"
expect_eq "$(jget '[g["address"] for p in d["pfs"] for g in p["gone"]]' < "$T/list.json")" "['$VF1']" "vm2's gone VF"
ctl list "$VF2" --json > "$T/list.json" || fail "list $VF2, which is gone"
expect_eq "$(jget '[g["address"] for p in d["pfs"] for g in p["gone"]]' < "$T/list.json")" "['$VF2']" "list of a gone VF"
# The same reconf finishes the rollback.
ctl reconf $PF 6 > "$T/out" 2>&1 || fail "finishing the rollback: $(cat "$T/out")"
# svffd ran throughout: nothing says it stopped or restarted.
ctl_status > "$T/status" || fail "status after finishing the rollback"
grep -qE "svffd stopped|restart" "$T/out" "$T/status" &&
        fail "a restart claimed when none happened: $(cat "$T/out" "$T/status")"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after finishing the rollback"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "assignments after finishing the rollback"
expect_eq "$(journal)" None "journal after finishing the rollback"

note "a libvirt attach fails (test-build fault injection): that domain's VF stays paused"
if varlink_call io.svff.Debug.InjectUevent '{}' | grep -q InterfaceNotFound; then
        note "skipped: svffd was built without --enable-fault-points"
else
        stop_svffd || fail "svffd exit status"
        export SVFF_FAULT=fail-reattach-1
        start_connected
        unset SVFF_FAULT
        run_failing 4 "attach failure"
        expect_eq "$(jget 'sum(1 for a in d["assignments"] if not a["has_vf"])' < "$T/result.json")" 1 "VMs without their VF"
        grep -q '^{"error":"io.svff.ReconfFailed",.*Reconf of PF '"$PF"' to 4 VFs failed: .* 2 assignment(s) have their VF, 1 do not' "$T/err" ||
                fail "attach failure message: $(cat "$T/err")"
        jget '[a["message"] for a in d["assignments"] if not a["has_vf"]]' < "$T/result.json" | grep -q "injected failure" || fail "attach failure report: $(cat "$T/err")"
        expect_eq "$(store_py 'print(sorted(a["state"] for a in d["assignments"].values()))')" \
                "['attached', 'attached', 'held']" "records after the attach failure"
        expect_eq "$(journal)" None "journal after the attach failure"
fi
stop_svffd || fail "svffd exit status"
check_xml
log_fields_check
echo "PASS"
