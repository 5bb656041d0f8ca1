#!/bin/sh
# list and status answer from a snapshot no older than list_max_age_msec: a
# change made behind svffd's back (no uevent reaches it under pcisim)
# shows in the first call made once the snapshot is older than that,
# never only in a later one. status shows the snapshot's age and
# whether libvirt is connected, and a steady reader never waits for a
# pass.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
cat > "$T/svff.conf" <<CONF
{ "list_max_age_msec": 200, "libvirt_uri": "test:///nonexistent-$$" }
CONF
start_pcisim qdma
start_svffd
ctl init $PF 4 > /dev/null || fail "init 4"
ctl list --json | jget 'd["pfs"][0]["numvfs"]' | grep -qx 4 || fail "list after init"

note "the count changed by hand: the next list past list_max_age_msec shows it"
echo 0 > "$SYS/bus/pci/devices/$PF/sriov_numvfs"
sleep 0.5
ctl list --json > "$T/list.json"
expect_eq "$(jget 'd["pfs"][0]["numvfs"]' < "$T/list.json")" 0 "list right after a change by hand"

note "and status's drift at once"
echo 2 > "$SYS/bus/pci/devices/$PF/sriov_numvfs"
sleep 0.5
ctl_status --json > "$T/status.json"
jget '[x["kind"] + " " + str(x["actual"]) for x in d["drift"]]' < "$T/status.json" | grep -q "numvfs-changed 2" ||
        fail "status's drift is stale: $(cat "$T/status.json")"
age=$(jget 'd["snapshot_age_usec"]' < "$T/status.json")
# The pass ran after the call arrived: far younger than the half second slept.
[ "$age" -ge 0 ] && [ "$age" -lt 450000 ] || fail "snapshot age $age us"

note "status says the snapshot's age and libvirt's state"
jget 'd["libvirt"]["connected"]' < "$T/status.json" | grep -qx False || fail "libvirt shown connected"
ctl_status > "$T/status.txt"
grep -q "^libvirt: .*(not connected)" "$T/status.txt" || fail "status text lacks libvirt: $(cat "$T/status.txt")"
grep -q "^Snapshot: *taken [0-9]* ms ago (list_max_age_msec 200)" "$T/status.txt" ||
        fail "status text lacks the snapshot's age: $(cat "$T/status.txt")"

note "a steady reader never waits: the next pass starts while the snapshot still answers"
stop_svffd || fail "svffd stopped with an error"
# 3 s, times the sanitizer builds' slowdown: a pass starts in the
# snapshot's last 300 ms (a tenth of it), which a call every few tens of
# milliseconds meets.
slow=${SVFF_TEST_SLOWDOWN:-1}
cat > "$T/svff.conf" <<CONF
{ "list_max_age_msec": $((3000 * slow)), "libvirt_uri": "test:///nonexistent-$$" }
CONF
start_svffd
waits() { ctl_status --json | jget 'd["snapshot_waits"]'; }
before=$(waits)
# Back-to-back calls: the snapshot grows too old three times.
end=$(($(date +%s) + 10 * slow))
calls=0
while [ "$(date +%s)" -lt "$end" ]; do
        ctl list > /dev/null || fail "list"
        calls=$((calls + 1))
done
after=$(waits)
note "$calls calls; $((after - before)) waited for a pass"
[ $((after - before)) -le 1 ] || fail "$((after - before)) of $calls back-to-back calls waited for a pass"
ctl_status | grep -q "^Snapshot: .*; $after call(s) waited for a new one$" ||
        fail "status text lacks the waits: $(ctl_status)"
grep -q "Refreshing the snapshot ahead of need" "$T/svffd.log" || fail "no pass started ahead"
exit 0
