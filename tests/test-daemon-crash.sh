#!/bin/sh
# Crash: SIGKILL svffd in the middle of an init of 252 VFs (binding slowed
# down by pcisim), restart it: the store is readable, and status tells the
# truth: the init shows as interrupted, every VF not on vfio-pci in sysfs
# shows as drift and no other does. Running the init again completes it.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
start_pcisim qdma
start_svffd
pcisim_ctl "latency probe 8000"

# It follows this svffd only: without --no-reconnect it would wait for the next.
"$SVFFCTL" --socket "$SOCK" monitor --no-reconnect --json > "$T/mon.out" &
MON=$!
BG_PIDS="$MON"
wait_for grep -q subscribed "$T/mon.out" || fail "monitor"
"$SVFFCTL" --socket "$SOCK" init $PF 252 > "$T/init.out" 2>&1 &
INIT=$!
BG_PIDS="$MON $INIT"

i=0
while [ "$(grep -c vf-bound "$T/mon.out")" -lt 40 ]; do
        i=$((i + 1)); [ $i -lt 400 ] || fail "init made no progress"
        sleep 0.05
done
ctl_status --json > "$T/status-during.json"
expect_eq "$(jget 'd["operations"][0]["phase"]' < "$T/status-during.json")" bind "phase while binding"

kill -KILL "$SVFFD_PID"
wait "$SVFFD_PID" 2>/dev/null || true
SVFFD_PID=""
rc=0; wait $INIT || rc=$?
expect_eq "$rc" 3 "svffctl init when svffd dies"
wait $MON 2>/dev/null || true
BG_PIDS=""
pcisim_ctl "latency probe 0"

python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$STATE/store.json" || fail "store unreadable after SIGKILL"
rm -f "$SOCK"
start_svffd
ctl_status --json > "$T/status.json"
ctl list --json > "$T/list.json"
expect_eq "$(sys_numvfs $PF)" 252 "numvfs after the crash"

python3 - "$T/status.json" "$T/list.json" "$SYS" "$PF" <<'PY' || fail "status after the crash does not match sysfs"
import json, os, sys
status = json.load(open(sys.argv[1])); lst = json.load(open(sys.argv[2]))
root, pf = sys.argv[3], sys.argv[4]
drift = {(d["kind"], d["device"]) for d in status["drift"]}
assert ("interrupted", pf) in drift, drift
vfs = lst["pfs"][0]["vfs"]
assert len(vfs) == 252
unbound = 0
for v in vfs:
    link = os.path.join(root, "bus/pci/devices", v["address"], "driver")
    drv = os.path.basename(os.readlink(link)) if os.path.islink(link) else None
    assert v["managed"], v                  # recorded before any binding
    assert v["driver"] == drv, (v, drv)     # list shows sysfs
    if drv != "vfio-pci":
        unbound += 1
        assert ("driver-changed", v["address"]) in drift, v["address"]
    else:
        assert ("driver-changed", v["address"]) not in drift, v["address"]
assert unbound > 0, "the kill came too late to test anything"
print("# %d VFs bound before the kill, %d not; all reported" % (252 - unbound, unbound))
PY
ctl status | grep -q "interrupted" || fail "human status lacks the interrupted init"

# Running the init again completes it and clears the drift.
ctl init $PF 252 >/dev/null || fail "re-run of the interrupted init"
ctl_status --json > "$T/status.json"
expect_eq "$(jget 'len(d["drift"])' < "$T/status.json")" 0 "drift after completing the init"
for i in 0 100 251; do
        expect_eq "$(sys_driver "$(sys_vf $PF $i)")" vfio-pci "driver of VF $i"
done
echo "PASS"
