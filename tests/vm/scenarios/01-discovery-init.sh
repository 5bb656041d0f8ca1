# Discovery and init: svffd finds the NVMe PF; 'svffctl init PF 4' creates
# 4 VFs on vfio-pci with a /dev/vfio/<group> each; 'list --json' matches
# the kernel's sysfs field by field, before and after.

command -v jq >/dev/null || vm_fail "no jq (scripts/setup-deps installs it)"
modprobe nvme
modprobe vfio-pci
pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
P=/sys/bus/pci/devices/$pf
vm_wait 10 test -e "$P/driver" || vm_fail "PF $pf did not bind nvme"
vm_svffd_start

# Sysfs values spelt as the JSON spells them; 'read' rather than cat, since
# every process costs under TCG.
attr() { read -r v <"$1" && echo "$v"; }
link_name() { if [ -L "$1" ]; then v=$(readlink "$1"); echo "${v##*/}"; else echo null; fi; }
hex() { printf "%0${1}x" "$2"; }

# sysfs_fields: the fields 'list --json' must show, read from /sys.
sysfs_fields() {
        echo "address $pf"
        echo "vendor_id $(hex 4 "$(attr "$P/vendor")")"
        echo "device_id $(hex 4 "$(attr "$P/device")")"
        echo "class $(hex 6 "$(attr "$P/class")")"
        echo "totalvfs $(attr "$P/sriov_totalvfs")"
        echo "numvfs $(attr "$P/sriov_numvfs")"
        echo "vf_device_id $(hex 4 "0x$(attr "$P/sriov_vf_device")")"
        echo "driver $(link_name "$P/driver")"
        echo "autoprobe $([ "$(attr "$P/sriov_drivers_autoprobe")" = 1 ] && echo true || echo false)"
        echo "iommu_group $(link_name "$P/iommu_group")"
        n=$(attr "$P/sriov_numvfs")
        echo "vfs $n"
        i=0
        while [ "$i" -lt "$n" ]; do
                V=$P/virtfn$i
                echo "vf$i.address $(link_name "$V")"
                echo "vf$i.driver $(link_name "$V/driver")"
                o=$(attr "$V/driver_override")
                echo "vf$i.driver_override $([ "$o" = "(null)" ] && echo null || echo "$o")"
                echo "vf$i.iommu_group $(link_name "$V/iommu_group")"
                echo "vf$i.assigned_to null"
                i=$((i + 1))
        done
}

# The same fields from 'svffctl list --json' (JSON null prints as null).
json_fields() {
        jq -r --arg a "$pf" '.pfs[] | select(.address == $a) |
                "address \(.address)", "vendor_id \(.vendor_id)", "device_id \(.device_id)",
                "class \(.class)", "totalvfs \(.totalvfs)", "numvfs \(.numvfs)",
                "vf_device_id \(.vf_device_id)", "driver \(.driver)", "autoprobe \(.autoprobe)",
                "iommu_group \(.iommu_group)", "vfs \(.vfs | length)",
                (.vfs | sort_by(.index)[] |
                        "vf\(.index).address \(.address)", "vf\(.index).driver \(.driver)",
                        "vf\(.index).driver_override \(.driver_override)",
                        "vf\(.index).iommu_group \(.iommu_group)",
                        "vf\(.index).assigned_to \(.assigned_to)")' "$1"
}

# compare_list WHEN: 'svffctl list --json' against /sys, field by field.
compare_list() {
        svffctl list --json >"$SVFF_VM_RUNDIR/list.json" || vm_fail "svffctl list --json failed ($1)"
        sysfs_fields >"$SVFF_VM_RUNDIR/list.sysfs"
        json_fields "$SVFF_VM_RUNDIR/list.json" >"$SVFF_VM_RUNDIR/list.fields" ||
                vm_fail "$1: cannot read list.json"
        [ -s "$SVFF_VM_RUNDIR/list.fields" ] || vm_fail "$1: PF $pf not in 'svffctl list --json'"
        vm_checks=$((vm_checks + 1))
        if diff -u "$SVFF_VM_RUNDIR/list.sysfs" "$SVFF_VM_RUNDIR/list.fields"; then
                sed "s/^/ok: $1: list --json = sysfs: /" "$SVFF_VM_RUNDIR/list.sysfs"
        else
                vm_fail "$1: 'svffctl list --json' differs from sysfs (- sysfs, + list)"
        fi
}

vm_log "list before init"
assert_eq "PF vendor:device" "0x1b36:0x0010" "$(cat "$P/vendor"):$(cat "$P/device")"
compare_list "before init"

vm_log "svffctl init $pf 4"
t=$(vm_now)
svffctl init "$pf" 4 >"$SVFF_VM_RUNDIR/init.out" 2>&1 ||
        { cat "$SVFF_VM_RUNDIR/init.out"; vm_fail "svffctl init $pf 4 failed"; }
vm_log "init took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"

assert_eq "sriov_numvfs after init" 4 "$(cat "$P/sriov_numvfs")"
groups=""
for i in 0 1 2 3; do
        V=$P/virtfn$i
        assert_eq "VF $i driver" vfio-pci "$(link_name "$V/driver")"
        g=$(link_name "$V/iommu_group")
        assert_true "VF $i /dev/vfio/$g is a character device" test -c "/dev/vfio/$g"
        case " $groups " in *" $g "*) vm_fail "VF $i shares IOMMU group $g" ;; esac
        groups="$groups $g"
done
compare_list "after init"
