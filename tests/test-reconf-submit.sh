#!/bin/sh
# Domain jobs that cannot be submitted (test-build fault injection: the
# pool refuses the Nth job of a phase, as it does when out of memory or
# quitting) are not counted as done:
#   - a quiesce never submitted: that domain still holds its VF, so the
#     VF count must not change; the reconf rolls back, nothing lost;
#   - a restore never submitted: that assignment is not settled, so the
#     journal stays and the next start puts it back.
. "$(dirname "$0")/reconf-lib.sh"

reconf_scene vm3

note "the second quiesce job is never submitted: nothing destroyed, everything put back"
export SVFF_FAULT=fail-submit-quiesce-2
start_connected
unset SVFF_FAULT
rc=0; ctl reconf $PF 6 > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reconf with a quiesce never submitted: exit status"
grep -q "never started" "$T/err" || fail "the reply does not say what was not started: $(cat "$T/err")"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after a quiesce was never submitted"
expect_eq "$(assignments_snapshot)" "$before" "assignments after a quiesce was never submitted"
expect_eq "$(journal)" None "journal after the rollback"
check_vfio $PF
stop_svffd || fail "svffd exit status"
check_xml

note "the second restore job is never submitted: the journal stays, the next start restores"
export SVFF_FAULT=fail-submit-restore-2
start_connected
unset SVFF_FAULT
rc=0; ctl reconf $PF 6 > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reconf with a restore never submitted: exit status"
grep -q "journal is kept" "$T/err" || fail "the reply does not say the journal is kept: $(cat "$T/err")"
[ "$(journal)" != None ] || fail "the journal was cleared with an assignment not put back"
stop_svffd || fail "svffd exit status"
check_xml
start_connected
wait_for_s 60 journal_none || fail "the journal was not cleared after the restart: $(journal)"
expect_eq "$(sys_numvfs $PF)" 6 "numvfs after the restart"
expect_eq "$(assignments_snapshot)" "$before" "assignments after the restart"
check_vfio $PF
stop_svffd || fail "svffd exit status"
check_xml
echo "PASS"
