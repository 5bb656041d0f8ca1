# The NVMe device class on the real kernel and QEMU's emulated controller
# (run with tests/vm/run --namespaces: one shared, detached namespace per
# VF in the subsystem). 'svffctl init PF 4' with an NVMe policy leaves
# every secondary controller Online with the planned VQ/VI and its
# namespace attached, as 'nvme list-secondary' and 'nvme list-ctrl' show;
# a VF bound to the host nvme driver comes up as its secondary controller
# and reaches that namespace through native multipath (nvme0cKn1); status
# reports a secondary taken offline and a namespace detached behind
# svffd's back; a second init puts them back, and so does an init after
# svffd was SIGKILLed between two VFs' class steps; 'attach --namespace' gives
# VF 3 (which the policy gives none) its namespace before the domain gets
# it, and 'detach --release' takes it from the domain and undoes that;
# release takes the secondary offline and detaches the namespace.
#
# vm-run: --namespaces
#
# A reconf 4 -> 0 -> 4 keeps every VF's secondary and namespace: the
# reconf's provision step puts them back before any VF returns, and the
# pattern reads back.

command -v jq >/dev/null || vm_fail "no jq (scripts/setup-deps installs it)"
command -v nvme >/dev/null || vm_fail "no nvme (nvme-cli; scripts/setup-deps installs it)"
[ "${SVFF_VM_NAMESPACES:-0}" -ge 4 ] || vm_skip "needs tests/vm/run --namespaces with 4 VFs"
modprobe nvme
modprobe vfio-pci
pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
P=/sys/bus/pci/devices/$pf
vm_wait 20 test -d "$P/nvme" || vm_fail "PF $pf did not come up on nvme"
vm_wait 20 sh -c "ls '$P/nvme' | grep -q '^nvme'" || vm_fail "PF $pf has no controller under nvme/"
ctrl=$(ls "$P/nvme" | grep '^nvme' | head -n1)
dev=/dev/$ctrl
vm_wait 10 test -c "$dev" || vm_fail "no $dev"
R=$SVFF_VM_RUNDIR

nvme list-ns "$dev" --all >"$R/ns-all.txt" 2>&1 || true
vm_log "namespaces of the subsystem: $(tr '\n' ' ' <"$R/ns-all.txt")"

vf_addr() { basename "$(readlink "$P/virtfn$1")"; }

command -v virsh >/dev/null || vm_fail "no virsh (package libvirt-clients)"
vm_libvirtd_start
vm_domain_define d1
vm_cleanup 'virsh -q destroy d1 >/dev/null 2>&1'
vm_domains_start d1

# VF 3 gets no namespace from the policy: its assignment names one.
config=$(jq -n --arg pf "$pf" '{ policies: { nvme: { match: { address: $pf },
        nvme: { vq: 2, vi: 1, namespace: [1, 2, 3, null] } } } }')
vm_svffd_start "$config"
# nsid_of VF: the namespace VF's secondary has after init ("" for VF 3).
nsid_of() { [ "$1" -lt 3 ] && echo $(($1 + 1)) || true; }

vm_log "before init: the secondaries as QEMU starts them"
assert_eq "sriov_numvfs before init" 0 "$(cat "$P/sriov_numvfs")"

# ---- init: plan, numvfs, provision + verify each VF, vfio-pci ----
vm_log "svffctl init $pf 4"
t=$(vm_now)
svffctl init "$pf" 4 >"$R/init.out" 2>&1 || { cat "$R/init.out"; vm_fail "svffctl init $pf 4 failed"; }
vm_log "init took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
assert_eq "sriov_numvfs after init" 4 "$(cat "$P/sriov_numvfs")"

check_provisioned() {
        for i in 0 1 2 3; do
                assert_eq "$1: VF $i secondary state (1 = online)" 1 "$(vm_secondary "$i" secondary-controller-state)"
                assert_eq "$1: VF $i VQ" 2 "$(vm_secondary "$i" num-virtual-queues)"
                assert_eq "$1: VF $i VI" 1 "$(vm_secondary "$i" num-virtual-interrupts)"
                scid=$(vm_secondary "$i" secondary-controller-identifier)
                if [ "$i" -lt 3 ]; then
                        assert_eq "$1: namespace $((i + 1)) attached to VF $i's secondary only" "$scid" \
                                "$(vm_ctrls_of $((i + 1)))"
                fi
                assert_eq "$1: VF $i on vfio-pci" vfio-pci "$(basename "$(readlink "$P/virtfn$i/driver")")"
        done
        assert_eq "$1: namespace 4 attached to no controller" "" "$(vm_ctrls_of 4)"
}
check_provisioned "after init"
cp "$R/secondary.json" "$R/secondary-after-init.json"

# ---- list and status ----
svffctl list --json >"$R/list.json" || vm_fail "svffctl list --json failed"
for i in 0 1 2 3; do
        q=".pfs[] | select(.address == \"$pf\") | .vfs[] | select(.index == $i) | .class"
        assert_eq "list --json: VF $i class" nvme "$(jq -r "$q.name" "$R/list.json")"
        assert_eq "list --json: VF $i secondary" online "$(jq -r "$q.state.secondary" "$R/list.json")"
        assert_eq "list --json: VF $i VQ/VI" "2/1" "$(jq -r "$q.state.vq|tostring" "$R/list.json")/$(jq -r "$q.state.vi|tostring" "$R/list.json")"
        assert_eq "list --json: VF $i namespaces" "[$(nsid_of $i)]" "$(jq -c "$q.state.namespaces" "$R/list.json")"
done
svffctl list >"$R/list.txt" || vm_fail "svffctl list failed"
assert_true "list shows a CLASS column" grep -q CLASS "$R/list.txt"
assert_true "list shows VF 0's class state" grep -q "^$(vf_addr 0) .* online ns $(nsid_of 0)\( \|$\)" "$R/list.txt"
svffctl status --json >"$R/status.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
assert_eq "status: no class drift after init" 0 \
        "$(jq '[.drift[] | select(.kind == "class-drift")] | length' "$R/status.json")"
# svffctl show: the flexible resources granted to secondaries, as the
# controller's own list sums them.
sum_vq=$(jq '[.["secondary-controllers"][] | .["num-virtual-queues"] | tonumber] | add' "$R/secondary-after-init.json")
sum_vi=$(jq '[.["secondary-controllers"][] | .["num-virtual-interrupts"] | tonumber] | add' "$R/secondary-after-init.json")
svffctl show "$pf" >"$R/show.txt" 2>&1 || { cat "$R/show.txt"; vm_fail "svffctl show $pf failed"; }
assert_true "show: VQ granted to secondaries as nvme list-secondary sums them ($sum_vq)" \
        grep -q "flexible VQ (queue) resources: [0-9]* free of [0-9]* (primary controller [0-9]*, secondaries $sum_vq;" \
        "$R/show.txt"
assert_true "show: VI granted to secondaries as nvme list-secondary sums them ($sum_vi)" \
        grep -q "flexible VI (interrupt) resources: [0-9]* free of [0-9]* (primary controller [0-9]*, secondaries $sum_vi;" \
        "$R/show.txt"

# ---- the data path: VF 0 on the host's nvme driver ----
vf0=$(vf_addr 0)
scid0=$(vm_secondary 0 secondary-controller-identifier)
vm_log "binding VF 0 ($vf0, secondary $scid0) to nvme"
echo "$vf0" >/sys/bus/pci/drivers/vfio-pci/unbind
echo nvme >"$P/virtfn0/driver_override"
echo "$vf0" >/sys/bus/pci/drivers_probe
vm_wait 30 sh -c "ls '$P/virtfn0/nvme' 2>/dev/null | grep -q '^nvme'" ||
        vm_fail "VF 0 did not come up as an nvme controller (dmesg: $(dmesg | tail -n 5))"
vfctrl=$(ls "$P/virtfn0/nvme" | grep '^nvme' | head -n1)
assert_eq "VF 0's controller ID is its secondary's" "$scid0" "$(cat "/sys/class/nvme/$vfctrl/cntlid")"
vm_wait 30 sh -c "ls /sys/class/nvme/$vfctrl | grep -q '^nvme[0-9]*c[0-9]*n[0-9]*$'" ||
        vm_fail "no namespace path under controller $vfctrl ($(ls "/sys/class/nvme/$vfctrl" | tr '\n' ' '))"
path=$(ls "/sys/class/nvme/$vfctrl" | grep '^nvme[0-9]*c[0-9]*n[0-9]*$' | head -n1)
cnum=$(echo "$path" | sed 's/^nvme[0-9]*c\([0-9]*\)n[0-9]*$/\1/')
assert_eq "path $path goes through VF 0's controller" "$vfctrl" "nvme$cnum"
head=$(echo "$path" | sed 's/c[0-9]*n/n/')
vm_wait 10 test -b "/dev/$head" || vm_fail "no /dev/$head for path $path"
assert_eq "the path's namespace" 1 "$(cat "/sys/class/nvme/$vfctrl/$path/nsid" 2>/dev/null || cat "/sys/block/$head/nsid")"
dd if=/dev/urandom of="$R/pattern" bs=4096 count=16 2>/dev/null
dd if="$R/pattern" of="/dev/$head" bs=4096 count=16 oflag=direct conv=fsync 2>/dev/null ||
        vm_fail "writing the pattern to /dev/$head failed"
assert_true "the pattern reads back through VF 0" \
        sh -c "dd if=/dev/$head bs=4096 count=16 iflag=direct 2>/dev/null | cmp -s - '$R/pattern'"
vm_log "VF 0 back to vfio-pci"
echo "$vf0" >/sys/bus/pci/drivers/nvme/unbind
echo vfio-pci >"$P/virtfn0/driver_override"
echo "$vf0" >/sys/bus/pci/drivers_probe
vm_wait 10 test "$(basename "$(readlink "$P/virtfn0/driver")")" = vfio-pci || vm_fail "VF 0 not back on vfio-pci"

# ---- drift behind svffd's back ----
scid1=$(vm_secondary 1 secondary-controller-identifier)
scid2=$(vm_secondary 2 secondary-controller-identifier)
nvme virt-mgmt "$dev" -c "$scid1" -a 7 >/dev/null || vm_fail "taking secondary $scid1 offline by hand failed"
nvme detach-ns "$dev" -n 3 -c "$scid2" >/dev/null || vm_fail "detaching namespace 3 by hand failed"
vm_status_after_change "$R/status-drift.json"
drift_of() {
        jq -r --arg d "$1" '[.drift[] | select(.kind == "class-drift" and .device == $d)] | length' \
                "$R/status-drift.json"
}
assert_eq "status: class drift on VF 1 (secondary offline)" 1 "$(drift_of "$(vf_addr 1)")"
assert_eq "status: class drift on VF 2 (namespace detached)" 1 "$(drift_of "$(vf_addr 2)")"
assert_eq "status: no class drift on VF 3" 0 "$(drift_of "$(vf_addr 3)")"
svffctl status >"$R/status-drift.txt" 2>&1 || true
vm_log "init again puts them back"
svffctl init "$pf" 4 >"$R/init2.out" 2>&1 || { cat "$R/init2.out"; vm_fail "second svffctl init failed"; }
check_provisioned "after the second init"
svffctl status --json >"$R/status.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
assert_eq "status: no class drift after the second init" 0 \
        "$(jq '[.drift[] | select(.kind == "class-drift")] | length' "$R/status.json")"

# ---- SIGKILL between two VFs' class steps: the next init completes ----
if vm_have_fault_points; then
        vm_log "init again with svffd killed after VF 1's class steps"
        vm_svffd_start_faulted after-provision-2 "$config"
        svffctl init "$pf" 4 >"$R/init-killed.out" 2>&1 && vm_fail "init survived SIGKILL at after-provision-2"
        vm_svffd_killed after-provision-2
        vm_svffd_start "$config"
        svffctl status --json >"$R/status-killed.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
        assert_eq "status: the init is interrupted" 1 \
                "$(jq --arg pf "$pf" '[.drift[] | select(.kind == "interrupted" and .device == $pf)] | length' \
                "$R/status-killed.json")"
        svffctl init "$pf" 4 >"$R/init3.out" 2>&1 || { cat "$R/init3.out"; vm_fail "init after the kill failed"; }
        check_provisioned "after a kill between class steps and a new init"
else
        vm_log "NOTE: svffd has no fault points: the kill between class steps is not checked"
fi

# ---- reconf 4 -> 0 -> 4 keeps each VF's namespace ----
vm_log "reconf $pf 0, then 4"
svffctl reconf "$pf" 0 >"$R/reconf0.out" 2>&1 || { cat "$R/reconf0.out"; vm_fail "reconf to 0 failed"; }
svffctl reconf "$pf" 4 >"$R/reconf4.out" 2>&1 || { cat "$R/reconf4.out"; vm_fail "reconf to 4 failed"; }
check_provisioned "after reconf 4 -> 0 -> 4"
vf0=$(vf_addr 0)
echo "$vf0" >/sys/bus/pci/drivers/vfio-pci/unbind
echo nvme >"$P/virtfn0/driver_override"
echo "$vf0" >/sys/bus/pci/drivers_probe
vm_wait 30 sh -c "ls '$P/virtfn0/nvme' 2>/dev/null | grep -q '^nvme'" || vm_fail "VF 0 did not come up after reconf"
vfctrl=$(ls "$P/virtfn0/nvme" | grep '^nvme' | head -n1)
vm_wait 30 sh -c "ls /sys/class/nvme/$vfctrl | grep -q '^nvme[0-9]*c[0-9]*n[0-9]*$'" ||
        vm_fail "no namespace path under $vfctrl after reconf"
path=$(ls "/sys/class/nvme/$vfctrl" | grep '^nvme[0-9]*c[0-9]*n[0-9]*$' | head -n1)
head=$(echo "$path" | sed 's/c[0-9]*n/n/')
vm_wait 10 test -b "/dev/$head" || vm_fail "no /dev/$head after reconf"
assert_true "after reconf VF 0 reaches the same namespace: the pattern reads back" \
        sh -c "dd if=/dev/$head bs=4096 count=16 iflag=direct 2>/dev/null | cmp -s - '$R/pattern'"
echo "$vf0" >/sys/bus/pci/drivers/nvme/unbind
echo vfio-pci >"$P/virtfn0/driver_override"
echo "$vf0" >/sys/bus/pci/drivers_probe
vm_wait 10 test "$(basename "$(readlink "$P/virtfn0/driver")")" = vfio-pci || vm_fail "VF 0 not back on vfio-pci"

# ---- hand-over: a plain detach takes the assignment's namespace off
# the VF, and the next domain gets nothing of the first's ----
vf3=$(vf_addr 3)
scid3=$(vm_secondary 3 secondary-controller-identifier)
vm_domain_define d2
svffctl attach "$vf3" d1 --namespace 4 >"$R/attach-again.out" 2>&1 ||
        { cat "$R/attach-again.out"; vm_fail "attach --namespace 4 failed"; }
assert_eq "attached: namespace 4 attached to VF 3's secondary" "$scid3" "$(vm_ctrls_of 4)"
svffctl detach "$vf3" >"$R/detach-plain.out" 2>&1 || { cat "$R/detach-plain.out"; vm_fail "plain detach of VF 3 failed"; }
assert_eq "after a plain detach: namespace 4 attached to no controller" "" "$(vm_ctrls_of 4)"
assert_eq "after a plain detach: VF 3 secondary online, in the pool" 1 "$(vm_secondary 3 secondary-controller-state)"
svffctl attach "$vf3" d2 >"$R/attach-d2.out" 2>&1 || { cat "$R/attach-d2.out"; vm_fail "attach of VF 3 to d2 failed"; }
for n in 1 2 3 4; do
        assert_true "VF 3 in d2: namespace $n is not on its secondary $scid3" \
                sh -c "! echo ' $(vm_ctrls_of "$n") ' | grep -q ' $scid3 '"
done
svffctl detach "$vf3" >"$R/detach-d2.out" 2>&1 || { cat "$R/detach-d2.out"; vm_fail "detach of VF 3 from d2 failed"; }

# ---- attach --namespace: what the assignment adds, before libvirt ----
vf3=$(vf_addr 3)
scid3=$(vm_secondary 3 secondary-controller-identifier)
vm_log "svffctl attach $vf3 d1 --namespace 4"
svffctl attach "$vf3" d1 --namespace 4 >"$R/attach.out" 2>&1 || { cat "$R/attach.out"; vm_fail "attach --namespace 4 failed"; }
assert_eq "after attach: namespace 4 attached to VF 3's secondary" "$scid3" "$(vm_ctrls_of 4)"
assert_eq "after attach: VF 3 secondary online" 1 "$(vm_secondary 3 secondary-controller-state)"
svffctl list --json >"$R/list-attached.json" || vm_fail "svffctl list --json failed"
q=".pfs[] | select(.address == \"$pf\") | .vfs[] | select(.index == 3)"
assert_eq "list --json: the assignment records its namespace" 4 \
        "$(jq -r "$q.assigned_to.class.settings.namespace" "$R/list-attached.json")"
assert_eq "list --json: VF 3's class state has namespace 4" "[4]" "$(jq -c "$q.class.state.namespaces" "$R/list-attached.json")"
assert_true "VF 3 is in d1's live XML" sh -c "virsh -q dumpxml d1 | grep -q ua-svff"
vm_log "svffctl detach $vf3 --release"
svffctl detach "$vf3" --release >"$R/release-force.out" 2>&1 ||
        { cat "$R/release-force.out"; vm_fail "detach --release of VF 3 failed"; }
assert_eq "after detach --release: VF 3 secondary offline (0)" 0 "$(vm_secondary 3 secondary-controller-state)"
assert_eq "after detach --release: namespace 4 attached to no controller" "" "$(vm_ctrls_of 4)"

# ---- release: secondary offline, namespace detached ----
for i in 0 1 2; do
        scid=$(vm_secondary "$i" secondary-controller-identifier)
        v=$(vf_addr "$i")
        svffctl release "$v" >"$R/release$i.out" 2>&1 || { cat "$R/release$i.out"; vm_fail "release of VF $i failed"; }
        assert_eq "after release: VF $i secondary offline (0)" 0 "$(vm_secondary "$i" secondary-controller-state)"
        assert_eq "after release: namespace $((i + 1)) attached to no controller" "" "$(vm_ctrls_of $((i + 1)))"
done
svffctl list --json >"$R/list-released.json" || vm_fail "svffctl list --json failed"
assert_eq "list --json after release: no VF has a class record" 0 \
        "$(jq --arg a "$pf" '[.pfs[] | select(.address == $a) | .vfs[] | select(.class != null)] | length' \
        "$R/list-released.json")"
