#!/bin/sh
# A policy does not start an Init behind a VF count write still in the
# kernel. The Init would wait for as long as the write lasts (here, as
# long as a process holds a VF open) and hold the PF as "in progress"
# meanwhile, refusing every other request on it. It waits instead,
# Status saying why, and the policy is applied once the write ends. The
# write is another process's: 0 written by hand with VF 0 held open.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
# policy N: svff.conf with the PF's policy asking for N VFs.
policy() {
        cat > "$T/svff.conf" <<CONF
{ "settle_msec": 50,
  "policies": { "disks": { "match": { "address": "$PF" }, "numvfs": $1 } } }
CONF
}
numvfs_is() { [ "$(cat "$SYS/bus/pci/devices/$PF/sriov_numvfs")" = "$1" ]; }
settled() { "$SVFFCTL" --socket "$SOCK" status --json | grep -q '"operations":\[\]'; }

policy 2
start_pcisim mixed
start_svffd
wait_for numvfs_is 2 || fail "the policy was not applied at start-up"
wait_for settled || fail "the start-up init did not end: $(ctl status)"

note "another process writes 0 with VF 0 held open; meanwhile the policy asks for 3"
write_held $PF 0
VF0=$HELD
"$SVFFCTL" --socket "$SOCK" monitor --json > "$T/monitor.log" 2>&1 &
BG_PIDS="$writer $!"
wait_for grep -q subscribed "$T/monitor.log" || fail "monitor did not subscribe"
# svffd learns of another process's write by reading the count: past
# list_max_age_msec (1 s), a List takes a pass, which meets it.
sleep 1.5
ctl list > /dev/null || fail "list while the write is in the kernel"
grep -q "Read of 'bus/pci/devices/$PF/sriov_numvfs' still blocked" "$T/svffd.log" ||
        fail "the list's pass did not meet the write"
policy 3
ctl config reload > "$T/out" 2>&1 || fail "config reload: $(cat "$T/out")"
wait_for grep -q "PF $PF: policy 'disks' .* asks for 3 VFs .*; waiting: Another process is writing the VF count of PF $PF" \
        "$T/svffd.log" || fail "the policy's init did not wait for the write: $(ctl status)"
ctl_status --json > "$T/status.json" || fail "status: exit $ctl_status_rc"
# (the policy's own settle timer, "policy", may be listed)
expect_eq "$(jget '[o["op"] for o in d["operations"] if o["pf"] == "'$PF'" and o["op"] != "policy"]' \
        < "$T/status.json")" "[]" "the operations on the PF while the write is in the kernel"
ctl_status > "$T/status.txt" || fail "status: exit $ctl_status_rc"
grep -q "$PF: policy not applied: .*; waiting: Another process is writing the VF count of PF $PF" "$T/status.txt" ||
        fail "status does not say why the policy waits: $(cat "$T/status.txt")"
# Looked at again every 2 s, logged once, and no event but the first
# pass's (the PF is not added again at each look).
sleep 4.5
expect_eq "$(grep -c "; waiting: Another process" "$T/svffd.log")" 1 "the times the wait was logged"
expect_eq "$(grep -c '"pf-added"' "$T/monitor.log")" 0 "the pf-added events while the policy waits"
kill -0 $writer 2>/dev/null || fail "the write by hand ended before the checks: they did not meet it"

note "the write ends: the policy is applied"
release_vf
rc=0; wait $writer || rc=$?
expect_eq "$rc" 0 "the write by hand"
wait_for_s 20 numvfs_is 3 || fail "the policy was not applied once the write ended: $(ctl status)"
wait_for settled || fail "the policy's init did not end: $(ctl status)"
ctl_status > "$T/status.txt" || fail "status: exit $ctl_status_rc"
! grep -q "policy not applied" "$T/status.txt" || fail "status after the policy applied: $(cat "$T/status.txt")"
exit 0
