# pcisim conformance: the same scripted sequence of sysfs operations
# (tests/vm/conformance.sh) against the real kernel's /sys and against
# pcisim with tests/vm/nvme-vm.json, which models this VM's NVMe PF at the
# same address. Any difference in the transcripts fails.

sysfs_op=$(vm_svff_bin sysfs-op) || vm_fail "no tests/vm/sysfs-op in $SVFF_VM_BUILDDIR ('make check-vm' builds it)"
export SYSFS_OP="$sysfs_op"
kernel_out=$SVFF_VM_RUNDIR/conformance-kernel.txt
sim_out=$SVFF_VM_RUNDIR/conformance-pcisim.txt

modprobe nvme
modprobe vfio-pci
pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
vm_wait 10 test -e "/sys/bus/pci/devices/$pf/driver" || vm_fail "PF $pf did not bind nvme"
assert_eq "PF address (nvme-vm.json assumes it)" 0000:00:03.0 "$pf"

vm_log "conformance sequence against the kernel"
"$SVFF_VM_SRCDIR/tests/vm/conformance.sh" /sys "$pf" >"$kernel_out"
vm_log "kernel transcript: $(wc -l <"$kernel_out") lines"

pcisim=$SVFF_VM_BUILDDIR/tests/pcisim/pcisim
[ -x "$pcisim" ] || vm_fail "no pcisim in $SVFF_VM_BUILDDIR: cannot compare (kernel transcript kept in conformance-kernel.txt)"
modprobe fuse
mnt=/run/pcisim
mkdir -p "$mnt"
"$pcisim" --scenario "$SVFF_VM_SRCDIR/tests/vm/nvme-vm.json" -f "$mnt" >"$SVFF_VM_RUNDIR/pcisim.log" 2>&1 &
sim_pid=$!
vm_cleanup "fusermount3 -u $mnt 2>/dev/null || umount -l $mnt; wait $sim_pid 2>/dev/null"
vm_wait 10 test -e "$mnt/bus/pci/devices/$pf" || vm_fail "pcisim did not show $pf (log: pcisim.log)"

vm_log "conformance sequence against pcisim"
"$SVFF_VM_SRCDIR/tests/vm/conformance.sh" "$mnt" "$pf" >"$sim_out"

vm_checks=$((vm_checks + 1))
if diff -u "$kernel_out" "$sim_out" >"$SVFF_VM_RUNDIR/conformance.diff"; then
        echo "ok: pcisim's transcript equals the kernel's ($(wc -l <"$kernel_out") operations)"
else
        cat "$SVFF_VM_RUNDIR/conformance.diff"
        vm_fail "pcisim differs from the kernel (- kernel, + pcisim)"
fi
