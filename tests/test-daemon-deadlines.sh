#!/bin/sh
# Deadlines that scale with the work, and a start-up that says what it did:
#   - a numvfs write may take numvfs_timeout_sec plus
#     numvfs_timeout_per_vf_msec per VF: 16 VFs at 120 ms each pass a 1 s
#     base with a 150 ms per-VF budget;
#   - past that budget the init fails naming both keys and the one to
#     raise; reconf --dry-run shows the deadlines it would run under;
#   - a reconf's binding runs under bind_timeout_sec plus
#     bind_timeout_per_vf_msec per VF, the deadline its dry run shows;
#   - a policy whose init fails at start-up is in status: as drift
#     ("policy-failed", never "Drift: none") and as the policy not
#     applied.
# pcisim's per-VF enable latency stands in for a slow PF driver.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
cat > "$T/svff.conf" <<'CONF'
{
  "settle_msec": 50,
  "numvfs_timeout_sec": 1,
  "numvfs_timeout_per_vf_msec": 150,
  "bind_timeout_sec": 5,
  "bind_timeout_per_vf_msec": 500
}
CONF
"$SVFFCTL" config check "$T/svff.conf" > "$T/out" 2>&1 || fail "the deadline keys are refused: $(cat "$T/out")"

start_pcisim qdma
pcisim_ctl latency vf_enable 120000
start_svffd

note "16 VFs at 120 ms each: over the base, within base + per-VF budget"
ctl init $PF 16 > "$T/out" 2>&1 || fail "init 16 with a scaled deadline: $(cat "$T/out")"
expect_eq "$(sys_numvfs $PF)" 16 "numvfs after the scaled init"

# 16 -> 0: 1 s + 16 x 150 ms; 0 -> 20: 1 s + 20 x 150 ms; binding 5 s + 20 x 500 ms.
note "the reconf plan shows the deadlines it would run under"
ctl reconf --dry-run $PF 20 --json > "$T/plan.json" 2> "$T/err" || true
jget 'd["deadlines"]["numvfs_msec"], d["deadlines"]["bind_msec"], d["totalvfs"]' < "$T/plan.json" |
        grep -qx "7400 15000 252" || fail "the plan's deadlines: $(cat "$T/plan.json" "$T/err")"

note "20 VFs at 300 ms each: past 1 s + 20 x 150 ms, and the message says so"
pcisim_ctl latency vf_enable 300000
rc=0
ctl init $PF 20 > "$T/out" 2> "$T/err" || rc=$?
[ "$rc" != 0 ] || fail "init 20 at 300 ms per VF passed a 4 s budget"
grep -q "numvfs_timeout_sec 1 s + numvfs_timeout_per_vf_msec 150 ms x 20 VFs" "$T/err" ||
        fail "the timeout does not name the budget: $(cat "$T/err")"
grep -q "raise numvfs_timeout_per_vf_msec" "$T/err" || fail "the timeout does not say what to raise: $(cat "$T/err")"
# The write goes on in pcisim; let it end before the next step.
wait_for_s 20 sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 20 ]" || fail "the write never ended"
stop_svffd || true
# A fresh store: the PF's count now belongs to the operator above.
rm -rf "$STATE"

note "a policy whose init fails at start-up: drift, refusal and event"
cat > "$T/svff.conf" <<'CONF'
{
  "settle_msec": 50,
  "numvfs_timeout_sec": 1,
  "numvfs_timeout_per_vf_msec": 10,
  "policies": { "fpga": { "match": { "id": "10ee:903f" }, "numvfs": 8 } }
}
CONF
start_svffd
wait_for_s 30 sh -c "\"$SVFFCTL\" --socket '$SOCK' status --json | grep -q '\"operations\":\\[\\]'" ||
        fail "the start-up init did not end"
ctl_status --json > "$T/status.json"
jget '[x["kind"] for x in d["drift"] if x["device"] == "'$PF'"]' < "$T/status.json" | grep -q "policy-failed" ||
        fail "a failed policy init is not drift: $(cat "$T/status.json")"
jget '[o["refused"] for o in d["owners"] if o["pf"] == "'$PF'"][0]' < "$T/status.json" | grep -q "init failed" ||
        fail "a failed policy init is not the policy not applied: $(cat "$T/status.json")"
ctl_status > "$T/status.txt"
grep -q "Drift: *none" "$T/status.txt" && fail "status says no drift after a failed policy: $(cat "$T/status.txt")"
grep -q "policy-failed" "$T/status.txt" || fail "status text lacks the failed policy: $(cat "$T/status.txt")"
grep -q "Init of PF $PF by policy 'fpga'.* failed" "$T/svffd.log" || fail "the log does not say the policy failed"
stop_svffd || true
rm -rf "$STATE"

note "a reconf binds its VFs under the budget its plan shows"
cat > "$T/svff.conf" <<'CONF'
{
  "settle_msec": 50,
  "bind_timeout_sec": 1,
  "bind_timeout_per_vf_msec": 100
}
CONF
pcisim_ctl latency vf_enable 0
start_svffd

note "an init binds under the same budget, and each VF past it says how many were bound"
# 6 VFs at 600 ms each: past 1 s + 6 x 100 ms. However many made it,
# every VF not tried in time gives the same count, the VFs on vfio-pci.
lines=$(wc -l < "$T/svffd.log")
pcisim_ctl latency probe 600000
rc=0
ctl init $PF 6 > "$T/out" 2> "$T/err" || rc=$?
pcisim_ctl latency probe 0
[ "$rc" != 0 ] || fail "an init binding 6 VFs at 600 ms each passed a 1.6 s budget: $(cat "$T/out")"
grep -q "bind_timeout_sec 1 s + bind_timeout_per_vf_msec 100 ms x 6 VFs" "$T/err" ||
        fail "the init's bind timeout does not name the budget: $(cat "$T/err")"
bound=0
for i in 0 1 2 3 4 5; do
        [ "$(sys_driver "$(sys_vf $PF $i)")" != vfio-pci ] || bound=$((bound + 1))
done
expect_eq "$(tail -n +"$((lines + 1))" "$T/svffd.log" | grep -o '[0-9]* were bound' | sort -u | tr '\n' ' ')" \
        "$bound were bound " "what each VF past the init's budget says was bound"

ctl init $PF 4 > "$T/out" 2>&1 || fail "init 4: $(cat "$T/out")"
ctl reconf --dry-run $PF 6 --json > "$T/plan.json" 2> "$T/err" ||
        fail "reconf --dry-run: $(cat "$T/plan.json" "$T/err")"
expect_eq "$(jget 'd["deadlines"]["bind_msec"]' < "$T/plan.json")" 1600 "the plan's bind deadline for 6 VFs"
# 6 VFs at 600 ms each: past 1 s + 6 x 100 ms.
pcisim_ctl latency probe 600000
rc=0
ctl reconf $PF 6 > "$T/out" 2> "$T/err" || rc=$?
[ "$rc" != 0 ] || fail "a reconf binding 6 VFs at 600 ms each passed a 1.6 s budget: $(cat "$T/out")"
grep -q "bind_timeout_sec 1 s + bind_timeout_per_vf_msec 100 ms x 6 VFs" "$T/err" ||
        fail "the reconf's bind timeout does not name the budget: $(cat "$T/err")"
pcisim_ctl latency probe 0
exit 0
