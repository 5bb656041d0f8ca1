# The harness itself: the guest booted the host's kernel with VT-d on, the
# emulated NVMe PF is there with SR-IOV, and the host's trees are visible.

pf=$(vm_nvme_pf) || vm_fail "no NVMe PF (1b36:0010) with SR-IOV in /sys/bus/pci/devices"
vm_log "NVMe PF at $pf"
assert_eq "PF sriov_totalvfs" "$SVFF_VM_VFS" "$(cat /sys/bus/pci/devices/$pf/sriov_totalvfs)"
assert_eq "PF sriov_numvfs" 0 "$(cat /sys/bus/pci/devices/$pf/sriov_numvfs)"
assert_exists /sys/bus/pci/devices/$pf/iommu_group
assert_true "IOMMU groups exist (VT-d on)" test -n "$(ls /sys/kernel/iommu_groups)"
assert_true "build tree visible" test -d "$SVFF_VM_BUILDDIR"
assert_true "root is writable (overlay)" touch /etc/.vm-write-test
t=$(vm_now)
modprobe nvme
modprobe vfio-pci
vm_log "modprobe nvme vfio-pci: $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
assert_exists /sys/bus/pci/drivers/vfio-pci
vm_wait 10 test -e /sys/bus/pci/devices/$pf/driver || vm_fail "PF did not bind nvme"
assert_eq "PF driver" nvme "$(basename "$(readlink /sys/bus/pci/devices/$pf/driver)")"
