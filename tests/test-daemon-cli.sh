#!/bin/sh
# svffd + svffctl against pcisim: list, init, status, release and monitor,
# each checked against what the simulated sysfs shows; usage errors, daemon
# errors and an unreachable daemon give their documented exit codes; drift
# made behind svffd's back shows in status after a restart.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
start_pcisim qdma
start_svffd

# list: the PF as sysfs shows it
ctl list --json > "$T/list.json"
expect_eq "$(jget 'len(d["pfs"])' < "$T/list.json")" 1 "PF count"
expect_eq "$(jget 'd["pfs"][0]["address"]' < "$T/list.json")" "$PF" "PF address"
expect_eq "$(jget 'd["pfs"][0]["totalvfs"]' < "$T/list.json")" "$(cat "$SYS/bus/pci/devices/$PF/sriov_totalvfs")" "totalvfs"
expect_eq "$(jget 'd["pfs"][0]["numvfs"]' < "$T/list.json")" 0 "numvfs before init"
expect_eq "$(jget 'd["pfs"][0]["driver"]' < "$T/list.json")" "$(sys_driver $PF)" "PF driver"
ctl list | grep -q "^$PF .*0/252" || fail "human list lacks the PF row"

# init 4: sysfs has 4 VFs on vfio-pci, list matches it field by field
ctl init $PF 4 > "$T/init.out" || fail "init failed"
grep -q "4 VFs on vfio-pci" "$T/init.out" || fail "init output: $(cat "$T/init.out")"
expect_eq "$(sys_numvfs $PF)" 4 "sysfs numvfs after init"
ctl list --json > "$T/list.json"
for i in 0 1 2 3; do
        vf=$(sys_vf $PF $i)
        expect_eq "$(sys_driver "$vf")" vfio-pci "sysfs driver of $vf"
        expect_eq "$(jget "d['pfs'][0]['vfs'][$i]['address']" < "$T/list.json")" "$vf" "VF $i address"
        expect_eq "$(jget "d['pfs'][0]['vfs'][$i]['index']" < "$T/list.json")" "$i" "VF $i index"
        expect_eq "$(jget "d['pfs'][0]['vfs'][$i]['driver']" < "$T/list.json")" vfio-pci "VF $i driver in list"
        expect_eq "$(jget "d['pfs'][0]['vfs'][$i]['iommu_group']" < "$T/list.json")" "$(sys_group "$vf")" "VF $i group"
        expect_eq "$(jget "d['pfs'][0]['vfs'][$i]['assigned_to']" < "$T/list.json")" None "VF $i assigned_to"
done
expect_eq "$(jget 'd["pfs"][0]["numvfs"]' < "$T/list.json")" 4 "numvfs in list"

# status: store generation moved, nothing in progress, no drift
ctl_status --json > "$T/status.json"
[ "$(jget 'd["store"]["generation"]' < "$T/status.json")" -ge 1 ] || fail "store generation did not advance"
expect_eq "$(jget 'len(d["operations"])' < "$T/status.json")" 0 "operations"
expect_eq "$(jget 'len(d["drift"])' < "$T/status.json")" 0 "drift"
ctl status | grep -q "^Drift: *none" || fail "human status lacks 'Drift: none'"

# monitor: a re-init to 8 (through 0) streams its events in order
"$SVFFCTL" --socket "$SOCK" monitor --json > "$T/monitor.out" &
MON=$!
BG_PIDS="$MON"
wait_for grep -q subscribed "$T/monitor.out" || fail "monitor did not subscribe"
ctl init $PF 8 >/dev/null || fail "re-init to 8 failed"
expect_eq "$(sys_numvfs $PF)" 8 "sysfs numvfs after re-init"
wait_for grep -q init-done "$T/monitor.out" || fail "monitor missed init-done"
python3 - "$T/monitor.out" <<'PY' || fail "monitor stream: $(cat "$T/monitor.out")"
import json, sys
ev = [json.loads(l)["event"] for l in open(sys.argv[1])]
names = [e for e in ev if e not in ("subscribed",)]
assert names[0] == "init-started", names
assert names[1] == "numvfs-set", names
# The PF's device class (qdma) sets up each VF after the count and
# before any VF is bound.
prov = [i for i, n in enumerate(names) if n == "vf-provisioned"]
bound = [i for i, n in enumerate(names) if n == "vf-bound"]
assert len(prov) == 8 and len(bound) == 8, names
assert max(prov) < min(bound), names
assert names[-1] == "init-done", names
PY
python3 - "$T/monitor.out" <<'PY' || fail "monitor progress counts"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
done = [e["done"] for e in ev if e["event"] == "vf-bound"]
assert done == list(range(1, 9)), done
PY
kill $MON; BG_PIDS=""

# release: a VF svffd made had no driver before it, so it goes to the
# kernel's choice (pcisim's qdma-vf), never left unbound; its PF's
# autoprobe, off as svffd keeps it, is off again after that probe.
VF1=$(sys_vf $PF 1)
ctl release "$VF1" > "$T/release.out" || fail "release failed"
expect_eq "$(sys_driver "$VF1")" qdma-vf "driver of released VF"
expect_eq "$(cat "$SYS/bus/pci/devices/$VF1/driver_override")" "(null)" "override of released VF"
expect_eq "$(cat "$SYS/bus/pci/devices/$PF/sriov_drivers_autoprobe")" 0 "PF autoprobe after the release"
grep -q "VF $VF1 had no driver before svffd; re-probed, it is on qdma-vf" "$T/release.out" ||
        fail "release does not say where the VF went: $(cat "$T/release.out")"
ctl list --json > "$T/list.json"
expect_eq "$(jget "d['pfs'][0]['vfs'][1]['managed']" < "$T/list.json")" False "released VF still managed"
rc=0; ctl release "$VF1" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "release of an unmanaged VF"
grep -q "$VF1" "$T/err" || fail "error does not name the VF: $(cat "$T/err")"

# daemon-reported errors: exit 1 with the device and the way out
rc=0; ctl init $PF 300 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init beyond totalvfs"
grep -q "252" "$T/err" || fail "TooManyVfs message: $(cat "$T/err")"
rc=0; ctl init 0000:09:00.0 2 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init of a missing device"
grep -q "0000:09:00.0" "$T/err" || fail "NoSuchDevice message: $(cat "$T/err")"
rc=0; ctl init 0000:00:00.0 2 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init of a non-SR-IOV device"

# usage errors: exit 2, before talking to svffd
for args in "" "frobnicate" "init" "init $PF" "init $PF lots" "init nonsense 4 extra" "release" "status extra" "list --driver x"; do
        rc=0; ctl $args >/dev/null 2>&1 || rc=$?
        expect_eq "$rc" 2 "usage error for 'svffctl $args'"
done
for c in list status init release monitor; do
        ctl $c --help | grep -q "^Usage: svffctl $c" || fail "$c --help"
done
# help: a line per command with what it does, within 80 columns; 'help
# COMMAND' is 'COMMAND --help'.
ctl help > "$T/help" || fail "svffctl help"
for c in list status init release monitor attach detach pause unpause reconf reprogram config help; do
        grep -qE "^  $c +[A-Z].{20,}$" "$T/help" || fail "help: no line saying what $c does: $(cat "$T/help")"
done
awk 'length > 80 { bad = 1 } END { exit bad }' "$T/help" || fail "help: a line wider than 80 columns: $(cat "$T/help")"
for c in list reconf; do
        expect_eq "$(ctl help $c | cksum)" "$(ctl $c --help | cksum)" "'help $c' and '$c --help'"
done
rc=0; ctl help frobnicate 2>/dev/null || rc=$?
expect_eq "$rc" 2 "help of an unknown command"
# A malformed address is a usage error (svffctl(8), EXIT STATUS).
rc=0; ctl init bogus 4 2> "$T/err" || rc=$?
expect_eq "$rc" 2 "init with a bad address"
grep -q "bogus" "$T/err" || fail "bad address not named: $(cat "$T/err")"

# unreachable daemon: exit 3
rc=0; "$SVFFCTL" --socket "$T/nonexistent.sock" list 2> "$T/err" || rc=$?
expect_eq "$rc" 3 "unreachable daemon"
rc=0; SVFF_SOCKET="$T/nonexistent.sock" "$SVFFCTL" status 2>/dev/null || rc=$?
expect_eq "$rc" 3 "unreachable daemon through SVFF_SOCKET"

# SIGTERM: clean exit
stop_svffd TERM || fail "svffd exited non-zero on SIGTERM"

# Drift behind svffd's back: unbind a VF, then restart.
VF2=$(sys_vf $PF 2)
printf '%s' "$VF2" > "$SYS/bus/pci/drivers/vfio-pci/unbind"
start_svffd
ctl_status --json > "$T/status.json"
python3 - "$T/status.json" "$VF2" <<'PY' || fail "drift not reported: $(cat "$T/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
kinds = {(x["kind"], x["device"]) for x in d["drift"]}
assert ("driver-changed", sys.argv[2]) in kinds, kinds
PY
ctl status | grep -q "driver-changed" || fail "human status lacks the drift"
# The stored fact is kept: the VF is still managed, release still works.
ctl release "$VF2" >/dev/null || fail "release of a drifted VF"

# A PF that disappears: every record is kept and reported, none dropped.
stop_svffd TERM || fail "svffd exit status"
cp "$STATE/store.json" "$T/store.before"
n_records=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['vfs']))" "$STATE/store.json")
# VFs off first: removing a PF with VFs enabled leaves them behind on the
# kernel (and on pcisim), holding the addresses its VFs need when it is
# back, and no init could restore the count then.
printf 0 > "$SYS/bus/pci/devices/$PF/sriov_numvfs"
pcisim_ctl "remove $PF"
start_svffd
ctl_status --json > "$T/status.json"
python3 - "$T/status.json" "$PF" "$n_records" <<'PY' || fail "PF-gone drift: $(cat "$T/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
kinds = [(x["kind"], x["device"]) for x in d["drift"]]
assert ("pf-missing", sys.argv[2]) in kinds, kinds
assert sum(1 for k, _ in kinds if k == "vf-missing") == int(sys.argv[3]), kinds
PY
ctl list --json | jget 'len(d["pfs"])' | grep -qx 0 || fail "list shows a removed PF"
cmp -s "$T/store.before" "$STATE/store.json" || fail "store changed although nothing was done"

# It comes back (rescan: numvfs 0): the count differs from the recorded one.
printf 1 > "$SYS/bus/pci/rescan"
stop_svffd TERM
start_svffd
ctl_status --json > "$T/status.json"
python3 - "$T/status.json" "$PF" <<'PY' || fail "PF-back drift: $(cat "$T/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
by = {(x["kind"], x["device"]): x for x in d["drift"]}
nc = by[("numvfs-changed", sys.argv[2])]
assert nc["expected"] == "8" and nc["actual"] == "0", nc
PY
ctl init $PF 8 >/dev/null || fail "init restoring the recorded count"
ctl status --json | jget 'len(d["drift"])' | grep -qx 0 || fail "drift left after restoring"

# A shrink: one log line for the records it drops, however many, and an
# event per VF for Monitor.
"$SVFFCTL" --socket "$SOCK" monitor --json > "$T/shrink.out" &
BG_PIDS=$!
wait_for grep -q subscribed "$T/shrink.out" || fail "monitor did not subscribe"
vf3=$(sys_vf $PF 3); vf7=$(sys_vf $PF 7)
ctl init $PF 3 >/dev/null || fail "init 3"
forgotten() { [ "$(grep -c '"vf-forgotten"' "$T/shrink.out")" = 5 ]; }
wait_for forgotten || fail "vf-forgotten events of the shrink: $(grep -c vf-forgotten "$T/shrink.out")"
kill $BG_PIDS; BG_PIDS=""
expect_eq "$(grep -c "no longer exist" "$T/svffd.log")" 1 "log lines for the records a shrink from 8 to 3 drops"
grep -q "5 VFs ($vf3 to $vf7) no longer exist after setting 3 VFs on $PF; dropping their records" "$T/svffd.log" ||
        fail "the shrink's log line: $(grep "no longer exist" "$T/svffd.log")"

echo "PASS"
