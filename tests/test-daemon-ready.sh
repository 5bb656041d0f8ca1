#!/bin/sh
# READY=1 means the start-up policies have been applied, or have failed
# and say so in status: a notify peer (NOTIFY_SOCKET) reads the host and
# asks status at the moment READY=1 arrives. One policy's 16 VFs exist
# and are on vfio-pci by then; the other's init, past its numvfs
# deadline, is already a policy-failed drift, with no operation left.
# pcisim's per-VF enable latency (100 ms) stands in for a slow PF driver.
. "$(dirname "$0")/daemon-lib.sh"

OK=0000:10:00.0
SLOW=0000:20:00.0
cat > "$T/svff.conf" <<CONF
{
  "settle_msec": 50,
  "numvfs_timeout_sec": 2,
  "numvfs_timeout_per_vf_msec": 20,
  "policies": {
    "fits": { "match": { "address": "$OK" }, "numvfs": 16 },
    "too-slow": { "match": { "address": "$SLOW" }, "numvfs": 40 }
  }
}
CONF
start_pcisim scale
pcisim_ctl latency vf_enable 100000

# The peer: at READY=1, the VF count and drivers of $OK from sysfs, and
# svffd's status, before anything else can change.
python3 - "$T/notify.sock" "$T/ready.json" "$SYS" "$OK" "$SVFFCTL" "$SOCK" <<'PY' &
import json, os, socket, subprocess, sys
path, out, sysfs, pf, ctl, sock = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(60)
while "READY=1" not in s.recv(4096).decode().split("\n"):
    pass
dev = os.path.join(sysfs, "bus/pci/devices", pf)
n = int(open(os.path.join(dev, "sriov_numvfs")).read())
drivers = []
for i in range(n):
    vf = os.path.join(dev, "virtfn%d" % i, "driver")
    drivers.append(os.path.basename(os.readlink(vf)) if os.path.islink(vf) else None)
# exit 5: status answered, and says there is drift (the slow policy's)
st = subprocess.run([ctl, "--socket", sock, "status", "--json"], capture_output=True)
if st.returncode not in (0, 5):
    raise SystemExit("status exited %d: %s" % (st.returncode, st.stderr))
status = json.loads(st.stdout)
json.dump({"numvfs": n, "drivers": drivers, "status": status}, open(out, "w"))
PY
NOTIFY_PID=$!
BG_PIDS="$NOTIFY_PID"
wait_for test -S "$T/notify.sock" || fail "notify peer did not start"

mkdir -p "$STATE"
NOTIFY_SOCKET="$T/notify.sock" "$SVFFD" --socket "$SOCK" --state-dir "$STATE" --sysfs-root "$SYS" \
        --config "$T/svff.conf" --log-level debug >>"$T/svffd.log" 2>&1 &
SVFFD_PID=$!
wait "$NOTIFY_PID" || fail "no READY=1, or the peer failed"
BG_PIDS=""

note "at READY=1: the policy that fits is applied"
expect_eq "$(jget 'd["numvfs"]' < "$T/ready.json")" 16 "$OK's VFs at READY=1"
expect_eq "$(jget 'sorted(set(map(str, d["drivers"])))' < "$T/ready.json")" "['vfio-pci']" "$OK's VF drivers at READY=1"

note "at READY=1: the policy that failed says so"
expect_eq "$(jget 'd["status"]["operations"]' < "$T/ready.json")" "[]" "operations at READY=1"
expect_eq "$(jget '[x["kind"] for x in d["status"]["drift"] if x["device"] == "'$SLOW'"]' < "$T/ready.json")" \
        "['policy-failed']" "$SLOW's drift at READY=1"
jget '[o["refused"] for o in d["status"]["owners"] if o["pf"] == "'$SLOW'"][0]' < "$T/ready.json" |
        grep -q "numvfs_timeout_per_vf_msec" || fail "the failure does not name the budget: $(cat "$T/ready.json")"
# The slow write goes on in pcisim; let it end before the cleanup.
wait_for_s 20 sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$SLOW/sriov_numvfs')\" = 40 ]" || fail "the slow write never ended"
echo PASS
