#!/bin/sh
# svffd killed at every step of a reconf (fault points, test builds
# only), then restarted: it resumes or rolls back from the journal. After
# each restart: every assignment intact in the store and in the domain
# XML (same VF, domain, guest address, alias, state attached), every VF
# on vfio-pci, the journal cleared, and Status saying what was recovered.
# Also killed while rolling back a reconf whose numvfs write failed
# (pcisim EIO): the journal says so, with the count it goes back to, and
# the restart finishes the rollback instead of resuming to the target.
. "$(dirname "$0")/reconf-lib.sh"
# every message about a device carries its journal fields (log_fields_check)
SVFF_LOG_FIELDS=1; export SVFF_LOG_FIELDS

reconf_scene vm1

n_rollbacks=0

# fault point | how svffd dies (kill: SIGKILL, abort) | what recovery does
# | what fails before (numvfs: the first numvfs write, EIO)
while read -r point how expect before_crash; do
        [ -n "$point" ] || continue
        now=$(sys_numvfs $PF)
        if [ "$now" = 4 ]; then target=6; else target=4; fi
        note "$point ($how${before_crash:+, $before_crash fails}): reconf $now -> $target, then restart"

        export SVFF_FAULT="$point"
        if [ "$how" = abort ]; then export SVFF_FAULT_ACTION=abort; fi
        start_connected
        unset SVFF_FAULT SVFF_FAULT_ACTION
        if [ "$before_crash" = numvfs ]; then pcisim_ctl fail $PF sriov_numvfs EIO 1; fi
        rc=0; ctl reconf $PF $target > "$T/out" 2>&1 || rc=$?
        [ "$rc" != 0 ] || fail "$point: the reconf succeeded although svffd was to die: $(cat "$T/out")"
        wait_for svffd_gone || fail "$point: svffd did not die at the fault point: $(cat "$T/out")"
        rc=0; wait "$SVFFD_PID" || rc=$?
        SVFFD_PID=""
        case "$how" in
        kill) expect_eq "$rc" 137 "$point: svffd's exit status (SIGKILL)" ;;
        abort) expect_eq "$rc" 134 "$point: svffd's exit status (SIGABRT)" ;;
        esac
        grep -q "fault point '${point%-[0-9]}" "$T/svffd.log" || fail "$point: svffd did not reach the fault point"
        [ "$(store_py 'print(list(d["journal"]["pfs"]))')" = "['$PF']" ] || fail "$point: no journal after the crash"
        if [ "$before_crash" = numvfs ]; then
                expect_eq "$(store_py 'e = d["journal"]["pfs"]["'$PF'"]; print(e["phase"], e["numvfs"], e["rollback"]["numvfs"])')" \
                        "rollback $target $now" "$point: journal (phase, target, count it goes back to)"
        fi

        start_connected
        # Recovery re-attaches every assignment through libvirt: more
        # than 10 s on a loaded machine.
        wait_for_s 60 journal_none || fail "$point: the journal was not cleared after the restart: $(journal)"
        ctl_status --json > "$T/status.json"
        expect_eq "$(jget 'd["recovered"][0]["pf"]' < "$T/status.json")" "$PF" "$point: recovered PF"
        expect_eq "$(jget 'd["recovered"][0]["outcome"]' < "$T/status.json")" "$expect" "$point: recovery"
        ctl status | grep -q "Recovered: .*$PF.*$expect" || fail "$point: human status: $(ctl status)"
        expect_eq "$(jget 'len(d["drift"])' < "$T/status.json")" 0 "$point: drift after recovery"
        if [ "$before_crash" = numvfs ]; then
                n_rollbacks=$((n_rollbacks + 1))
                expect_eq "$(grep -c "Finishing the interrupted rollback of the reconf of PF $PF to $target VFs: back to $now VFs" \
                        "$T/svffd.log")" "$n_rollbacks" "$point: rollbacks finished, as logged"
                ctl status | grep -q "Recovered: .*is back at $now VFs" || fail "$point: human status: $(ctl status)"
                expect_eq "$(jget 'sorted(set(a["outcome"] for a in d["recovered"][0]["assignments"]))' < "$T/status.json")" \
                        "['rolled-back']" "$point: each assignment's outcome"
        fi
        if [ "$expect" = resumed ]; then
                expect_eq "$(sys_numvfs $PF)" "$target" "$point: numvfs after resuming"
        else
                expect_eq "$(sys_numvfs $PF)" "$now" "$point: numvfs after rolling back"
        fi
        check_vfio $PF
        expect_eq "$(assignments_snapshot)" "$before" "$point: assignments after recovery"
        stop_svffd || fail "$point: svffd exit status"
        check_xml
done <<'TABLE'
after-journal     kill  rolled-back
after-detach-1    kill  rolled-back
after-detach-3    kill  rolled-back
after-numvfs-0    kill  resumed
after-numvfs-0    abort resumed
after-numvfs-N    kill  resumed
after-rebind      kill  resumed
after-reattach-1  kill  resumed
after-reattach-3  kill  resumed
before-clear      kill  resumed
after-rebind      kill  rolled-back numvfs
after-reattach-1  kill  rolled-back numvfs
after-reattach-2  abort rolled-back numvfs
after-rollback-journal kill rolled-back numvfs
TABLE

# killed_after_0 WHAT: a reconf of PF to the other count (now, target
# set), svffd SIGKILLed by its fault point once the kernel took the 0.
killed_after_0() {
        now=$(sys_numvfs $PF)
        if [ "$now" = 4 ]; then target=6; else target=4; fi
        export SVFF_FAULT=after-numvfs-0
        start_connected
        unset SVFF_FAULT
        rc=0; ctl reconf $PF $target > "$T/out" 2>&1 || rc=$?
        [ "$rc" != 0 ] || fail "$1: the reconf succeeded although svffd was to die: $(cat "$T/out")"
        wait_for svffd_gone || fail "$1: svffd did not die at the fault point: $(cat "$T/out")"
        rc=0; wait "$SVFFD_PID" || rc=$?
        SVFFD_PID=""
        expect_eq "$rc" 137 "$1: svffd's exit status (SIGKILL)"
}

# Killed after the 0 write, then restarted while libvirt cannot be
# reached: the recovery waits for libvirt's connection. Until then the
# VFs the 0 removed, and the PF's count, are no drift with next steps of
# their own (the operator would redo what svffd is about to do): one
# "interrupted" item says svffd completes it once connected. With
# libvirt back, it does.
note "after-numvfs-0 (kill), restarted without libvirt: the recovery waits for it"
killed_after_0 "without libvirt"
cp "$T/svff.conf" "$T/svff.conf.good"
sed "s|\"libvirt_uri\": \"[^\"]*\"|\"libvirt_uri\": \"test+unix:///default?socket=$T/no-libvirtd.sock\"|" \
        "$T/svff.conf.good" > "$T/svff.conf"
grep -q "no-libvirtd.sock" "$T/svff.conf" || fail "without libvirt: the URI was not replaced: $(cat "$T/svff.conf")"
n_lines=$(wc -l < "$T/svffd.log")
start_svffd
ctl_status --json > "$T/status.json" || fail "without libvirt: status failed"
tail -n "+$((n_lines + 1))" "$T/svffd.log" > "$T/start.log"
expect_eq "$(jget '[(x["kind"], x["device"]) for x in d["drift"]]' < "$T/status.json")" \
        "[('interrupted', '$PF')]" "without libvirt: drift while the recovery waits"
jget '[x["next_step"] for x in d["drift"]][0]' < "$T/status.json" |
        grep -q "^svffd completes it or rolls it back once connected to libvirt at 'test+unix:" ||
        fail "without libvirt: the interrupted item's next step: $(cat "$T/status.json")"
grep -q "Drift: VF \|svffctl init" "$T/start.log" &&
        fail "without libvirt: start-up drift with next steps the recovery takes: $(grep Drift "$T/start.log")"
grep -q "serving; .* 1 drift(s)" "$T/start.log" || fail "without libvirt: serving line: $(grep serving "$T/start.log")"
# An unpause meanwhile is refused with the same next step: the
# operator has nothing to run.
rc=0; ctl unpause "$VF0" --json > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "without libvirt: unpause while the recovery waits"
grep -q '"error":"io.svff.OperationInProgress"' "$T/err" || fail "without libvirt: the unpause's refusal: $(cat "$T/err")"
grep -q "svffd completes it or rolls it back once connected to libvirt at 'test+unix:" "$T/err" ||
        fail "without libvirt: the unpause's refusal does not say svffd completes it: $(cat "$T/err")"
stop_svffd || fail "without libvirt: svffd exit status"
mv "$T/svff.conf.good" "$T/svff.conf"
start_connected
wait_for_s 60 journal_none || fail "without libvirt, then with: the journal was not cleared: $(journal)"
expect_eq "$(sys_numvfs $PF)" "$target" "without libvirt, then with: numvfs after the recovery"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "without libvirt, then with: assignments after the recovery"
stop_svffd || fail "without libvirt, then with: svffd exit status"
check_xml

# Killed after the 0 write, then the restart's write of the new count
# refused by the kernel (pcisim ENOMEM): the recovery rolls back as a live
# reconf does, to the old count, every assignment attached again.
note "after-numvfs-0 (kill), then the restart's write of the new count refused: back to the old"
killed_after_0 "refused on restart"
expect_eq "$(sys_numvfs $PF)" 0 "refused on restart: numvfs after the kill"
expect_eq "$(store_py 'print(d["journal"]["pfs"]["'$PF'"]["phase"])')" numvfs "refused on restart: journal phase"
pcisim_ctl fail $PF sriov_numvfs ENOMEM 1
start_connected
wait_for_s 60 journal_none || fail "refused on restart: the journal was not cleared: $(journal)"
expect_eq "$(sys_numvfs $PF)" "$now" "refused on restart: numvfs after the recovery"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "refused on restart: assignments after the recovery"
ctl_status --json > "$T/status.json"
jget 'd["recovered"][0]["message"]' < "$T/status.json" > "$T/recovered"
grep -q "went back to $now VFs" "$T/recovered" || fail "refused on restart: recovered: $(cat "$T/recovered")"
grep -q "3 assignment(s) have their VF, 0 do not" "$T/recovered" ||
        fail "refused on restart: recovered: $(cat "$T/recovered")"
expect_eq "$(jget 'sorted(set(a["outcome"] for a in d["recovered"][0]["assignments"]))' < "$T/status.json")" \
        "['rolled-back']" "refused on restart: each assignment's outcome"
expect_eq "$(jget 'len(d["drift"])' < "$T/status.json")" 0 "refused on restart: drift after recovery"
stop_svffd || fail "refused on restart: svffd exit status"
check_xml
log_fields_check
echo "PASS"
