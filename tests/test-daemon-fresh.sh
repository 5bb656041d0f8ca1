#!/bin/sh
# list and status answer from a snapshot no older than list_max_age_msec: a
# change made behind svffd's back (no uevent reaches it under pcisim)
# shows in the first call made once the snapshot is older than that,
# never only in a later one. status shows the snapshot's age and
# whether libvirt is connected.
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
exit 0
