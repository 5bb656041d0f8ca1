# The NIC device class on the real kernel's igb driver and QEMU 10's
# emulated 82576 (tests/vm/run --nic). VF 3 exists with VLAN 7 before
# svff; 'svffctl init PF 4' with a policy giving each VF a MAC from a
# prefix sets them, as 'ip link show' shows for every VF, and keeps VF 3's
# VLAN; list and status show the class; an attach the driver refuses
# (igb takes no min_tx_rate) names EINVAL and leaves the VF as it was;
# attaching VFs live to nested domains with a MAC, a VLAN with QoS, trust
# and spoof checking sets them before the domain gets the VF; igb has no
# per-VF link state, so --link-state is named unsupported (nic_strict is
# false in the policy) and the rest applied; release puts back what each
# VF had before.
#
# vm-run: --nic
#
# Reconfs 4 -> 5 and 5 -> 4, each through 0 (the kernel's only way), with
# VFs 0 and 1 assigned: every surviving VF has its recorded settings again
# before its domain gets it back, at its guest address (the reconf's
# provision step), and VF 3 still has what it had before svff, which its
# release puts back. svffd SIGKILLed between the numvfs write and the
# settings step (fault point after-numvfs-N) resumes the reconf at its
# next start, to the same end state.

[ "${SVFF_VM_NIC:-0}" = 1 ] || vm_fail "needs tests/vm/run --nic (QEMU 10's igb): it never skips"
command -v jq >/dev/null || vm_fail "no jq (scripts/setup-deps installs it)"
command -v virsh >/dev/null || vm_fail "no virsh (package libvirt-clients)"
command -v ip >/dev/null || vm_fail "no ip (package iproute2)"
vm_nic_setup
R=$SVFF_VM_RUNDIR
assert_eq "igb PF $pf ($ifname) sriov_totalvfs" 7 "$(cat "$P/sriov_totalvfs")"
vf_addr() { basename "$(readlink "$P/virtfn$1")"; }

vfmac() { vm_vfline "$1" | sed -n 's/^link\/ether \([0-9a-f:]*\).*/\1/p'; }
vfvlan() { vm_vfline "$1" | sed -n 's/.*, vlan \([0-9]*\).*/\1/p'; }
vfqos() { vm_vfline "$1" | sed -n 's/.*, qos \([0-9]*\).*/\1/p'; }
vfspoof() { vm_vfline "$1" | sed -n 's/.*spoof checking \([a-z]*\).*/\1/p'; }
vftrust() { vm_vfline "$1" | sed -n 's/.*trust \([a-z]*\).*/\1/p'; }

# ---- before svff: 4 VFs, VF 3 with VLAN 7 set by hand ----
echo 0 >"$P/sriov_drivers_autoprobe"
echo 4 >"$P/sriov_numvfs"
ip link set "$ifname" vf 3 vlan 7 || vm_fail "ip link set $ifname vf 3 vlan 7 failed"
assert_eq "before svff: VF 3 VLAN" 7 "$(vfvlan 3)"
vm_log "before svff: $(cat "$R/iplink.txt" | tr '\n' '|')"

vm_libvirtd_start
vm_domain_define d1
vm_domain_define d2
vm_cleanup 'for d in d1 d2; do virsh -q destroy "$d" >/dev/null 2>&1; done'
vm_domains_start d1 d2

config=$(jq -n --arg pf "$pf" --arg prom "$R/svff.prom" '{ metrics_textfile: $prom, metrics_poll_sec: 1,
        policies: { nic: { match: { address: $pf },
        nic: { "mac_prefix": "02:53:00:00", "nic_strict": false } } } }')
vm_svffd_start "$config"

# ---- another manager's file for the PF: refused, naming it ----
mkdir -p /etc/systemd/network
printf '[Match]\nOriginalName=%s\n\n[Link]\nSR-IOVVirtualFunctions=4\n' "$ifname" \
        >/etc/systemd/network/10-svff-test.link
rc=0
svffctl init "$pf" 4 >"$R/init-owned.out" 2>&1 || rc=$?
rm -f /etc/systemd/network/10-svff-test.link
assert_true "init of a PF networkd is configured for fails (exit $rc)" test "$rc" != 0
assert_true "the refusal names systemd-networkd and the file" \
        grep -q "systemd-networkd (/etc/systemd/network/10-svff-test.link" "$R/init-owned.out"
assert_eq "after the refusal: VF 0 still has no MAC" 00:00:00:00:00:00 "$(vfmac 0)"

# ---- init: numvfs, provision + verify each VF, vfio-pci ----
vm_log "svffctl init $pf 4"
t=$(vm_now)
svffctl init "$pf" 4 >"$R/init.out" 2>&1 || { cat "$R/init.out"; vm_fail "svffctl init $pf 4 failed"; }
vm_log "init took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
assert_eq "sriov_numvfs after init" 4 "$(cat "$P/sriov_numvfs")"
for i in 0 1 2 3; do
        assert_eq "after init: VF $i MAC (ip link show)" "02:53:00:00:00:0$i" "$(vfmac "$i")"
        assert_eq "after init: VF $i spoof checking" on "$(vfspoof "$i")"
        assert_eq "after init: VF $i trust" off "$(vftrust "$i")"
        assert_eq "after init: VF $i on vfio-pci" vfio-pci "$(basename "$(readlink "$P/virtfn$i/driver")")"
done
assert_eq "after init: VF 3 keeps its own VLAN" 7 "$(vfvlan 3)"
assert_eq "after init: VF 0 has no VLAN" "" "$(vfvlan 0)"
cp "$R/iplink.txt" "$R/iplink-after-init.txt"

svffctl list --json >"$R/list.json" || vm_fail "svffctl list --json failed"
for i in 0 1 2 3; do
        q=".pfs[] | select(.address == \"$pf\") | .vfs[] | select(.index == $i) | .class"
        assert_eq "list --json: VF $i class" nic "$(jq -r "$q.name" "$R/list.json")"
        assert_eq "list --json: VF $i MAC" "02:53:00:00:00:0$i" "$(jq -r "$q.state.mac" "$R/list.json")"
        assert_eq "list --json: VF $i verified" read "$(jq -r "$q.state.verified" "$R/list.json")"
done
svffctl list >"$R/list.txt" || vm_fail "svffctl list failed"
assert_true "list shows VF 0's MAC" grep -q "^$(vf_addr 0) .* mac \.\.:00:00\( \|$\)" "$R/list.txt"
svffctl status --json >"$R/status.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
assert_eq "status: no class drift after init" 0 \
        "$(jq '[.drift[] | select(.kind == "class-drift")] | length' "$R/status.json")"

# ---- a setting the driver refuses: named, and nothing left behind ----
v2=$(vf_addr 2)
rc=0
svffctl attach "$v2" d2 --vlan 300 --min-tx-rate 100 >"$R/attach-refused.out" 2>&1 || rc=$?
assert_true "attach with --min-tx-rate on igb fails (exit $rc)" test "$rc" != 0
assert_true "the refusal names EINVAL and min_tx_rate" \
        grep -q "refused min_tx_rate.*EINVAL" "$R/attach-refused.out"
assert_eq "after the refusal: VF 2 has no VLAN" "" "$(vfvlan 2)"
assert_eq "after the refusal: VF 2 not in d2" "" "$(vm_qpci d2 "$v2")"

# ---- attach with MAC, VLAN, trust, spoof checking ----
v0=$(vf_addr 0)
v1=$(vf_addr 1)
svffctl attach "$v0" d1 --mac 02:00:00:00:aa:01 --vlan 100:3 --trust on --spoofchk off \
        >"$R/attach0.out" 2>&1 || { cat "$R/attach0.out"; vm_fail "svffctl attach $v0 d1 failed"; }
svffctl attach "$v1" d2 --mac 02:00:00:00:aa:02 --vlan 200 --link-state enable \
        >"$R/attach1.out" 2>&1 || { cat "$R/attach1.out"; vm_fail "svffctl attach $v1 d2 failed"; }
assert_eq "after attach: VF 0 MAC" 02:00:00:00:aa:01 "$(vfmac 0)"
assert_eq "after attach: VF 0 VLAN" 100 "$(vfvlan 0)"
assert_eq "after attach: VF 0 QoS" 3 "$(vfqos 0)"
assert_eq "after attach: VF 0 trust" on "$(vftrust 0)"
assert_eq "after attach: VF 0 spoof checking" off "$(vfspoof 0)"
assert_eq "after attach: VF 1 MAC" 02:00:00:00:aa:02 "$(vfmac 1)"
assert_eq "after attach: VF 1 VLAN" 200 "$(vfvlan 1)"
assert_eq "after attach: VF 2 untouched (MAC)" 02:53:00:00:00:02 "$(vfmac 2)"
assert_true "VF 0 in d1's query-pci" test -n "$(vm_qpci_wait d1 "$v0")"
assert_true "VF 1 in d2's query-pci" test -n "$(vm_qpci_wait d2 "$v1")"
cp "$R/iplink.txt" "$R/iplink-after-attach.txt"
svffctl list --json >"$R/list-attached.json" || vm_fail "svffctl list --json failed"
q1=".pfs[] | select(.address == \"$pf\") | .vfs[] | select(.index == 1) | .class.state"
assert_eq "list --json: VF 1's link_state named unsupported (igb)" '["link_state"]' \
        "$(jq -c "$q1.unsupported" "$R/list-attached.json")"
svffctl list >"$R/list-attached.txt" || vm_fail "svffctl list failed"
assert_true "list shows VF 0's MAC and VLAN" \
        grep -q "^$v0 .* mac \.\.:aa:01 vlan 100\( \|$\)" "$R/list-attached.txt"
svffctl status --json >"$R/status-attached.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
assert_eq "status: no class drift after attach" 0 \
        "$(jq '[.drift[] | select(.kind == "class-drift")] | length' "$R/status-attached.json")"
# svffctl show counts what the driver reports, as ip link shows it.
n_mac=0 n_vlan=0 n_trust=0
for i in 0 1 2 3; do
        m=$(vfmac "$i")
        [ -n "$m" ] && [ "$m" != 00:00:00:00:00:00 ] && n_mac=$((n_mac + 1))
        [ -n "$(vfvlan "$i")" ] && n_vlan=$((n_vlan + 1))
        [ "$(vftrust "$i")" = on ] && n_trust=$((n_trust + 1))
done
svffctl show "$pf" >"$R/show.txt" 2>&1 || { cat "$R/show.txt"; vm_fail "svffctl show $pf failed"; }
assert_true "show: the nic class on $ifname" grep -q "^    interface: $ifname$" "$R/show.txt"
assert_true "show counts as ip link does: $n_mac MACs, $n_vlan VLANs, $n_trust trusted" \
        grep -q "VFs as read now: 4, $n_mac with a MAC, $n_vlan on a VLAN, $n_trust trusted$" "$R/show.txt"
# The metrics file's VF counters are the kernel's (IFLA_VF_STATS), as
# 'ip -s' reads them. igb has no ndo_get_vf_stats: the kernel reports
# zeros for its VFs whatever the traffic, so this checks the labels and
# that each value is the kernel's, not that it moves.
vm_wait 10 grep -q '^sriov_vf_rx_bytes{' "$R/svff.prom" || vm_fail "no sriov_vf_rx_bytes in the metrics file"
ip -s -j link show "$ifname" >"$R/iplink-stats.json" || vm_fail "ip -s -j link show $ifname failed"
vm_log "ip -s: VF 0 stats $(jq -c '.[0].vfinfo_list[0].stats' "$R/iplink-stats.json")"
for i in 0 1 2 3; do
        labels="pciAddr=\"$(vf_addr "$i")\",pf=\"$ifname\",vf=\"$i\",numa_node=\"[0-9]*\""
        # (iproute2 6.1 spells the TX keys tx_bytes and tx_packets)
        for pair in rx_bytes:.rx.bytes tx_bytes:.tx.tx_bytes rx_packets:.rx.packets tx_packets:.tx.tx_packets \
                    rx_dropped:.rx.dropped tx_dropped:.tx.dropped; do
                want=$(jq -r --argjson i "$i" ".[0].vfinfo_list[\$i].stats${pair#*:}" "$R/iplink-stats.json")
                [ "$want" != null ] || vm_fail "ip -s -j has no ${pair#*:} for VF $i"
                assert_true "metrics: VF $i ${pair%%:*} is the kernel's ($want)" \
                        grep -q "^sriov_vf_${pair%%:*}{$labels} $want\$" "$R/svff.prom"
        done
done

# ---- drift behind svffd's back ----
ip link set "$ifname" vf 0 vlan 55 || vm_fail "ip link set vf 0 vlan 55 failed"
vm_status_after_change "$R/status-drift.json"
assert_eq "status: class drift on VF 0 (VLAN changed by hand)" 1 \
        "$(jq --arg d "$v0" '[.drift[] | select(.kind == "class-drift" and .device == $d)] | length' \
        "$R/status-drift.json")"
ip link set "$ifname" vf 0 vlan 100 qos 3

# ---- reconfs through 0 bring every VF's settings back ----
before0=$(vm_qpci_wait d1 "$v0")
before1=$(vm_qpci_wait d2 "$v1")
vm_log "reconf $pf 5, then 4"
svffctl reconf "$pf" 5 >"$R/reconf5.out" 2>&1 || { cat "$R/reconf5.out"; vm_fail "reconf to 5 failed"; }
assert_eq "after reconf to 5: VF 0 MAC" 02:00:00:00:aa:01 "$(vfmac 0)"
assert_eq "after reconf to 5: VF 1 VLAN" 200 "$(vfvlan 1)"
assert_eq "after reconf to 5: VF 4 MAC from the prefix" 02:53:00:00:00:04 "$(vfmac 4)"
svffctl reconf "$pf" 4 >"$R/reconf4.out" 2>&1 || { cat "$R/reconf4.out"; vm_fail "reconf to 4 failed"; }
# check_given WHEN: what each VF was given, as 'ip link show' has it, and
# each domain's VF at its guest address.
check_given() {
        assert_eq "$1: VF 0 MAC" 02:00:00:00:aa:01 "$(vfmac 0)"
        assert_eq "$1: VF 0 VLAN" 100 "$(vfvlan 0)"
        assert_eq "$1: VF 0 QoS" 3 "$(vfqos 0)"
        assert_eq "$1: VF 0 trust" on "$(vftrust 0)"
        assert_eq "$1: VF 0 spoof checking" off "$(vfspoof 0)"
        assert_eq "$1: VF 1 MAC" 02:00:00:00:aa:02 "$(vfmac 1)"
        assert_eq "$1: VF 1 VLAN" 200 "$(vfvlan 1)"
        assert_eq "$1: VF 2 MAC" 02:53:00:00:00:02 "$(vfmac 2)"
        assert_eq "$1: VF 3 has its own VLAN 7" 7 "$(vfvlan 3)"
        assert_eq "$1: VF 0 at its guest address in d1" "$before0" "$(vm_qpci_wait d1 "$v0")"
        assert_eq "$1: VF 1 at its guest address in d2" "$before1" "$(vm_qpci_wait d2 "$v1")"
}
check_given "after reconf"

# ---- SIGKILL between the numvfs write and the settings step ----
# svffd dies right after writing the new count, every VF recreated with
# no settings; restarted, it resumes the reconf from its journal: the
# same end state as a reconf that was never interrupted.
if vm_have_fault_points; then
        vm_log "reconf $pf 5 with svffd killed after the numvfs write"
        vm_svffd_start_faulted after-numvfs-N "$config"
        svffctl reconf "$pf" 5 >"$R/reconf-killed.out" 2>&1 && vm_fail "reconf survived SIGKILL at after-numvfs-N"
        vm_svffd_killed after-numvfs-N
        assert_eq "after the kill: sriov_numvfs" 5 "$(cat "$P/sriov_numvfs")"
        assert_eq "after the kill: VF 0 lost its MAC with the count" 00:00:00:00:00:00 "$(vfmac 0)"
        vm_svffd_start "$config"
        both_back() {
                [ "$(svffctl list --json | jq '[.pfs[].vfs[] | select(.assigned_to.state == "attached")] | length')" = 2 ]
        }
        vm_wait 60 both_back || vm_fail "the assignments are not back 60 s after the restart: $(svffctl list)"
        assert_eq "after the recovery: sriov_numvfs" 5 "$(cat "$P/sriov_numvfs")"
        check_given "after the recovery"
        assert_eq "after the recovery: VF 4 MAC from the prefix" 02:53:00:00:00:04 "$(vfmac 4)"
        for i in 0 1 2 3 4; do
                assert_eq "after the recovery: VF $i on vfio-pci" vfio-pci \
                        "$(basename "$(readlink "$P/virtfn$i/driver")")"
        done
        svffctl status --json >"$R/status-recovered.json" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
        assert_eq "status: the reconf was recovered" resumed \
                "$(jq -r --arg pf "$pf" '[.recovered[] | select(.pf == $pf)][0].outcome' "$R/status-recovered.json")"
        assert_eq "status: no class drift after the recovery" 0 \
                "$(jq '[.drift[] | select(.kind == "class-drift")] | length' "$R/status-recovered.json")"
        svffctl reconf "$pf" 4 >"$R/reconf4b.out" 2>&1 || { cat "$R/reconf4b.out"; vm_fail "reconf back to 4 failed"; }
else
        vm_log "NOTE: svffd has no fault points: the kill between the numvfs write and the settings is not checked"
fi

# ---- hand-over: a plain detach gives the VF back to the pool as the
# policy has it, and the next domain gets nothing of the first's ----
svffctl detach "$v0" >"$R/detach0.out" 2>&1 || { cat "$R/detach0.out"; vm_fail "svffctl detach $v0 failed"; }
handed_over() {
        assert_eq "$1: VF 0 MAC is the policy's" 02:53:00:00:00:00 "$(vfmac 0)"
        assert_eq "$1: VF 0 has no VLAN" "" "$(vfvlan 0)"
        assert_eq "$1: VF 0 trust" off "$(vftrust 0)"
        assert_eq "$1: VF 0 spoof checking" on "$(vfspoof 0)"
}
handed_over "after a plain detach from d1"
svffctl attach "$v0" d2 >"$R/attach0-d2.out" 2>&1 || { cat "$R/attach0-d2.out"; vm_fail "svffctl attach $v0 d2 failed"; }
handed_over "attached to d2 with no settings"
vm_log "VF 0 in d2: $(vm_vfline 0)"
svffctl detach "$v0" >"$R/detach0-d2.out" 2>&1 || { cat "$R/detach0-d2.out"; vm_fail "svffctl detach $v0 from d2 failed"; }

# ---- release: what each VF had before ----
svffctl release "$v0" >"$R/release0.out" 2>&1 || { cat "$R/release0.out"; vm_fail "svffctl release $v0 failed"; }
assert_eq "after release: VF 0 back to its policy MAC" 02:53:00:00:00:00 "$(vfmac 0)"
assert_eq "after release: VF 0 has no VLAN" "" "$(vfvlan 0)"
assert_eq "after release: VF 0 trust" off "$(vftrust 0)"
assert_eq "after release: VF 0 spoof checking" on "$(vfspoof 0)"
vm_log "after release: VF 0: $(vm_vfline 0)"
svffctl release "$(vf_addr 3)" >"$R/release3.out" 2>&1 || { cat "$R/release3.out"; vm_fail "svffctl release VF 3 failed"; }
assert_eq "after release: VF 3 keeps the VLAN 7 svff never set" 7 "$(vfvlan 3)"
cp "$R/iplink.txt" "$R/iplink-after-release.txt"

# ---- the VF's own driver sees what svff set through the PF ----
# The emulated igb's VFs answer their driver (tests/vm/run puts the PF
# behind a root port): VF 0, released with its policy's MAC, bound to
# igbvf here, comes up with that MAC and a link.
modprobe igbvf || vm_fail "no igbvf module"
v0dev=/sys/bus/pci/devices/$v0
[ ! -e "$v0dev/driver" ] || echo "$v0" >"$v0dev/driver/unbind"
echo igbvf >"$v0dev/driver_override"
echo "$v0" >/sys/bus/pci/drivers/igbvf/bind || vm_fail "binding VF 0 ($v0) to igbvf failed"
vm_wait 20 test -d "$v0dev/net" || vm_fail "igbvf made no netdev for VF 0: $(dmesg | grep igbvf | tail -n 3)"
vfnet=$(ls "$v0dev/net" | head -n1)
ip link set "$vfnet" up
vf_carrier() { [ "$(cat "/sys/class/net/$vfnet/carrier" 2>/dev/null)" = 1 ]; }
vm_wait 30 vf_carrier || vm_fail "VF 0 on igbvf has no link 30 s after 'ip link set up': $(dmesg | grep igbvf | tail -n 3)"
assert_eq "VF 0 on igbvf: the MAC svff set through the PF" 02:53:00:00:00:00 "$(cat "/sys/class/net/$vfnet/address")"
vm_log "VF 0 on igbvf: $vfnet has a link and the policy's MAC"
echo "$v0" >/sys/bus/pci/drivers/igbvf/unbind
echo >"$v0dev/driver_override"
