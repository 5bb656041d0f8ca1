#!/bin/sh
# svffctl reconf on pcisim with CONFIG assignments on defined domains
# (qemu:///embed): up and down with every assignment kept (store and
# domain XML), the dry run equal to the execution, refusal and --force,
# two reconfs of one PF at once (the second refused), reconfs of two PFs
# at once (both succeed), and init refusing to change an assigned PF.
. "$(dirname "$0")/reconf-lib.sh"

DOMAINS="vm1 vm2 vm3 vm4"
define $DOMAINS
start_pcisim scale
svff_conf
start_connected
pfs() { ls "$SYS/bus/pci/devices" | while read -r d; do [ -e "$SYS/bus/pci/devices/$d/sriov_totalvfs" ] && echo "$d"; done; }
PF=$(pfs | sed -n 1p)
PF2=$(pfs | sed -n 2p)
[ -n "$PF2" ] && [ "$PF2" != "$PF" ] || fail "the scale scenario has no second PF"
ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF2=$(sys_vf $PF 2)
ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach VF0"
ctl attach "$VF1" vm2 >/dev/null || fail "attach VF1"
ctl attach "$VF2" vm3 >/dev/null || fail "attach VF2"
before=$(assignments_snapshot)
gen() { ctl status --json | jget 'd["store"]["generation"]'; }

note "up: 4 -> 8, the dry run equals the execution"
g=$(gen)
ctl reconf $PF 8 --dry-run --json > "$T/plan.json" || fail "dry run: $(cat "$T/plan.json")"
expect_eq "$(gen)" "$g" "store generation after a dry run"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after a dry run"
ctl reconf $PF 8 --dry-run > "$T/plan.txt" || fail "human dry run"
grep -q "write sriov_numvfs = 0" "$T/plan.txt" || fail "human plan: $(cat "$T/plan.txt")"
# Guest addresses the way --guest-address takes them, never DDDD:BB:SS.F.
grep -q "unpause VF 0 ($VF0) in domain 'vm1' at guest address 05:00.0," "$T/plan.txt" ||
        fail "human plan: $(cat "$T/plan.txt")"
grep -q "domain 'vm1' at 05:00.0 (" "$T/plan.txt" || fail "human plan's assignments: $(cat "$T/plan.txt")"
grep -qE "(^|[^:])0000:0[5-7]:00\.0" "$T/plan.txt" && fail "a guest address as DDDD:BB:SS.F: $(cat "$T/plan.txt")"
ctl reconf $PF 8 --json > "$T/out.json" || fail "reconf up: $(cat "$T/out.json")"
tail -n 1 "$T/out.json" > "$T/result.json"
steps_equal "$T/plan.json" "$T/result.json"
[ "$(grep -c '"event":"reconf-step"' "$T/out.json")" -ge 7 ] || fail "no progress events: $(cat "$T/out.json")"
expect_eq "$(sys_numvfs $PF)" 8 "numvfs after reconf up"
check_vfio $PF
expect_eq "$(assignments_snapshot)" "$before" "assignments after reconf up"
expect_eq "$(journal)" None "journal after reconf up"
expect_eq "$(jget 'len([a for a in d["assignments"] if a["has_vf"]])' < "$T/result.json")" 3 "VMs with their VF"

note "one line per phase without a terminal"
ctl reconf $PF 8 --cycle > "$T/out.txt" 2>&1 || fail "reconf --cycle at the same count: $(cat "$T/out.txt")"
grep -q "^reconf $PF: phase quiesce: pause vm" "$T/out.txt" || fail "phase lines: $(cat "$T/out.txt")"
grep -q "^  OK  VF 0 $VF0  domain 'vm1' at 05:00.0: restored" "$T/out.txt" || fail "outcome: $(cat "$T/out.txt")"

note "down: refused without --force, store unchanged"
g=$(gen)
rc=0; ctl reconf $PF 2 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reconf down without --force"
grep -q "would lose VF 2 ($VF2) of domain 'vm3'" "$T/err" || fail "refusal: $(cat "$T/err")"
expect_eq "$(gen)" "$g" "store after the refusal"
expect_eq "$(sys_numvfs $PF)" 8 "numvfs after the refusal"
rc=0; ctl reconf $PF 2 --dry-run > "$T/plan.txt" 2>&1 || rc=$?
expect_eq "$rc" 1 "dry run of a refused plan"
grep -q "REFUSED" "$T/plan.txt" || fail "refused dry run: $(cat "$T/plan.txt")"

note "down with --force: VF2's assignment released and said so"
ctl reconf $PF 2 --force --dry-run --json > "$T/plan.json" || fail "forced dry run"
grep -q '"fate":"released"' "$T/plan.json" || fail "forced plan: $(cat "$T/plan.json")"
ctl reconf $PF 2 --force --json > "$T/out.json" || fail "forced reconf: $(cat "$T/out.json")"
tail -n 1 "$T/out.json" > "$T/result.json"
steps_equal "$T/plan.json" "$T/result.json"
expect_eq "$(jget '[a["outcome"] for a in d["assignments"] if a["vf"] == "'"$VF2"'"][0]' < "$T/result.json")" released "VF2 outcome"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after reconf down"
check_vfio $PF
expect_eq "$(store_py 'print(sorted(d["assignments"]))')" "['$VF0', '$VF1']" "assignments after --force"
expect_eq "$(store_py 'print(sorted(v for v, r in d["vfs"].items() if r["pf"] == "'$PF'"))')" "['$VF0', '$VF1']" "VF records"

note "init refuses to change the count of a PF with assignments"
rc=0; ctl init $PF 3 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init on an assigned PF"
grep -q "svffctl reconf $PF 3" "$T/err" || fail "init refusal: $(cat "$T/err")"

note "two reconfs of one PF at once: the second is refused"
pcisim_ctl latency sriov_disable 3000000
ctl reconf $PF 2 --cycle > "$T/bg.out" 2>&1 &
BG=$!; BG_PIDS="$BG"
wait_for sh -c "'$SVFFCTL' --socket '$SOCK' status --json | grep -q '\"op\": *\"reconf\"'" || fail "no reconf in progress"
rc=0; ctl reconf $PF 2 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "second reconf of the same PF"
grep -q "A reconf of PF $PF is in progress" "$T/err" || fail "second reconf: $(cat "$T/err")"
# Its dry run, and an init's, refuse the same, naming the reconf.
rc=0; ctl reconf $PF 3 --dry-run 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "dry run of a second reconf of the same PF"
grep -q "A reconf of PF $PF is in progress" "$T/err" || fail "dry run of a second reconf: $(cat "$T/err")"
rc=0; ctl init $PF 2 --dry-run 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "dry run of an init during a reconf"
grep -q "A reconf of PF $PF is in progress" "$T/err" || fail "dry run of an init during a reconf: $(cat "$T/err")"
# A release of one of its VFs too, naming the PF and the VF.
rc=0; ctl release "$VF0" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "release of a VF during a reconf of its PF"
grep -q "A reconf of PF $PF, the PF of VF $VF0, is in progress" "$T/err" ||
        fail "release during a reconf: $(cat "$T/err")"
"$SVFFCTL" --socket "$SOCK" status --json | grep -q '"op": *"reconf"' ||
        fail "the first reconf ended before the refusals were checked: raise its sriov_disable latency"
wait "$BG" || fail "first reconf: $(cat "$T/bg.out")"
BG_PIDS=""

note "reconfs of two PFs at once: both succeed"
ctl init "$PF2" 2 >/dev/null || fail "init PF2"
W0=$(sys_vf "$PF2" 0)
ctl attach "$W0" vm4 --guest-address 06:00.0 >/dev/null || fail "attach on PF2"
before=$(assignments_snapshot)
ctl reconf $PF 3 > "$T/a.out" 2>&1 &
A=$!
ctl reconf "$PF2" 3 > "$T/b.out" 2>&1 &
B=$!
BG_PIDS="$A $B"
wait "$A" || fail "reconf of $PF beside $PF2: $(cat "$T/a.out")"
wait "$B" || fail "reconf of $PF2 beside $PF: $(cat "$T/b.out")"
BG_PIDS=""
pcisim_ctl latency sriov_disable 0
expect_eq "$(sys_numvfs $PF)" 3 "numvfs of $PF"
expect_eq "$(sys_numvfs "$PF2")" 3 "numvfs of $PF2"
check_vfio $PF
check_vfio "$PF2"
expect_eq "$(assignments_snapshot)" "$before" "assignments after two parallel reconfs"

note "the domains' XML says the same as the store"
stop_svffd || fail "svffd exit status"
check_xml
echo "PASS"
