#!/bin/sh
# After a failed reconf of 252 VFs (the scale scenario), what svffctl
# says is true and gives one next step:
#   - the reconf's message claims no restart ("svffd stopped"), no
#     holder when no VF is held, and names one command to run next;
#   - status summarises the drift per PF (one line per kind, with a
#     count), not one line per VF, with one next step per PF that agrees
#     with the reconf's (never "init ... 252" beside "reconf ... 240");
#   - -v and --json give every drift, each with its PF;
#   - completing the reconf with the same command is not called a
#     recovery "after a restart";
#   - 240 VFs unbound behind svffd's back are one line, "240 VFs unbound
#     (expected vfio-pci)".
# pcisim's per-VF disable latency stands in for a slow PF driver.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:20:00.0
cat > "$T/svff.conf" <<'CONF'
{ "settle_msec": 50, "numvfs_timeout_sec": 1, "numvfs_timeout_per_vf_msec": 2 }
CONF
start_pcisim scale
start_svffd
ctl init $PF 252 > /dev/null || fail "init 252"

note "a reconf whose VF count write passes its deadline, with no VF held"
# 252 x 20 ms to remove the VFs, against 1 s + 252 x 2 ms.
pcisim_ctl latency vf_disable 20000
rc=0
ctl reconf $PF 240 > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "exit status of the failed reconf"
cat "$T/out" "$T/err" > "$T/screen"
for lie in "svffd stopped" "restart" "holder lets go" "probably still open" "detach it from its VM" \
           "0 do not" "svffctl init"; do
        grep -q "$lie" "$T/screen" && fail "the failed reconf says '$lie': $(cat "$T/screen")"
done
expect_eq "$(grep -o "svffctl reconf $PF 240" "$T/screen" | wc -l)" 1 "next steps in the reconf's message"

note "status: the drift per PF and kind, one next step"
# Status answers at once while the write runs, the PF as last read
# (changing); the drift below is what it shows once the write ended
# (reading sriov_numvfs here waits for it).
wait_for_s 30 write_ended $PF 0 || fail "the write never ended"
# and once svffd has read the PF again (its picture may be older)
seen_count() { ctl_status > "$T/status" 2>&1 && grep -q "^  $PF: numvfs-changed: " "$T/status"; }
wait_for seen_count || fail "no drift of the count: $(cat "$T/status")"
expect_eq "$ctl_status_rc" 5 "status's exit status with drift"
for lie in "svffd stopped" "restart" "held by a user" "svffctl init"; do
        grep -q "$lie" "$T/status" && fail "status says '$lie' after the failed reconf: $(cat "$T/status")"
done
grep -q "^  $PF: vf-missing: 252 VFs recorded but not present" "$T/status" ||
        fail "no count of the missing VFs: $(cat "$T/status")"
grep -q "^  $PF: numvfs-changed: 0 VFs, svff recorded 252" "$T/status" || fail "no count line: $(cat "$T/status")"
grep -q "^  $PF: interrupted: .*did not finish" "$T/status" || fail "no interrupted line: $(cat "$T/status")"
n=$(grep -c "^  $PF: " "$T/status")
[ "$n" -le 5 ] || fail "$n drift lines for one PF: $(cat "$T/status")"
expect_eq "$(grep -c "next step" "$T/status")" 1 "next steps in status"
grep -qE "^  $PF: next step: (once the write past its deadline ends \(stuck writes in status\), )?run 'svffctl reconf $PF 240' to complete it" "$T/status" ||
        fail "the next step: $(cat "$T/status")"

note "-v and --json: every drift"
ctl_status -v > "$T/status-v" || fail "status -v"
expect_eq "$(grep -c "^  vf-missing " "$T/status-v")" 252 "vf-missing lines with -v"
ctl_status --json > "$T/status.json" || fail "status --json"
expect_eq "$(jget 'sum(1 for x in d["drift"] if x["kind"] == "vf-missing" and x["pf"] == "'$PF'")' < "$T/status.json")" \
        252 "vf-missing drifts in JSON with their PF"
jget '[x["next_step"] for x in d["drift"] if x["kind"] == "interrupted"][0]' < "$T/status.json" |
        grep -q "run 'svffctl reconf $PF 240' to complete it$" || fail "interrupted's next step in JSON: $(cat "$T/status.json")"
rc=0; ctl list -v > /dev/null 2> "$T/err" || rc=$?
expect_eq "$rc" 2 "-v on list"

note "the same reconf completes it: no restart claimed"
pcisim_ctl latency vf_disable 0
ctl reconf $PF 240 > "$T/out" 2>&1 || fail "completing the reconf: $(cat "$T/out")"
ctl_status > "$T/status" || fail "status after completing"
grep -q "^Recovered: .*reconf of PF $PF resumed from its journal: " "$T/status" ||
        fail "the completion: $(cat "$T/status")"
grep -q "restart" "$T/status" && fail "status claims a restart: $(cat "$T/status")"
ctl_status --json > "$T/status.json"
expect_eq "$(jget 'd["recovered"][0]["after_restart"]' < "$T/status.json")" False "after_restart"

note "240 VFs unbound behind svffd's back: one line"
for vf in $(ls "$SYS/bus/pci/drivers/vfio-pci" | grep "^0000:20:"); do
        printf '%s' "$vf" > "$SYS/bus/pci/drivers/vfio-pci/unbind"
done
# svffd sees it once its picture is list_max_age_msec (1 s) old; a
# picture taken while the loop above still ran counts only some of them.
seen_unbound() {
        ctl_status > "$T/status" &&
                grep -q "^  $PF: driver-changed: 240 VFs unbound (expected vfio-pci)$" "$T/status"
}
wait_for seen_unbound || fail "no summary of the 240 unbound VFs: $(cat "$T/status")"
n=$(grep -c "^  $PF: " "$T/status")
[ "$n" -le 2 ] || fail "$n drift lines for one PF: $(cat "$T/status")"

note "class drift of every VF of a PF: one line with a count, one next step"
QPF=0000:10:00.0
cat > "$T/svff.conf" <<CONF
{ "settle_msec": 50, "numvfs_timeout_sec": 1, "numvfs_timeout_per_vf_msec": 2,
  "policies": { "q": { "match": { "address": "$QPF" }, "numvfs": 4,
                       "qdma": { "qmax": 256, "vf_qmax": 8 } } } }
CONF
kill -HUP "$SVFFD_PID"
wait_for_s 30 sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$QPF/sriov_numvfs')\" = 4 ]" || fail "the policy's init of $QPF"
ctl_status --wait --timeout 30 > /dev/null || fail "status --wait after the policy's init"
# Another queue count behind svffd's back: every VF's class state drifts.
printf 300 > "$SYS/bus/pci/devices/$QPF/qdma/qmax"
seen_class() {
        ctl_status > "$T/status" &&
                grep -q "^  $QPF: class-drift: 4 VFs differ from what their device class set up$" "$T/status"
}
wait_for seen_class || fail "no count of the class drift of the 4 VFs: $(cat "$T/status")"
grep -q "^  $QPF: next step: run 'svffctl init $QPF 4' to provision the PF's VFs again\.$" "$T/status" ||
        fail "no single next step for the class drift: $(cat "$T/status")"
expect_eq "$(grep -c "^  0000:10:[0-9a-f][0-9a-f]\.[0-7]: " "$T/status")" 2 "drift lines about $QPF and its VFs"
ctl status --json > "$T/status.json" || [ $? = 5 ] || fail "status --json"
expect_eq "$(jget "sorted(set((x['pf'], x['next_step']) for x in d['drift'] if x['kind'] == 'class-drift'))" < "$T/status.json")" \
        "[('$QPF', \"run 'svffctl init $QPF 4' to provision the PF's VFs again\")]" "class drifts' PF and next step in JSON"

note "status reads the device classes at most once per list_max_age_msec; a change of svffd's own is seen at once"
cat > "$T/svff.conf" <<CONF
{ "settle_msec": 50, "numvfs_timeout_sec": 1, "numvfs_timeout_per_vf_msec": 2, "list_max_age_msec": 60000,
  "policies": { "q": { "match": { "address": "$QPF" }, "numvfs": 4,
                       "qdma": { "qmax": 256, "vf_qmax": 8 } } } }
CONF
kill -HUP "$SVFFD_PID"
max_age() { "$SVFFCTL" --socket "$SOCK" status --json 2>/dev/null | jget 'd["snapshot_max_age_usec"]'; }
reloaded() { [ "$(max_age)" = 60000000 ]; }
wait_for reloaded || fail "the reload to list_max_age_msec 60000: $(max_age)"
reads() { grep -c "Reading the device-class state" "$T/svffd.log"; }
before=$(reads)
i=0
while [ $i -lt 20 ]; do
        ctl_status > "$T/status.$i" || [ $? = 5 ] || fail "status $i"
        grep -q "class-drift" "$T/status.$i" || fail "status $i lost the class drift: $(cat "$T/status.$i")"
        i=$((i + 1))
done
n=$(( $(reads) - before ))
note "20 status calls read the device classes $n time(s)"
[ "$n" -le 1 ] || fail "20 status calls within list_max_age_msec read the device classes $n times"
ctl init $QPF 4 > "$T/out" 2>&1 || fail "init $QPF 4 to provision it again: $(cat "$T/out")"
ctl_status > "$T/status" || [ $? = 5 ] || fail "status after the init"
grep -q "class-drift" "$T/status" && fail "status shows the class drift the init repaired: $(cat "$T/status")"

note "QDMA VFs the host drives (qdma-vf by policy), none of their queues kept: no class drift; list shows their queues as read"
# On vfio-pci the host cannot read a VF's count: none shown.
expect_eq "$(ctl list --json $QPF | jget "[v['qdma_qmax'] for v in d['pfs'][0]['vfs']]")" \
        "[None, None, None, None]" "the queue counts of $QPF's VFs on vfio-pci"
cat > "$T/svff.conf" <<CONF
{ "settle_msec": 50, "numvfs_timeout_sec": 1, "numvfs_timeout_per_vf_msec": 2,
  "policies": { "q": { "match": { "address": "$QPF" }, "numvfs": 4, "vf_driver": "qdma-vf" } } }
CONF
n=$(grep -c 'Configuration reloaded' "$T/svffd.log")
kill -HUP "$SVFFD_PID"
wait_for sh -c "[ \$(grep -c 'Configuration reloaded' '$T/svffd.log') -gt $n ]" || fail "the reload to vf_driver qdma-vf"
ctl init $QPF --policy > "$T/out" 2>&1 || fail "init --policy with qdma-vf: $(cat "$T/out")"
for i in 0 1 2 3; do
        v=$(sys_vf $QPF $i)
        expect_eq "$(sys_driver "$v")" qdma-vf "VF $i's driver by the policy"
        # the host's qdma-vf asked the PF for its queues when it probed
        expect_eq "$(cat "$SYS/bus/pci/devices/$v/qdma/qmax")" 8 "VF $i's queue count as its driver asked"
done
# (the other PF's unbound VFs above still drift)
ctl status --json > "$T/status.json" || [ $? = 5 ] || fail "status --json after the init to qdma-vf"
expect_eq "$(jget "[(x['kind'], x['message']) for x in d['drift'] if (x.get('pf') or x.get('device') or '').startswith('0000:10:')]" \
        < "$T/status.json")" "[]" "drift of $QPF, its VFs on qdma-vf by policy"
# The queues each driver holds, read now, not the 0 kept; then VF 0's
# driver takes 16 (pcisim: its qdma-vf asking the PF), which list shows
# once its snapshot is past list_max_age_msec.
expect_eq "$(ctl list --json $QPF | jget "[(v['qdma_qmax'], v['class']['summary']) for v in d['pfs'][0]['vfs']]")" \
        "[(8, 'qmax 8'), (8, 'qmax 8'), (8, 'qmax 8'), (8, 'qmax 8')]" "the queue counts of $QPF's VFs on qdma-vf"
pcisim_ctl "qmax $(sys_vf $QPF 0) 16"
expect_eq "$(cat "$SYS/bus/pci/devices/$(sys_vf $QPF 0)/qdma/qmax")" 16 "VF 0's queue count after its driver asked for 16"
sixteen() { ctl list $QPF | grep -qE "^$(sys_vf $QPF 0) .* qmax 16\$"; }
wait_for sixteen || fail "list does not show VF 0's 16 queues: $(ctl list $QPF)"
ctl list --json $QPF | jget "d['pfs'][0]['vfs'][0]['class']['description']" | grep -q "^16 queues held by its driver qdma-vf now; 0 queues kept" ||
        fail "VF 0's class description: $(ctl list --json $QPF | jget "d['pfs'][0]['vfs'][0]['class']")"
echo PASS
