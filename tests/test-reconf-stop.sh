#!/bin/sh
# svffd asked to stop (SIGTERM, as systemctl stop does) at every step of
# a reconf (fault points with SVFF_FAULT_ACTION=term, test builds only).
# A stop is an operation, not a teardown: svffd exits 0 once the reconf
# reached its next journaled safe point (a quiesce in flight completes
# and rolls back; a numvfs or bind phase completes and its journal
# stays; a restore in flight completes). Right after the stop the store
# and the domain XML agree; after the restart the state is the one a
# SIGKILL at the same step leaves after recovery (test-reconf-crash.sh):
# every assignment intact, every VF on vfio-pci, the journal cleared.
# Last, a stop whose safe point cannot be reached before the stop
# deadline (a numvfs write blocked by a held VF): the journal stays and
# the next start completes the reconf.
. "$(dirname "$0")/reconf-lib.sh"

DOMAINS="vm1 vm2 vm3"
define $DOMAINS
start_pcisim qdma
svff_conf ', "numvfs-timeout-sec": 3'
start_connected
varlink_call io.svff.Debug.InjectUevent '{}' | grep -q InterfaceNotFound &&
        skip "svffd was built without --enable-fault-points"
PF=0000:01:00.0
ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF2=$(sys_vf $PF 2); VF3=$(sys_vf $PF 3)
ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach VF0"
ctl attach "$VF1" vm2 --guest-address 06:00.0 >/dev/null || fail "attach VF1"
ctl attach "$VF2" vm3 --guest-address 07:00.0 >/dev/null || fail "attach VF2"
before=$(assignments_snapshot)
stop_svffd || fail "svffd exit status"
check_xml

journal_none() { [ "$(journal)" = None ]; }
svffd_gone() { case $(ps -o stat= -p "$SVFFD_PID") in Z*|'') true ;; *) false ;; esac; }

# fault point | the state the stop leaves (rolled-back: journal cleared,
# count unchanged; kept: journal kept; done: the reconf completed) | what
# the restart does with it (as after a SIGKILL there) | what fails before
# (numvfs: the first numvfs write, EIO)
while read -r point at_stop expect before_stop; do
        [ -n "$point" ] || continue
        now=$(sys_numvfs $PF)
        if [ "$now" = 4 ]; then target=6; else target=4; fi
        note "stop at $point${before_stop:+ ($before_stop fails)}: reconf $now -> $target, then restart"

        export SVFF_FAULT="$point" SVFF_FAULT_ACTION=term
        start_connected
        unset SVFF_FAULT SVFF_FAULT_ACTION
        if [ "$before_stop" = numvfs ]; then pcisim_ctl fail $PF sriov_numvfs EIO 1; fi
        ctl reconf $PF $target > "$T/out" 2>&1 || true
        wait_for_s 60 svffd_gone || fail "$point: svffd did not stop: $(cat "$T/out")"
        rc=0; wait "$SVFFD_PID" || rc=$?
        SVFFD_PID=""
        expect_eq "$rc" 0 "$point: svffd's exit status after SIGTERM"
        grep -Eq "fault point '($point|${point%-[0-9]})' .* sending SIGTERM" "$T/svffd.log" || fail "$point: the stop was not asked for there"
        case $at_stop in
        rolled-back)
                expect_eq "$(journal)" None "$point: journal after the stop"
                expect_eq "$(sys_numvfs $PF)" "$now" "$point: numvfs after the stop"
                expect_eq "$(assignments_snapshot)" "$before" "$point: assignments after the stop" ;;
        kept)
                [ "$(store_py 'print(list(d["journal"]["pfs"]))')" = "['$PF']" ] ||
                        fail "$point: no journal after the stop" ;;
        done)
                expect_eq "$(journal)" None "$point: journal after the stop"
                expect_eq "$(sys_numvfs $PF)" "$target" "$point: numvfs after the stop"
                expect_eq "$(assignments_snapshot)" "$before" "$point: assignments after the stop" ;;
        esac
        # The store says what the domains hold, whatever the stop left.
        check_xml

        start_connected
        wait_for_s 60 journal_none || fail "$point: the journal was not cleared after the restart: $(journal)"
        if [ "$at_stop" = kept ]; then
                ctl status --json > "$T/status.json"
                expect_eq "$(jget 'd["recovered"][0]["outcome"]' < "$T/status.json")" "$expect" "$point: recovery"
        fi
        if [ "$expect" = resumed ]; then
                expect_eq "$(sys_numvfs $PF)" "$target" "$point: numvfs after the restart"
        else
                expect_eq "$(sys_numvfs $PF)" "$now" "$point: numvfs after the restart"
        fi
        check_vfio $PF
        expect_eq "$(assignments_snapshot)" "$before" "$point: assignments after the restart"
        stop_svffd || fail "$point: svffd exit status"
        check_xml
done <<'TABLE'
after-journal     rolled-back rolled-back
after-detach-1    rolled-back rolled-back
after-detach-3    rolled-back rolled-back
after-numvfs-0    kept        resumed
after-numvfs-N    kept        resumed
after-rebind      kept        resumed
after-reattach-1  done        resumed
after-reattach-3  done        resumed
before-clear      done        resumed
after-rebind      kept        rolled-back numvfs
after-reattach-1  rolled-back rolled-back numvfs
TABLE

note "stop deadline passes while numvfs 0 is blocked by a held VF: the journal stays, the next start completes"
now=$(sys_numvfs $PF)
if [ "$now" = 4 ]; then target=6; else target=4; fi
export SVFF_STOP_TIMEOUT_SEC=1
start_connected
unset SVFF_STOP_TIMEOUT_SEC
pcisim_ctl hold "$VF3"
ctl reconf $PF $target > "$T/out" 2>&1 &
BG_PIDS="$BG_PIDS $!"
journal_numvfs() { [ "$(store_py 'print(d["journal"]["pfs"]["'$PF'"]["phase"])' 2>/dev/null)" = numvfs ]; }
wait_for journal_numvfs || fail "the reconf did not reach its numvfs phase: $(journal)"
sleep 0.3
kill -TERM "$SVFFD_PID"
# Its main thread ends; the process is reaped only once the write still
# blocked in the "kernel" returns, as on a real host.
wait_for_s 30 grep -q "did not reach a safe point in time" "$T/svffd.log" || fail "the deadline was not logged"
[ "$(store_py 'print(list(d["journal"]["pfs"]))')" = "['$PF']" ] || fail "no journal after the stop deadline"
# svffd's last discovery pass reads the PF whose write is still blocked
# in the "kernel", so its exit waits for the write too: let it return.
pcisim_ctl release "$VF3"
wait_for_s 30 svffd_gone || fail "svffd did not stop once the blocked write returned"
[ "$(store_py 'print(list(d["journal"]["pfs"]))')" = "['$PF']" ] || fail "no journal after the stop"
rc=0; wait "$SVFFD_PID" || rc=$?
SVFFD_PID=""
expect_eq "$rc" 0 "svffd's exit status after the stop deadline"
start_connected
wait_for_s 60 journal_none || fail "the journal was not cleared after the restart: $(journal)"
expect_eq "$(sys_numvfs $PF)" "$target" "numvfs after completing"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "assignments after completing"
stop_svffd || fail "svffd exit status"
check_xml
echo "PASS"
