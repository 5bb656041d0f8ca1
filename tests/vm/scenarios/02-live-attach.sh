# Live attach and detach: 4 OS-less nested domains with native PCIe
# hotplug under a real libvirtd; 'svffctl attach' puts one VF live into
# each, visible in that domain's QMP query-pci at the address svffd
# recorded; 'detach' waits until the guest let go; re-attach at a chosen
# guest address; pause and unpause (detach-with-reservation on stock QEMU)
# bring the device back at that same guest address. A fifth domain keeps ACPI hotplug, which no
# OS-less guest answers: its detach is reported, and the VF stays
# 'detaching'.

command -v jq >/dev/null || vm_fail "no jq (scripts/setup-deps installs it)"
command -v virsh >/dev/null || vm_fail "no virsh (package libvirt-clients)"
modprobe nvme
modprobe vfio-pci
pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
vm_wait 10 test -e "/sys/bus/pci/devices/$pf/driver" || vm_fail "PF $pf did not bind nvme"
vm_libvirtd_start
doms="d1 d2 d3 d4"
for d in $doms; do vm_domain_define "$d"; done
vm_domain_define hold acpi
vm_cleanup 'for d in $doms hold; do virsh -q destroy "$d" >/dev/null 2>&1; done'
vm_domains_start $doms hold

# A short deadline: the ACPI domain is expected to miss it.
vm_svffd_start '{ "detach_timeout_sec": 3 }'
svffctl init "$pf" 4 >/dev/null || vm_fail "svffctl init $pf 4 failed"
vfs=""
for i in 0 1 2 3; do
        vfs="$vfs $(basename "$(readlink "/sys/bus/pci/devices/$pf/virtfn$i")")"
done

# check_attached VF DOM WHEN: query-pci, the live XML and svffd agree on
# where VF sits in DOM.
check_attached() {
        q=$(vm_qpci_wait "$2" "$1")
        x=$(vm_xml_addr "$2")
        s=$(vm_svff_addr "$1")
        assert_true "$3: VF $1 in $2's query-pci" test -n "$q"
        assert_eq "$3: VF $1 guest address, svffd vs live XML" "$x attached $2" "$s"
        # The firmware numbers the root ports' buses in libvirt's order.
        assert_eq "$3: VF $1 guest address, query-pci vs live XML" "$x" "$q"
}

# check_gone VF DOM WHEN
check_gone() {
        assert_eq "$3: VF $1 in $2's query-pci" "" "$(vm_qpci "$2" "$1")"
        assert_eq "$3: hostdev in $2's live XML" "" "$(vm_xml_addr "$2")"
}

# each CMD: runs CMD VF DOM for the pairs (VF i, domain i).
each() {
        set -- "$1" $doms
        cmd=$1
        shift
        for vf in $vfs; do
                $cmd "$vf" "$1"
                shift
        done
}

attach() {
        t=$(vm_now)
        svffctl attach "$1" "$2" || vm_fail "svffctl attach $1 $2 failed"
        vm_log "attach took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
        check_attached "$1" "$2" attach
}
each attach

detach() {
        t=$(vm_now)
        svffctl detach "$1" || vm_fail "svffctl detach $1 failed"
        vm_log "detach took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
        check_gone "$1" "$2" detach
        assert_eq "detach: VF $1 assignment in svffctl list" "" "$(vm_svff_addr "$1")"
}
each detach

# Again, on the second root port this time: libvirt's own pick would be
# the first, so an unpause that lost the reservation shows.
reattach() {
        svffctl attach --guest-address 02:00.0 "$1" "$2" >/dev/null ||
                vm_fail "svffctl attach --guest-address 02:00.0 $1 $2 failed"
        check_attached "$1" "$2" re-attach
        assert_eq "re-attach: VF $1 at the requested guest address" "2 0 0" "$(vm_xml_addr "$2")"
}
each reattach

pause_unpause() {
        before=$(vm_qpci_wait "$2" "$1")
        out=$(svffctl pause "$1") || vm_fail "svffctl pause $1 failed"
        echo "$out"
        assert_true "pause $1: a detach pause (stock QEMU)" eval 'case "$out" in *"detach pause"*) ;; *) false ;; esac'
        check_gone "$1" "$2" pause
        x=$(vm_svff_addr "$1")
        assert_eq "pause: VF $1 state and reserved address" "$before held $2" "$x"
        svffctl unpause "$1" || vm_fail "svffctl unpause $1 failed"
        assert_eq "unpause: VF $1 back at the same address in $2's query-pci" "$before" "$(vm_qpci_wait "$2" "$1")"
        check_attached "$1" "$2" unpause
}
each pause_unpause

# A guest holding the VF: ACPI hotplug, no OS to answer the unplug.
set -- $vfs
held=$4
svffctl detach "$held" >/dev/null || vm_fail "svffctl detach $held failed"
svffctl attach "$held" hold >/dev/null || vm_fail "svffctl attach $held hold failed"
check_attached "$held" hold "attach to hold"
rc=0
svffctl detach "$held" 2>"$SVFF_VM_RUNDIR/hold.err" || rc=$?
cat "$SVFF_VM_RUNDIR/hold.err"
assert_eq "detach from a guest that holds the VF: exit status" 1 "$rc"
assert_true "detach reports that the guest has not released the VF" \
        grep -q "guest has not released" "$SVFF_VM_RUNDIR/hold.err"
assert_eq "held VF state" detaching "$(vm_svff_addr "$held" | cut -d' ' -f4)"
assert_true "held VF still in hold's query-pci" test -n "$(vm_qpci hold "$held")"
