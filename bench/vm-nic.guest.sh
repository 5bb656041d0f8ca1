# The inside of bench/vm-nic, sourced in the VM like a tests/vm scenario
# (tests/vm/run --nic: QEMU 10's igb, the real kernel's igb driver, 7
# VFs). Writes the figures to $SVFF_VM_RUNDIR/figures.txt.
#
# Reconf cycles 7 -> 0 -> 7 with every VF assigned to an OS-less nested
# domain, each with a MAC, a VLAN, trust and spoof checking set: the NIC
# class's steps (its provision phase: one RTM_SETLINK per VF, then the
# read back) as a share of the cycle.

[ "${SVFF_VM_NIC:-0}" = 1 ] || vm_fail "needs tests/vm/run --nic (QEMU 10's igb)"
for c in jq virsh ip; do
        command -v "$c" >/dev/null || vm_fail "no $c (scripts/setup-deps installs it)"
done
fig=$SVFF_VM_RUNDIR/figures.txt
: >"$fig"
. "$SVFF_VM_SRCDIR/bench/vm-lib.sh"

vm_nic_setup
n=7
[ "$(cat "$P/sriov_totalvfs")" -ge "$n" ] || vm_fail "PF $pf has fewer than $n VFs"

vm_libvirtd_start "max_client_requests = 16"
doms=""
for i in $(seq "$n"); do
        vm_domain_define "d$i"
        doms="$doms d$i"
done
vm_cleanup 'for d in $doms; do virsh -q destroy "$d" >/dev/null 2>&1; done'
vm_domains_start $doms
vm_svffd_start "$(jq -n --arg pf "$pf" '{ policies: { bench: { match: { address: $pf },
        nic: { mac_prefix: "02:53:00:00", nic_strict: false } } } }')"
svffctl init "$pf" "$n" >/dev/null || vm_fail "svffctl init $pf $n failed"
for i in $(seq 0 $((n - 1))); do
        v=$(basename "$(readlink "$P/virtfn$i")")
        svffctl attach "$v" "d$((i + 1))" --mac "02:00:00:00:bb:0$i" --vlan "10$i" --trust on --spoofchk off \
                >/dev/null || vm_fail "svffctl attach $v d$((i + 1)) failed"
done

reps=3
say "Reconf cycles $n -> 0 -> $n by svffd, $n assigned NIC VFs (igb), each with a MAC, a VLAN, trust and spoof checking"
for rep in $(seq "$reps"); do
        mon=$SVFF_VM_RUNDIR/monitor-$rep.json
        "$svffctl" --socket "$SVFF_SOCKET" monitor --json >"$mon" &
        mpid=$!
        sleep 0.5
        t0=$(now)
        svffctl reconf "$pf" "$n" >/dev/null || vm_fail "svffctl reconf $pf $n failed"
        t=$(since "$t0")
        sleep 0.2
        kill "$mpid"
        wait "$mpid" 2>/dev/null || true
        p=$(provision_s "$mon")
        echo "$t $p $rep" >>"$SVFF_VM_RUNDIR/cycles"
        say "  cycle $rep: $t s ($(phases "$mon")); NIC steps $(awk -v p="$p" -v c="$t" 'BEGIN { printf "%.0f%%", 100 * p / c }')"
done
# Every VF still has what it was given.
ip link show "$ifname" >"$SVFF_VM_RUNDIR/iplink.txt"
for i in $(seq 0 $((n - 1))); do
        grep -q "vf $i .*02:00:00:00:bb:0$i.*, vlan 10$i" "$SVFF_VM_RUNDIR/iplink.txt" ||
                vm_fail "VF $i lost its settings: $(grep "vf $i " "$SVFF_VM_RUNDIR/iplink.txt")"
done
set -- $(sort -g "$SVFF_VM_RUNDIR/cycles" | sed -n "$(((reps + 1) / 2))p")
say ""
say "Ratios"
say "  NIC steps (provision phase) share of the median cycle at $n VFs: $(awk -v p="$2" -v c="$1" 'BEGIN { printf "%.0f%% (%.2f s of %.2f s)", 100 * p / c, p, c }') (target <= 10%)"
