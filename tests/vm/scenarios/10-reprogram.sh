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
assert_true "the plan removes the PF after the 0 write, then flashes and rescans" \
        grep -q "after the 0 write, remove the PF, run the flash hook on '$images/a.bin', rescan" "$R/plan.txt"
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
svffctl status --json >"$R/status-interrupted.json" || vm_fail "svffctl status --json failed"
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
        assert_eq "interrupted: VF $v's assignment kept, paused (store)" "paused $1" \
                "$(jq -r --arg vf "$v" '.assignments[$vf] | "\(.state) \(.domain)"' /run/svff-state/store.json)"
        shift
done
rm -f /run/svff-flash-hook.fail
vm_log "reprogram $pf again"
svffctl reprogram "$pf" "$images/a.bin" >"$R/reprogram-again.out" 2>&1 ||
        { cat "$R/reprogram-again.out"; vm_fail "reprogram after the interruption failed"; }
check_kept "after reprogram again"
svffctl status --json >"$R/status.json" || vm_fail "svffctl status --json failed"
assert_eq "status: no drift after reprogram again" 0 "$(jq '.drift | length' "$R/status.json")"
