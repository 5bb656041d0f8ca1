# Reprogram on the real kernel. No FPGA runs here: the emulated NVMe PF
# stands in for one, with a flash hook that only logs what it sees and
# sleeps. With 4 VFs assigned to 4 running domains, 'svffctl reprogram PF
# IMAGE' writes numvfs 0 (the hook then finds the PF gone, and svffd never
# removed a PF with VFs enabled: the kernel orphans them), removes the PF,
# runs the hook, rescans, checks the PF's identity, binds nvme again,
# recreates the VFs and gives every domain its VF back at its guest
# address. A hook that fails leaves the PF "reprogram interrupted" with
# every assignment paused and its record intact; reprogram again
# completes it.

command -v jq >/dev/null || vm_fail "no jq (scripts/setup-deps installs it)"
R=$SVFF_VM_RUNDIR
hook=/run/svff-flash-hook
images=/run/svff-images
mkdir -p "$images"
chmod 755 "$images"
echo "an image" >"$images/a.bin"
# The hook: the PF must be off the bus and svff must have left no VF
# (virtfn links vanish with the PF; the bus shows whether any VF of it
# is still there). A marker file makes it fail.
cat >"$hook" <<'EOF'
#!/bin/sh
echo "hook: $1 $2 deadline $3"
if [ -e "/sys/bus/pci/devices/$1" ]; then echo "hook: PF $1 still on the bus"; exit 3; fi
n=$(ls /sys/bus/pci/devices | grep -c "^${1%.*}\.[1-7]$" || true)
echo "hook: VFs of $1 still on the bus: $n"
echo "$1 gone, $n VFs" >>/run/svff-flash-hook.seen
[ ! -e /run/svff-flash-hook.fail ] || { echo "hook: failing as asked"; exit 1; }
sleep 1
echo "hook: flashed"
EOF
chmod 755 "$hook"

vm_assigned_setup 4 "{ \"flash_hook\": \"$hook\", \"flash_image_dir\": \"$images\", \"flash_timeout_sec\": 60 }"
before=$(vm_places)
echo "$before"
! echo "$before" | grep -q ' $' || vm_fail "a VF is missing from its domain's query-pci"

check_kept() {
        vm_check_kept "$1"
        assert_eq "$1: PF driver" nvme "$(basename "$(readlink "$P/driver")")"
        assert_eq "$1: numvfs" 4 "$(cat "$P/sriov_numvfs")"
}

# ---- the dry run: every step, nothing done ----
svffctl reprogram "$pf" "$images/a.bin" --dry-run >"$R/plan.txt" 2>&1 ||
        { cat "$R/plan.txt"; vm_fail "reprogram --dry-run failed"; }
# The PF's steps, in the plan's order, between its two writes.
# Each with its deadline where it has one of its own: the writes, the
# flash (flash_timeout_sec) and the rescan.
sed -n 's/^ *[0-9]*\. \[\(numvfs\|reprogram\)\] //p' "$R/plan.txt" | tr '\n' '|' >"$R/plan-pf.txt"
assert_true "the plan removes the PF after the 0 write, then flashes and rescans" \
        grep -qx "write sriov_numvfs = 0 (deadline [0-9]* s)|remove PF $pf from the bus|run the flash hook on '$images/a.bin' (deadline [0-9]* s)|rescan the PF's bus and wait for PF $pf (deadline 30 s)|check the PF is one of [0-9a-f: ]* with at least 4 VFs|bind PF $pf to its driver|write sriov_numvfs = 4 (deadline [0-9]* s)|" \
        "$R/plan-pf.txt"
assert_true "the dry run ran no hook" test ! -e /run/svff-flash-hook.seen

# ---- reprogram: remove, flash, rescan, every assignment back ----
vm_log "reprogram $pf"
t=$(vm_now)
svffctl reprogram "$pf" "$images/a.bin" >"$R/reprogram.out" 2>&1 ||
        { cat "$R/reprogram.out"; vm_fail "svffctl reprogram $pf failed"; }
vm_log "reprogram took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
cat "$R/reprogram.out"
assert_eq "the hook ran once, with the PF and its VFs gone" "$pf gone, 0 VFs" "$(cat /run/svff-flash-hook.seen)"
assert_true "svffd logged the hook's output" grep -q "hook: flashed" "$R/svffd.log"
check_kept "after reprogram"

# ---- a hook that fails: interrupted, nothing lost, reprogram again ----
touch /run/svff-flash-hook.fail
vm_log "reprogram $pf with a failing hook"
rc=0
svffctl reprogram "$pf" "$images/a.bin" >"$R/reprogram-fail.out" 2>&1 || rc=$?
cat "$R/reprogram-fail.out"
assert_true "reprogram with a failing hook fails (exit $rc)" test "$rc" != 0
assert_true "the failure says the reprogram is interrupted" grep -qi "interrupted" "$R/reprogram-fail.out"
svffctl status --json >"$R/status-interrupted.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
assert_eq "status: the PF's reprogram is interrupted" 1 \
        "$(jq --arg pf "$pf" '[.drift[] | select(.device == $pf and .kind == "interrupted" and
                (.message | test("reprogram interrupted")))] | length' \
        "$R/status-interrupted.json")"
assert_eq "status: that is the only drift (not the PF missing, nor each VF)" '["interrupted"]' \
        "$(jq -c '[.drift[].kind]' "$R/status-interrupted.json")"
# The PF is off the bus, so list has no VFs to show: the store has the
# records.
set -- $doms
for v in $vfs; do
        assert_eq "interrupted: VF $v's assignment kept, held (store)" "held $1" \
                "$(jq -r --arg vf "$v" '.assignments[$vf] | "\(.state) \(.domain)"' /run/svff-state/store.json)"
        shift
done
rm -f /run/svff-flash-hook.fail
vm_log "reprogram $pf again"
svffctl reprogram "$pf" "$images/a.bin" >"$R/reprogram-again.out" 2>&1 ||
        { cat "$R/reprogram-again.out"; vm_fail "reprogram after the interruption failed"; }
check_kept "after reprogram again"
svffctl status --json >"$R/status.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
assert_eq "status: no drift after reprogram again" 0 "$(jq '.drift | length' "$R/status.json")"

# ---- a policy naming the image: the one svff flashed is not flashed
# again; another waits for the assignments to go, then start-up flashes
# it before the VFs exist ----
policy() {
        echo "{ \"flash_hook\": \"$hook\", \"flash_image_dir\": \"$images\", \"flash_timeout_sec\": 60,
 \"policies\": { \"fpga\": { \"match\": { \"address\": \"$pf\" }, \"numvfs\": 4, \"image\": \"$1\" } } }"
}
assert_eq "the store records the image reprogram flashed" "$images/a.bin" \
        "$(jq -r --arg pf "$pf" '.pfs[$pf].image.path' /run/svff-state/store.json)"
vm_svffd_stop
: >/run/svff-flash-hook.seen
vm_svffd_start "$(policy "$images/a.bin")"
# 'svffctl init' set the count: the operator's, until handed back.
svffctl init "$pf" --policy >/dev/null || vm_fail "svffctl init $pf --policy failed"
assert_eq "the PF's count is the policy's" "policy:fpga" \
        "$(svffctl status --json | jq -r --arg pf "$pf" '.owners[] | select(.pf == $pf) | .owner')"
vm_svffd_stop
vm_svffd_start "$(policy "$images/a.bin")"
svffctl status --wait --timeout 120 >/dev/null || [ $? = 5 ] || vm_fail "svffd stayed busy after its start"
assert_true "svffd saw the policy's image in place" grep -q "holds image '$images/a.bin'" "$R/svffd.log"
assert_eq "a start with the policy's image in place runs no hook" "" "$(cat /run/svff-flash-hook.seen)"
check_kept "after a start with the policy's image in place"
echo "another image" >"$images/b.bin"
vm_svffd_stop
vm_svffd_start "$(policy "$images/b.bin")"
svffctl status --wait --timeout 120 >/dev/null || [ $? = 5 ] || vm_fail "svffd stayed busy after its start"
assert_eq "another image behind assigned VFs runs no hook" "" "$(cat /run/svff-flash-hook.seen)"
svffctl status --json >"$R/status-policy.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
assert_true "status: the policy is refused, the assignments named" \
        jq -e --arg pf "$pf" '.owners[] | select(.pf == $pf) | .refused | test("VFs of the PF are assigned")' \
        "$R/status-policy.json"
check_kept "after the refused policy"
# The domains go; with their assignments released, the next start
# flashes the policy's image.
for d in $doms; do virsh -q destroy "$d" >/dev/null || vm_fail "virsh destroy $d"; done
for v in $vfs; do svffctl detach "$v" >/dev/null || vm_fail "svffctl detach $v failed"; done
vm_svffd_stop
t=$(vm_now)
vm_svffd_start "$(policy "$images/b.bin")"
svffctl status --wait --timeout 180 >/dev/null || [ $? = 5 ] || vm_fail "svffd stayed busy after its start"
vm_log "start-up with the policy's reprogram took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
assert_eq "start-up ran the hook once, with the PF and its VFs gone" "$pf gone, 0 VFs" \
        "$(cat /run/svff-flash-hook.seen)"
assert_eq "after the policy's reprogram: PF driver" nvme "$(basename "$(readlink "$P/driver")")"
assert_eq "after the policy's reprogram: numvfs" 4 "$(cat "$P/sriov_numvfs")"
assert_eq "the store records the policy's image" "$images/b.bin" \
        "$(jq -r --arg pf "$pf" '.pfs[$pf].image.path' /run/svff-state/store.json)"
assert_eq "no journal after the policy's reprogram" null "$(jq -c '.journal' /run/svff-state/store.json)"
vm_svffd_stop
vm_svffd_start "$(policy "$images/b.bin")"
svffctl status --wait --timeout 120 >/dev/null || [ $? = 5 ] || vm_fail "svffd stayed busy after its start"
assert_eq "the next start runs no hook" "$pf gone, 0 VFs" "$(cat /run/svff-flash-hook.seen)"
vm_svffd_stop
