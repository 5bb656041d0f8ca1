#!/bin/sh
# Auto-init on PF hot-add and hot-remove: pcisim's control channel
# changes the simulated host, io.svff.Debug.InjectUevent hands the event
# to the handler the udev monitor calls (libudev cannot watch a FUSE
# tree; real uevents are the VM tier's). A new PF gets its policy, a
# removed one stays recorded and shows as absent, a PF that comes back
# gets its recorded state, VF events are ignored.
. "$(dirname "$0")/daemon-lib.sh"
# every message about a device carries its journal fields (log_fields_check)
SVFF_LOG_FIELDS=1; export SVFF_LOG_FIELDS

PF=0000:01:00.0
HOT=0000:02:00.0

start_pcisim qdma
cat > "$T/svff.conf" <<'CONF'
{ "settle_msec": 50,
  "policies": { "hot": { "match": { "address": "0000:02:00.0" }, "numvfs": 3 } } }
CONF
start_svffd
varlink_call io.svff.Debug.InjectUevent '{"action": "add", "device": "0000:00:00.0"}' > "$T/probe.json"
grep -q '"error"' "$T/probe.json" && skip "svffd built without --enable-fault-points: no io.svff.Debug ($(cat "$T/probe.json"))"

inject() {
        varlink_call io.svff.Debug.InjectUevent "{\"action\": \"$1\", \"device\": \"$2\"}" > "$T/inject.json"
        grep -q '"error"' "$T/inject.json" && fail "inject $1 $2: $(cat "$T/inject.json")"
        return 0
}
settled() { "$SVFFCTL" --socket "$SOCK" status --json | grep -q '"operations":\[\]'; }

"$SVFFCTL" --socket "$SOCK" monitor --json > "$T/monitor.log" 2>&1 &
BG_PIDS="$!"
wait_for grep -q subscribed "$T/monitor.log" || fail "monitor did not subscribe"

# No policy for the scenario PF: an operator's init, recorded.
ctl init $PF 2 > /dev/null || fail "init $PF"

# Hot-add a second QDMA PF: its policy applies once it settles.
pcisim_ctl 'add-pf { "address": "0000:02:00.0", "vendor": "0x10ee", "device": "0x903f", "class": "0x120000", "driver": "qdma-pf", "vf_driver": "qdma-vf", "totalvfs": 16, "offset": 4, "stride": 1, "vf_device": "0xa03f", "iommu": "per-vf", "kind": "qdma" }'
[ -e "$SYS/bus/pci/devices/$HOT" ] || fail "pcisim did not add $HOT"
inject add $HOT
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$HOT/sriov_numvfs')\" = 3 ]" || fail "policy not applied on hot-add"
wait_for settled || fail "hot-add init did not finish"
for i in 0 1 2; do expect_eq "$(sys_driver "$(sys_vf $HOT $i)")" vfio-pci "driver of $HOT VF $i"; done
grep -q '"pf-added"' "$T/monitor.log" || fail "no pf-added event"
grep -q "policy 'hot'" "$T/monitor.log" || fail "init-started lacks the policy"

# Events for VFs (svff's own doing) and for repeated adds change nothing.
gen=$(ctl status --json | jget 'd["store"]["generation"]')
inject add "$(sys_vf $HOT 0)"
inject add $HOT
sleep 0.3
wait_for settled
expect_eq "$(ctl status --json | jget 'd["store"]["generation"]')" "$gen" "store generation after no-op events"

# A VF svff has no record of (made behind its back) is still a VF: its
# event arms no settle timer and costs no pass over the host.
printf 4 > "$SYS/bus/pci/devices/$HOT/sriov_numvfs" 2>/dev/null || {
        printf 0 > "$SYS/bus/pci/devices/$HOT/sriov_numvfs"
        printf 4 > "$SYS/bus/pci/devices/$HOT/sriov_numvfs"
}
OTHER=$(sys_vf $HOT 3)
[ -e "$SYS/bus/pci/devices/$OTHER/physfn" ] || fail "pcisim made no physfn link for $OTHER"
inject add "$OTHER"
inject bind "$OTHER"
sleep 0.3
grep -q "PCI $OTHER: .*applying its policy" "$T/svffd.log" && fail "an unrecorded VF's event armed a settle timer"
ctl init $HOT 3 > /dev/null || fail "init $HOT 3 after the out-of-band change"
wait_for settled

# Hot-remove the scenario PF: records kept, shown as absent, drift.
cp "$STATE/store.json" "$T/store.before"
# VFs off first, as 04-udev does on the real kernel: a PF removed with VFs
# enabled leaves them behind, and they would hold the addresses the
# restored VFs need.
printf 0 > "$SYS/bus/pci/devices/$PF/sriov_numvfs"
pcisim_ctl "remove $PF"
inject remove $PF
wait_for grep -q '"pf-removed"' "$T/monitor.log" || fail "no pf-removed event"
ctl list --json > "$T/list.json"
python3 - "$T/list.json" "$PF" <<'PY' || fail "absent PF not listed: $(cat "$T/list.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert [p["address"] for p in d["pfs"]] == ["0000:02:00.0"], d["pfs"]
absent = {a["address"]: a for a in d["absent"]}
a = absent[sys.argv[2]]
assert a["desired"] == {"numvfs": 2, "vf_driver": "vfio-pci"}, a
assert len(a["vfs"]) == 2, a
PY
ctl list | grep -q "^$PF  *PF .* absent\( \|$\)" || fail "human list lacks the absent PF: $(ctl list)"
ctl status --json | jget '[x["kind"] for x in d["drift"] if x["device"] == "'$PF'"]' | grep -q pf-missing ||
        fail "no pf-missing drift"
cmp -s "$T/store.before" "$STATE/store.json" || fail "the store changed on a remove"

# It comes back (rescan: numvfs 0): the recorded state is restored.
printf 1 > "$SYS/bus/pci/rescan"
expect_eq "$(sys_numvfs $PF)" 0 "numvfs after the rescan"
inject add $PF
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 2 ]" || fail "recorded state not restored on re-add"
wait_for settled || fail "re-add init did not finish"
for i in 0 1; do expect_eq "$(sys_driver "$(sys_vf $PF $i)")" vfio-pci "driver of $PF VF $i"; done
ctl list --json | jget 'len(d["absent"])' | grep -qx 0 || fail "PF still absent after re-add"
ctl status --json | jget 'len(d["drift"])' | grep -qx 0 || fail "drift left after re-add"

# Surprise removal of the hot-added PF.
pcisim_ctl "unplug $HOT"
inject remove $HOT
wait_for sh -c "\"$SVFFCTL\" --socket '$SOCK' list --json | grep -q '\"absent\":\\[{\"address\":\"$HOT\"'" ||
        fail "unplugged PF not absent: $(ctl list --json)"

# A remove for a device svff never knew is ignored.
inject remove 0000:07:00.0
stop_svffd TERM || fail "svffd exit status"
log_fields_check
echo "PASS"
