#!/bin/sh
# A policy naming an image, on pcisim's QDMA PF: svffd's own init
# reprograms the PF (numvfs 0, removed, flashed, rescanned, checked,
# bound, then the policy's count), records which file it flashed, and
# flashes again only when the policy names another image or the file
# changed. It never flashes behind assigned VFs, waits for another
# process's count write to end, refuses an image it cannot flash,
# leaves a failed flash "reprogram interrupted" without running the
# hook again, and a kill after the flash still records the image once
# the reprogram resumes.
#
# The hook is reconf-lib.sh's stand-in for a vendor's flash tool.
. "$(dirname "$0")/reconf-lib.sh"

DOMAINS="vm1"
define $DOMAINS
start_pcisim qdma
PF=0000:01:00.0
flash_hook_standin
echo "913f 8" > "$IMAGES/good.bit"
echo "913f 8 v2" > "$IMAGES/good2.bit"
echo "913f 8 touch" > "$IMAGES/touched.bit"
echo "fail" > "$IMAGES/fail.bit"
echo "kill" > "$IMAGES/kill.bit"
echo "913f 8" > "$T/outside.bit"
touch "$T/hook.log"

# conf IMAGE [HOOK [COUNT]]: the policy "fpga" of the PF, COUNT (default
# "numvfs": 4) from IMAGE.
conf() {
        svff_conf ", \"flash_hook\": ${2-\"$T/hook\"}, \"flash_image_dir\": \"$IMAGES\", \"flash_timeout_sec\": 5,
 \"policies\": { \"fpga\": { \"match\": { \"address\": \"$PF\" }, ${3-\"numvfs\": 4,} \"image\": \"$1\",
 \"reprogram_ids\": [\"10ee:913f\"] } }"
}
runs() { wc -l < "$T/hook.log"; }
sys_id() { cat "$SYS/bus/pci/devices/$1/device"; }
phase() { store_py 'j = d.get("journal") or {}; e = (j.get("pfs") or {}).get("'$PF'"); print(e["phase"] if e else None)'; }
stored_image() { store_py 'print((d["pfs"].get("'$PF'", {}).get("image") or {}).get("path"))'; }
stored_mtime() { store_py 'print((d["pfs"].get("'$PF'", {}).get("image") or {}).get("mtime_nsec"))'; }
refused() { ctl status --json | jget '[o["refused"] for o in d["owners"] if o["pf"] == "'$PF'"][0]'; }
idle() { ctl_status --wait --timeout 60 >/dev/null; }
# hup: svffd reads svff.conf again and applies the policies.
hup() {
        n=$(grep -c "Configuration reloaded" "$T/svffd.log" || true)
        kill -HUP "$SVFFD_PID"
        wait_for_s 20 hup_seen "$n" || fail "svffd did not reload its config"
}
hup_seen() { [ "$(grep -c "Configuration reloaded" "$T/svffd.log")" -gt "$1" ]; }
# hup_killed WHEN: the reload starts a reprogram that kills svffd WHEN.
hup_killed() {
        kill -HUP "$SVFFD_PID"
        wait_for_s 30 svffd_gone || fail "svffd was not killed $1"
        wait "$SVFFD_PID" 2>/dev/null || true
        SVFFD_PID=""
        varlink_check stop || fail "svffd's replies break its interface"
}
# flashed_state IMAGE WHAT: the PF as IMAGE leaves it, with the policy's
# 4 VFs on vfio-pci, no journal, and IMAGE recorded as flashed.
flashed_state() {
        expect_eq "$(sys_id $PF)" 0x913f "PF device id ($2)"
        expect_eq "$(sys_numvfs $PF)" 4 "numvfs ($2)"
        expect_eq "$(sys_driver $PF)" qdma-pf "PF driver ($2)"
        check_vfio $PF
        expect_eq "$(journal)" None "journal ($2)"
        expect_eq "$(stored_image)" "$1" "the image recorded ($2)"
}

note "start-up: the policy's image is flashed before its VFs exist"
conf "$IMAGES/good.bit"
start_connected
varlink_call io.svff.Debug.InjectUevent '{}' | grep -q InterfaceNotFound &&
        skip "svffd was built without --enable-fault-points"
idle || fail "svffd stayed busy after start-up"
expect_eq "$(runs)" 1 "hook runs at start-up"
grep -q "^hook $PF $IMAGES/good.bit [0-9]* removed$" "$T/hook.log" || fail "hook arguments: $(cat "$T/hook.log")"
flashed_state "$IMAGES/good.bit" "start-up"
expect_eq "$(refused)" None "refusal after start-up"
grep -q "Reprogram of PF $PF to 4 VFs for policy 'fpga'" "$T/svffd.log" || fail "the log does not say why it flashed"

note "a restart with that image in place flashes nothing"
stop_svffd || fail "svffd exit status"
start_connected
idle || fail "svffd stayed busy after its restart"
expect_eq "$(runs)" 1 "hook runs after a restart"
flashed_state "$IMAGES/good.bit" "restart"

note "the file changed: a reload flashes it again"
m=$(stored_mtime)
touch -d '+1 hour' "$IMAGES/good.bit"
hup
idle || fail "svffd stayed busy after the reload"
expect_eq "$(runs)" 2 "hook runs after the image changed"
flashed_state "$IMAGES/good.bit" "changed image"
[ "$(stored_mtime)" != "$m" ] || fail "the record still has the old file's mtime"

note "an image svffd cannot flash: refused by name, nothing touched"
for img in "$T/outside.bit" "$IMAGES/none.bit"; do
        conf "$img"
        hup
        idle || fail "svffd stayed busy"
        refused | grep -q "policy 'fpga' .* names an image svff cannot flash: .*$img" ||
                fail "refusal of $img: $(refused)"
        expect_eq "$(runs)" 2 "hook runs with $img"
        flashed_state "$IMAGES/good.bit" "refused $img"
done
conf "$IMAGES/good2.bit" null
hup
idle || fail "svffd stayed busy"
refused | grep -q "names image '$IMAGES/good2.bit', but no flash hook is configured: set 'flash_hook'" ||
        fail "refusal without a hook: $(refused)"
expect_eq "$(runs)" 2 "hook runs without a hook configured"

note "another image while a VF is assigned: refused, the operator's reprogram keeps the assignment"
VF0=$(sys_vf $PF 0)
ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach VF0"
before=$(assignments_snapshot)
conf "$IMAGES/good2.bit"
hup
idle || fail "svffd stayed busy"
refused | grep -q "names image '$IMAGES/good2.bit', which svff has not flashed to the PF as it is now (it holds '$IMAGES/good.bit'.*VFs of the PF are assigned; not applied: 'svffctl reprogram $PF $IMAGES/good2.bit'" ||
        fail "refusal with an assignment: $(refused)"
expect_eq "$(runs)" 2 "hook runs behind an assignment"
flashed_state "$IMAGES/good.bit" "refused behind an assignment"
expect_eq "$(assignments_snapshot)" "$before" "the assignment after the refusal"
ctl reprogram $PF "$IMAGES/good2.bit" >/dev/null 2> "$T/err" || fail "reprogram: $(cat "$T/err")"
expect_eq "$(runs)" 3 "hook runs after the operator's reprogram"
flashed_state "$IMAGES/good2.bit" "the operator's reprogram"
expect_eq "$(assignments_snapshot)" "$before" "the assignment after the reprogram"
hup
idle || fail "svffd stayed busy"
expect_eq "$(runs)" 3 "hook runs once the policy's image is in place"
expect_eq "$(refused)" None "refusal once the policy's image is in place"
ctl detach "$VF0" >/dev/null || fail "detach VF0"
stop_svffd || fail "svffd exit status"
DOMAINS=vm1 check_xml
start_connected
idle || fail "svffd stayed busy"

note "a failing flash: interrupted, its record dropped, never run again by itself"
conf "$IMAGES/fail.bit"
hup
wait_for_s 30 sh -c "[ \"\$(python3 -c 'import json; d=json.load(open(\"$STATE/store.json\")); print(((d.get(\"journal\") or {}).get(\"pfs\") or {}).get(\"$PF\", {}).get(\"phase\"))')\" = interrupted ]" ||
        fail "the failed flash is not journaled interrupted: $(phase)"
idle || fail "svffd stayed busy"
expect_eq "$(runs)" 4 "hook runs with the failing image"
expect_eq "$(stored_image)" None "the image recorded after a failed flash"
ctl_status --json > "$T/status.json" || fail "status"
# The PF is off the bus: the interrupted reprogram is its one drift,
# the policy's failure in it.
expect_eq "$(jget '[x["kind"] for x in d["drift"]]' < "$T/status.json")" "['interrupted']" "the drift"
stop_svffd || fail "svffd exit status"
start_connected
idle || fail "svffd stayed busy"
expect_eq "$(runs)" 4 "hook runs after a restart with the flash interrupted"
expect_eq "$(phase)" interrupted "journal phase after the restart"
conf "$IMAGES/good.bit"
hup
idle || fail "svffd stayed busy"
expect_eq "$(runs)" 4 "hook runs on a reload with the flash interrupted"
ctl reprogram $PF "$IMAGES/good.bit" >/dev/null 2> "$T/err" || fail "reprogram after the failure: $(cat "$T/err")"
flashed_state "$IMAGES/good.bit" "reprogram after the failure"
expect_eq "$(runs)" 5 "hook runs after the operator's reprogram"

note "svffd killed while the policy's hook runs: interrupted, the hook not run again"
conf "$IMAGES/kill.bit"
hup_killed "by the hook"
expect_eq "$(runs)" 6 "hook runs before the kill"
expect_eq "$(stored_image)" None "the image recorded while the hook ran"
start_connected
idle || fail "svffd stayed busy"
expect_eq "$(phase)" interrupted "journal phase after the kill"
expect_eq "$(runs)" 6 "hook runs after the restart"
conf "$IMAGES/good.bit"
ctl reprogram $PF "$IMAGES/good.bit" >/dev/null 2> "$T/err" || fail "reprogram after the kill: $(cat "$T/err")"
flashed_state "$IMAGES/good.bit" "reprogram after the kill"
runs_before=$(runs)

note "svffd killed after the policy's flash: the resumed reprogram records the image"
stop_svffd || fail "svffd exit status"
SVFF_FAULT=after-flash; export SVFF_FAULT
start_connected
unset SVFF_FAULT
idle || fail "svffd stayed busy"
conf "$IMAGES/good2.bit"
hup_killed "after the flash"
grep -qE "fault point 'after-flash' \([0-9]*\) reached, killing svffd" "$T/svffd.log" ||
        fail "svffd was not killed after the flash"
expect_eq "$(runs)" $((runs_before + 1)) "hook runs before the kill"
expect_eq "$(phase)" rescan "journal phase after the kill"
start_connected
wait_for_s 20 journal_none || fail "the reprogram did not resume: journal phase $(phase)"
idle || fail "svffd stayed busy"
flashed_state "$IMAGES/good2.bit" "resumed after the flash"
expect_eq "$(runs)" $((runs_before + 1)) "hook runs after the resumed reprogram"
stop_svffd || fail "svffd exit status"
start_connected
idle || fail "svffd stayed busy"
expect_eq "$(runs)" $((runs_before + 1)) "hook runs at the next start"

note "the policy's count changes with its image: both applied, the PF still the policy's"
conf "$IMAGES/good.bit" "\"$T/hook\"" '"numvfs": 2,'
hup
idle || fail "svffd stayed busy"
expect_eq "$(runs)" $((runs_before + 2)) "hook runs for the new count and image"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs of the policy's new count"
expect_eq "$(stored_image)" "$IMAGES/good.bit" "the image recorded with the new count"
owner() { ctl status --json | jget '[o["owner"] for o in d["owners"] if o["pf"] == "'$PF'"][0]'; }
expect_eq "$(owner)" "policy:fpga" "the owner after the policy's reprogram"

note "a policy with an image and no count: flashed keeping the count, and each change of the file flashed"
conf "$IMAGES/good2.bit" "\"$T/hook\"" ""
hup
idle || fail "svffd stayed busy"
expect_eq "$(runs)" $((runs_before + 3)) "hook runs for an image without a count"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs kept by a policy without a count"
expect_eq "$(stored_image)" "$IMAGES/good2.bit" "the image recorded without a count"
touch -d '+2 hours' "$IMAGES/good2.bit"
hup
idle || fail "svffd stayed busy"
expect_eq "$(runs)" $((runs_before + 4)) "hook runs once the file changed"
expect_eq "$(journal)" None "journal after the image-only policy"

note "the image changed while the hook ran: the PF is not recorded as holding it"
conf "$IMAGES/touched.bit"
hup
idle || fail "svffd stayed busy"
expect_eq "$(runs)" $((runs_before + 5)) "hook runs for an image changed under it"
expect_eq "$(journal)" None "journal after the flash of a changing image"
expect_eq "$(stored_image)" None "the image recorded after it changed under the hook"
grep -q "Image '$IMAGES/touched.bit' changed while the flash hook ran: PF $PF is not recorded as holding it" \
        "$T/svffd.log" || fail "svffd did not say the image changed under the hook"

note "another process writes the count when a reload names another image: the policy waits, then flashes"
runs_now=$(runs)
blocked() { log_count "Read of 'bus/pci/devices/$PF/sriov_numvfs' still blocked"; }
n_blocked=$(blocked)
write_held $PF 0
# svffd learns of another process's write by reading the count: past
# list_max_age_msec (1 s), a List takes a pass, which meets it.
sleep 1.5
ctl list > /dev/null || fail "list while the write is in the kernel"
[ "$(blocked)" -gt "$n_blocked" ] || fail "the list's pass did not meet the write"
conf "$IMAGES/good2.bit"
hup
refused_waits() { refused | grep -q "names image '$IMAGES/good2.bit'.*; waiting: Another process is writing the VF count of PF $PF"; }
wait_for refused_waits || fail "the policy's reprogram did not wait for the write: $(refused)"
sleep 2.5       # a look again, 2 s on
kill -0 $writer 2>/dev/null || fail "the write by hand ended before the checks: they did not meet it"
expect_eq "$(runs)" "$runs_now" "hook runs while another process writes the count"
release_vf
rc=0; wait $writer || rc=$?
BG_PIDS=""
expect_eq "$rc" 0 "the write by hand"
hook_ran_since() { [ "$(runs)" -gt "$1" ]; }
wait_for_s 30 hook_ran_since "$runs_now" ||
        fail "the policy's reprogram did not run once the write ended: $(refused)"
idle || fail "svffd stayed busy"
flashed_state "$IMAGES/good2.bit" "flashed once the write by hand ended"
expect_eq "$(runs)" $((runs_now + 1)) "hook runs once the write ended"

note "svffd stopped (SIGTERM) during the policy's reprogram at start-up: it ends at a safe point, the next start goes on"
stop_svffd || fail "svffd exit status"
conf "$IMAGES/good.bit"
# Not start_svffd: the stop may come before svffd answers a call.
SVFF_FAULT=after-flash SVFF_FAULT_ACTION=term \
        "$SVFFD" --socket "$SOCK" --state-dir "$STATE" --sysfs-root "$SYS" --config "$T/svff.conf" \
        --log-level debug >>"$T/svffd.log" 2>&1 &
SVFFD_PID=$!
rc=0; wait "$SVFFD_PID" || rc=$?
SVFFD_PID=""
expect_eq "$rc" 0 "svffd's exit status after a stop during the policy's reprogram"
grep -qE "fault point 'after-flash' \([0-9]*\) reached, sending SIGTERM" "$T/svffd.log" ||
        fail "the stop after the flash was never reached"
expect_eq "$(runs)" $((runs_before + 7)) "hook runs before the stop"
expect_eq "$(phase)" rescan "journal phase after the stop"
start_connected
wait_for_s 20 journal_none || fail "the reprogram did not resume after the stop: journal phase $(phase)"
idle || fail "svffd stayed busy"
flashed_state "$IMAGES/good.bit" "resumed after a stop"
expect_eq "$(runs)" $((runs_before + 7)) "hook runs after the resumed reprogram"
stop_svffd || fail "svffd exit status"
echo "PASS"
