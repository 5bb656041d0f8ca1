# pcisim conformance: the same scripted sequence of sysfs operations
# (tests/vm/conformance.sh) against the real kernel's /sys here, and on the
# host, after the VM, against pcisim with tests/vm/nvme-vm.json, which
# models this VM's NVMe PF at the same address. Any difference in the
# transcripts fails.
#
# Beyond sriov_numvfs, binding and rescans it covers what pcisim used to
# get wrong: unbinding and removing a PF with VFs enabled, vfio-pci and a
# PF with VFs, vfio-pci's enable_sriov, a VF held open by a VFIO user
# while its VFs are disabled, enable, numa_node, config and both without
# CAP_SYS_ADMIN, the bus drivers_autoprobe, a device's rescan. The remove
# of a PF with VFs enabled comes last and nothing writes sriov_numvfs
# after it: the orphaned VFs cannot be cleaned up, and enabling VFs over
# them once hit a kernel BUG. (A device's rescan is checked on this VM's
# single bus only: that it leaves other buses alone is pcisim's own test.)

sysfs_op=$(vm_svff_bin sysfs-op) || vm_fail "no tests/vm/sysfs-op in $SVFF_VM_BUILDDIR ('make check-vm' builds it)"
export SYSFS_OP="$sysfs_op"
kernel_out=$SVFF_VM_RUNDIR/conformance-kernel.txt

modprobe nvme
modprobe vfio-pci
# the VF held open goes through a type1 container, as QEMU's does
modprobe vfio_iommu_type1
pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
vm_wait 10 test -e "/sys/bus/pci/devices/$pf/driver" || vm_fail "PF $pf did not bind nvme"
assert_eq "PF address (nvme-vm.json assumes it)" 0000:00:03.0 "$pf"

vm_log "conformance sequence against the kernel"
"$SVFF_VM_SRCDIR/tests/vm/conformance.sh" /sys "$pf" >"$kernel_out"
vm_log "kernel transcript: $(wc -l <"$kernel_out") lines"

# The host compares it with pcisim's (06-conformance.host): pcisim runs on
# the host's kernel there, as in the integration tier.
