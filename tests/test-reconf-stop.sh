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
# deadline (a numvfs write blocked by a held VF): svffd exits with the
# write still blocked (no discovery pass starts once the stop began, so
# none waits on that PF), the journal stays and the next start completes
# the reconf.
. "$(dirname "$0")/reconf-lib.sh"

reconf_scene vm3 ', "numvfs_timeout_sec": 3'

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
                ctl_status --json > "$T/status.json"
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
# A sanitizer build checks for leaks at exit by stopping every thread,
# which waits for the one blocked in the write: not this time.
asan_before=${ASAN_OPTIONS-}
# PF uevents settle for 600 ms before auto-init looks (below).
svff_conf ', "numvfs_timeout_sec": 3, "settle_msec": 600'
export SVFF_STOP_TIMEOUT_SEC=1 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
start_connected
unset SVFF_STOP_TIMEOUT_SEC
ASAN_OPTIONS=$asan_before
hold_vf "$VF3"
ctl reconf $PF $target > "$T/out" 2>&1 &
BG_PIDS="$BG_PIDS $!"
journal_numvfs() { [ "$(store_py 'print(d["journal"]["pfs"]["'$PF'"]["phase"])' 2>/dev/null)" = numvfs ]; }
wait_for journal_numvfs || fail "the reconf did not reach its numvfs phase: $(journal)"
sleep 0.3
# A PF uevent whose settle time ends after the stop began, before its
# deadline: auto-init then asks for a fresh snapshot. A discovery pass
# started for it would read the PF whose write is blocked, and block
# with it (the device lock), holding the exit: none may start.
varlink_call io.svff.Debug.InjectUevent "{\"action\": \"add\", \"device\": \"$PF\"}" > "$T/inject.json"
grep -q '"parameters"' "$T/inject.json" || fail "uevent not injected: $(cat "$T/inject.json")"
kill -TERM "$SVFFD_PID"
wait_for_s 30 grep -q "did not reach a safe point in time" "$T/svffd.log" || fail "the deadline was not logged"
[ "$(store_py 'print(list(d["journal"]["pfs"]))')" = "['$PF']" ] || fail "no journal after the stop deadline"
# svffd exits with the write still blocked in the "kernel": once the
# stop began no discovery pass starts (one would read the held PF and
# the exit would wait for it). Only the blocked write's own thread is
# left, which the kernel reaps once the write returns, as on a real
# host: release it, then collect the exit status.
wait_for_s 30 svffd_gone || fail "svffd did not exit while a numvfs write was blocked (a VF held)"
[ "$(store_py 'print(list(d["journal"]["pfs"]))')" = "['$PF']" ] || fail "no journal after the stop"
release_vf
rc=0; wait "$SVFFD_PID" || rc=$?
SVFFD_PID=""
expect_eq "$rc" 0 "svffd's exit status after the stop deadline"
svff_conf ', "numvfs_timeout_sec": 3'
start_connected
wait_for_s 60 journal_none || fail "the journal was not cleared after the restart: $(journal)"
expect_eq "$(sys_numvfs $PF)" "$target" "numvfs after completing"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "assignments after completing"
stop_svffd || fail "svffd exit status"
check_xml
echo "PASS"
