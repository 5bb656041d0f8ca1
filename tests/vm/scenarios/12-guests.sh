# Real Linux guests keep their NVMe namespace and their network through a
# reconf. One outer VM with both PFs (QEMU 10: the emulated NVMe PF with
# 4 VFs and a namespace each, and the igb NIC PF with 2 VFs), and one
# nested guest, g1: Debian's full kernel flavour (Linux >= 6.16, its
# nvme, ext4, igbvf and virtio_net modules with a busybox initramfs,
# loaded with the options its command line gives them, as modprobe
# does), booted once by libvirt with direct kernel boot and ACPI hotplug
# (tests/vm/run --guest), with a virtio-net failover standby on a bridge
# of this VM. Then, in that one boot:
#   - the NVMe part (tests/vm/guest-nvme.sh): an NVMe VF's namespace as
#     the guest's multipath head, under the guest's direct I/O and a
#     mounted ext4, through reconfs with delayed removal, with svffd
#     killed mid-reconf, and with the guest's defaults;
#   - the NIC part (tests/vm/guest-nic.sh): a NIC VF paired with the
#     standby, the guest pinging every 10 ms through reconfs, and the VF
#     alone.
# Each part measures its case with the guest's setup and without it.
#
# vm-run: --nic --namespaces --guest

[ "${SVFF_VM_NIC:-0}" = 1 ] || vm_fail "needs tests/vm/run --nic (QEMU 10's igb): it never skips"
command -v jq >/dev/null || vm_fail "no jq (scripts/setup-deps installs it)"
command -v mkfs.ext4 >/dev/null || vm_fail "no mkfs.ext4 (package e2fsprogs)"
command -v ip >/dev/null || vm_fail "no ip (package iproute2)"
[ "${SVFF_VM_NAMESPACES:-0}" -ge 4 ] || vm_fail "needs tests/vm/run --namespaces with 4 VFs"
R=$SVFF_VM_RUNDIR
t_start=$(vm_now)

# ---- the NVMe PF ----
# Namespace 2, VF 1's: ext4 on its first 12 MiB, the probe's blocks after
# it. No controller has the namespace yet: its image is written directly.
mkfs.ext4 -q -F -b 4096 "$R/ns2.img" 12M || vm_fail "mkfs.ext4 on namespace 2's image failed"
modprobe nvme
modprobe vfio-pci
nvme_pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
vm_wait 20 test -e "/sys/bus/pci/devices/$nvme_pf/driver" || vm_fail "PF $nvme_pf did not bind nvme"

# ---- the NIC PF, and the guest's network in this VM ----
# br0 holds the PF's interface and, once g1 runs, the standby's tap.
mac=52:54:00:53:00:01
host_ip=10.53.0.1
guest_ip=10.53.0.2
vm_nic_setup
nic_pf=$pf
modprobe bridge
modprobe tun
ip link add br0 type bridge forward_delay 0 || vm_fail "ip link add br0 type bridge failed"
ip link set "$ifname" master br0 || vm_fail "ip link set $ifname master br0 failed"
ip addr add "$host_ip/24" dev br0
ip link set br0 up
ip link set "$ifname" up
vm_libvirtd_start

# A guest that hammers a dying disk is slow to release it: a deadline that
# does not decide the outcome of the NVMe part's defaults.
config=$(jq -n --arg nvme "$nvme_pf" --arg nic "$nic_pf" '{ detach_timeout_sec: 60, policies: {
        nvme: { match: { address: $nvme }, nvme: { vq: 2, vi: 1, namespace: [1, 2, 3, 4] } },
        nic: { match: { address: $nic }, nic: { "mac_prefix": "02:53:00:00", "nic_strict": false } } } }')
vm_svffd_start "$config"
svffctl init "$nvme_pf" 4 >"$R/init.out" 2>&1 || { cat "$R/init.out"; vm_fail "svffctl init $nvme_pf 4 failed"; }
svffctl init "$nic_pf" 2 >"$R/init-nic.out" 2>&1 || { cat "$R/init-nic.out"; vm_fail "svffctl init $nic_pf 2 failed"; }

# ---- the guest: direct kernel boot, console on ttyS0, commands on ttyS1 ----
# The recipe's kernel parameters: multipath is on by default where NVMe
# multipath is built in; multipath_always_on gives a namespace that is not
# shared a head too (QEMU's is shared, so this guest has one either way).
# The standby: a virtio-net on br0, the failover's persistent half.
. "$SVFF_VM_SRCDIR/tests/vm/guest-lib.sh"
standby="<interface type='bridge'>
      <mac address='$mac'/>
      <source bridge='br0'/>
      <model type='virtio'/>
      <teaming type='persistent'/>
      <alias name='ua-standby'/>
    </interface>
    <controller type='pci' index='4' model='pcie-root-port'/>"
guest_define "nvme_core.multipath=Y nvme_core.multipath_always_on=1" "$standby"
guest_start

. "$SVFF_VM_SRCDIR/tests/vm/guest-nvme.sh"
. "$SVFF_VM_SRCDIR/tests/vm/guest-nic.sh"
vm_log "FIGURE scenario wall time inside the VM: $(echo "$t_start $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }') s"
