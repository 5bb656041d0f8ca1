#!/bin/sh
# svff.conf's manage list against the real programs: 'svffctl config
# check' refuses a bad rule by line; svffd lists a PF outside the list
# read-only with the reason (List's unmanaged, the ALLOWED column), applies
# no policy to it, and refuses every change to it or its VFs (Init,
# Reconf and its dry run, Reprogram, Attach by PF and by VF, Release, Detach, Pause,
# Unpause) with NotAllowed naming the rules; PFs inside keep working; a
# reload to "all" manages everything again; a reload that puts a PF with
# an assignment outside the list names that assignment; a hot-added PF
# whose count another process writes is refused with that write as the
# reason, at once, and reads answer meanwhile.
. "$(dirname "$0")/daemon-lib.sh"

QDMA=0000:01:00.0
NVME=0000:00:04.0
NIC=0000:03:00.0
X540=0000:05:00.0

printf '{\n  "manage": [\n    "class:qdma", "class:gpu" ] }\n' > "$T/bad.conf"
rc=0
"$SVFFCTL" config check "$T/bad.conf" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "config check of a bad manage rule"
grep -qF "$T/bad.conf:2: key 'manage' item 1: No device class 'gpu'" "$T/err" ||
        fail "config check of a bad rule: $(cat "$T/err")"

cat > "$T/svff.conf" <<'CONF'
{
  "settle_msec": 50,
  "manage": ["class:qdma", "0000:00:04.0"],
  "policies": {
    "nic": { "match": { "id": "8086:1521" }, "numvfs": 3 }
  }
}
CONF
"$SVFFCTL" config check "$T/svff.conf" > /dev/null || fail "a valid manage list refused"
"$SVFFCTL" config check --effective "$T/svff.conf" --json > "$T/eff.json"
expect_eq "$(jget 'd["manage"]' < "$T/eff.json")" "['class:qdma', '0000:00:04.0']" "effective manage"

start_pcisim mixed
start_svffd
settled() { "$SVFFCTL" --socket "$SOCK" status --json | grep -q '"operations":\[\]'; }
wait_for settled || fail "start-up did not settle"

# Listed, read-only, with the reason; the policy of the NIC not applied.
ctl list --json > "$T/list.json"
reason="not in manage [class:qdma, 0000:00:04.0] ($T/svff.conf:3)"
unmanaged() { jget "[p['unmanaged'] for p in d['pfs'] if p['address'] == '$1'][0]" < "$T/list.json"; }
expect_eq "$(unmanaged $QDMA)" None "QDMA PF (class:qdma)"
expect_eq "$(unmanaged $NVME)" None "NVMe PF (by address)"
expect_eq "$(unmanaged $NIC)" "$reason" "NIC PF"
expect_eq "$(unmanaged $X540)" "$reason" "X540 PF"
COLUMNS=200 ctl list > "$T/list.txt"
head -n 1 "$T/list.txt" | grep -q "ALLOWED$" || fail "no ALLOWED column: $(cat "$T/list.txt")"
grep -q "^$NIC .*not in manage \[class:qdma, 0000:00:04.0\]" "$T/list.txt" || fail "NIC row: $(cat "$T/list.txt")"
grep -q "^$QDMA .* yes$" "$T/list.txt" || fail "QDMA row: $(cat "$T/list.txt")"
expect_eq "$(sys_numvfs $NIC)" 0 "NIC numvfs: its policy must not be applied"
grep -q "PF $NIC is not in manage .*: no policy or recorded state is applied to it" "$T/svffd.log" ||
        fail "the log does not say why the NIC's policy is skipped"

# check_refused CMD...: NotAllowed, naming the device and the rules.
check_refused() {
        dev=$1
        shift
        rc=0
        ctl --json "$@" > "$T/out" 2> "$T/err" || rc=$?
        expect_eq "$rc" 1 "exit status of '$*'"
        expect_eq "$(jget 'd["error"], d["parameters"]["device"], d["parameters"]["rules"]' < "$T/err")" \
                "io.svff.NotAllowed $dev class:qdma, 0000:00:04.0" "error of '$*'"
        grep -q "svff.conf:3) allows only class:qdma, 0000:00:04.0" "$T/err" || fail "message of '$*': $(cat "$T/err")"
}
check_refused $NIC init $NIC 2
check_refused $X540 init $X540 1
check_refused $NIC reconf $NIC 2
check_refused $NIC reconf $NIC 2 --dry-run
check_refused $NIC reprogram $NIC /var/lib/svff/images/x.bit
check_refused $NIC reprogram $NIC /var/lib/svff/images/x.bit --dry-run
check_refused $NIC attach --pf $NIC some-domain
# Its VFs, made behind svffd's back: every call naming one is refused too.
echo 2 > "$SYS/bus/pci/devices/$NIC/sriov_numvfs"
VF=$(sys_vf $NIC 0)
wait_for sh -c "\"$SVFFCTL\" --socket '$SOCK' list --json | grep -q '$VF'" || fail "the NIC's VFs never listed"
check_refused "$VF" release "$VF"
check_refused "$VF" release "$VF" --force
check_refused "$VF" attach "$VF" some-domain
check_refused "$VF" detach "$VF"
check_refused "$VF" pause "$VF"
check_refused "$VF" unpause "$VF"
expect_eq "$(sys_numvfs $NIC)" 2 "NIC numvfs after the refusals"
expect_eq "$(sys_driver "$VF")" igbvf "NIC VF driver after the refusals"
grep -q "Refused Init on $NIC: PF $NIC is not in manage" "$T/svffd.log" || fail "refusals not logged"

# Reads stay open, and a managed PF works as before.
ctl_status > /dev/null || fail "status"
ctl init $QDMA 2 > /dev/null || fail "init of the QDMA PF"
expect_eq "$(sys_numvfs $QDMA)" 2 "QDMA numvfs"

# Back to "all" (the default) on reload: the NIC is managed, its policy applied.
sed 's/"manage": \[.*\],/"manage": "all",/' "$T/svff.conf" > "$T/all.conf" && mv "$T/all.conf" "$T/svff.conf"
kill -HUP "$SVFFD_PID"
all_managed() { ctl list --json | jget 'all(p["unmanaged"] is None for p in d["pfs"])' | grep -qx True; }
wait_for all_managed ||
        fail "still unmanaged after a reload to all: $(ctl list --json)"
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$NIC/sriov_numvfs')\" = 3 ]" || fail "the NIC's policy not applied once managed"
COLUMNS=200 ctl list | head -n 1 | grep -q ALLOWED && fail "ALLOWED column shown with every PF managed"
stop_svffd TERM || fail "svffd exit status"

# A manage list added over an assignment: the reload names it (the
# assignment is recorded while svffd is stopped, as a stand-in for an
# attach: no libvirt here).
NIC_VF=$(sys_vf $NIC 0)
store_assign "$NIC_VF"
start_svffd
wait_for settled || fail "start-up did not settle"
# svffctl itself, not the ctl function: $! must be the process that
# 'kill $MON' ends (a function runs in a subshell of its own).
"$SVFFCTL" --socket "$SOCK" monitor --json > "$T/monitor.out" 2>&1 &
MON=$!
BG_PIDS="$BG_PIDS $MON"
wait_for grep -q subscribed "$T/monitor.out" || fail "monitor did not subscribe"
sed 's/"manage": "all",/"manage": ["class:qdma", "0000:00:04.0"],/' "$T/svff.conf" > "$T/some.conf" && mv "$T/some.conf" "$T/svff.conf"
kill -HUP "$SVFFD_PID"
wait_for grep -q "config-reloaded" "$T/monitor.out" || fail "no config-reloaded event: $(cat "$T/monitor.out")"
grep -q "VF $NIC_VF of PF $NIC is assigned to domain 'vm1', but the PF is not in manage .*: svffd can no longer detach, pause, unpause or reconf it" \
        "$T/svffd.log" || fail "the reload does not name the assignment it can no longer change"
python3 - "$T/monitor.out" "$NIC_VF" <<'PY' || fail "the config-reloaded event: $(cat "$T/monitor.out")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = [e for e in ev if e.get("event") == "config-reloaded"][-1]
assert r["message"].startswith("1 assignment is on PFs the manage list excludes"), r
assert "%s in 'vm1'" % sys.argv[2] in r["message"], r
PY
kill $MON
stop_svffd TERM || fail "svffd exit status"

# A PF hot-added after svffd's picture, whose count another process is
# writing: the manage check never waits for the write (it ran on the
# main loop, so every call waited, and svffctl gave up: exit 3). It
# cannot read the PF's IDs while the kernel holds them, so it refuses
# with the write as the reason; reads answer meanwhile.
HOT=0000:07:00.0
cat > "$T/svff.conf" <<'CONF'
{ "settle_msec": 50, "list_max_age_msec": 600000, "manage": ["class:qdma", "0000:00:04.0"] }
CONF
start_svffd
wait_for settled || fail "start-up did not settle"
ctl list --json > /dev/null || fail "list"
pcisim_ctl "add-pf { \"address\": \"$HOT\", \"vendor\": \"0x10ee\", \"device\": \"0x903f\", \"class\": \"0x120000\", \"driver\": \"qdma-pf\", \"vf_driver\": \"qdma-vf\", \"totalvfs\": 16, \"offset\": 4, \"stride\": 1, \"vf_device\": \"0xa03f\", \"iommu\": \"per-vf\", \"kind\": \"qdma\" }"
[ -e "$SYS/bus/pci/devices/$HOT" ] || fail "pcisim did not add $HOT"
echo 1 > "$SYS/bus/pci/devices/$HOT/sriov_numvfs"
refused_unread=$(log_count "Refused Init on $HOT: the VF count of PF $HOT is being written")
write_in_kernel $HOT
rc=0
t0=$(date +%s%N)
ctl --timeout 5 --json init $HOT 2 > "$T/out" 2> "$T/err" || rc=$?
note "the init of hot-added $HOT answered in $(ms_since "$t0") ms (exit $rc)"
expect_eq "$rc" 1 "exit status of an init of hot-added $HOT while another process writes its count"
expect_eq "$(jget 'd["error"], d["parameters"]["device"]' < "$T/err")" "io.svff.OperationInProgress $HOT" \
        "error of the init of $HOT"
grep -q "Another process is writing the VF count of PF $HOT" "$T/err" || fail "the init's reason: $(cat "$T/err")"
[ "$(log_count "Refused Init on $HOT: the VF count of PF $HOT is being written")" -gt "$refused_unread" ] ||
        fail "the manage check did not refuse the init: $(cat "$T/err")"
ctl --timeout 5 status > /dev/null || fail "status while the write is held"
release_vf
wait "$writer" || fail "the held write failed"
BG_PIDS=""
# Once the write has ended for svffd too (its read that gave up on it
# has returned), class:qdma lets the init through.
wait_for ctl init $HOT 2 || fail "init of $HOT after the write: $(ctl init $HOT 2 2>&1)"
expect_eq "$(sys_numvfs $HOT)" 2 "numvfs of $HOT"
stop_svffd TERM || fail "svffd exit status"
