#!/bin/sh
# One scripted sequence of PCI sysfs operations on an SR-IOV PF, printed as a
# normalised transcript: run against the real kernel's /sys and against a
# pcisim mount, the two transcripts must be identical.
#
#   SYSFS_OP=path/to/sysfs-op tests/vm/conformance.sh SYSFS_ROOT PF
#
# Preconditions: PF has sriov_totalvfs >= 4, no VFs, is bound to its SR-IOV
# driver, and the vfio-pci driver is registered. Leaves it that way.
#
# Normalisations, each because the two sides may differ there for reasons
# that are not PCI sysfs behaviour:
# - link targets are printed relative to the link's directory after
#   resolving both ends (sysfs-op link), so the layout is compared, not the
#   mount point; an absolute link is flagged, since the kernel's never are;
# - IOMMU group numbers are replaced by "N": they depend on how many other
#   devices the machine has; that each VF has its own group is checked;
# - the PF's driver is printed as "PFDRV": the VM's is nvme, a scenario
#   may name another; the VFs' driver under test is always vfio-pci.
# Everything else, errno names included, is compared as is.
set -eu

root=$1
pf=$2
op() { "${SYSFS_OP:?set SYSFS_OP to the sysfs-op helper}" "$@"; }

dev=$root/bus/pci/devices
drv=$root/bus/pci/drivers
pfdrv=$(readlink "$dev/$pf/driver")
pfdrv=${pfdrv##*/}

# label PATH: the path as printed, relative to the sysfs root, the PF as
# "PF/", other devices by address. Shell expansions only: every process
# costs under TCG.
label() {
        case "$1" in
        "$dev/$pf/"*) echo "PF/${1#"$dev/$pf/"}" ;;
        "$dev/"*/*) echo "${1#"$dev/"}" ;;
        "$drv/"*) echo "drivers/${1#"$drv/"}" ;;
        *) echo "${1#"$root/"}" ;;
        esac
}
# settle PATH: up to 10 s for PATH to appear (no output: the next line
# shows whether it did).
settle() {
        i=0
        while [ "$i" -lt 100 ] && ! [ -e "$1" ]; do
                sleep 0.1
                i=$((i + 1))
        done
}
vfaddr() { t=$(readlink "$dev/$pf/virtfn$1"); echo "${t##*/}"; }

w() {  # w PATH VALUE [SHOWN-VALUE]
        echo "write $(label "$1") ${3:-$2} -> $(op write "$1" "$2")"
}
r() { echo "read $(label "$1") -> $(op read "$1")"; }
l() { echo "link $(label "$1") -> $(op link "$1")"; }
e() { echo "exists $(label "$1") -> $(op exists "$1")"; }
z() { echo "size $(label "$1") -> $(op size "$1")"; }
m() { echo "mode $(label "$1") -> $(op mode "$1")"; }

sequence() {
        P=$dev/$pf

        echo "# PF attributes"
        for a in sriov_totalvfs sriov_numvfs sriov_offset sriov_stride sriov_vf_device \
                 sriov_drivers_autoprobe driver_override vendor device class enable; do
                r "$P/$a"
        done
        z "$P/config"
        for a in sriov_totalvfs sriov_numvfs sriov_offset sriov_stride sriov_vf_device \
                 sriov_drivers_autoprobe driver_override vendor device class enable \
                 config remove rescan reset numa_node; do
                m "$P/$a"
        done
        for a in bind unbind new_id remove_id; do
                m "$drv/vfio-pci/$a"
        done
        m "$root/bus/pci/drivers_probe"
        m "$root/bus/pci/rescan"
        w "$P/sriov_totalvfs" 1
        w "$P/vendor" 1
        l "$P/driver"
        l "$P/iommu_group"
        l "$P/subsystem"
        e "$P/physfn"
        e "$P/virtfn0"
        l "$drv/$pfdrv/$pf"

        echo "# sriov_numvfs: parse, range, no change"
        w "$P/sriov_numvfs" x
        w "$P/sriov_numvfs" -1
        w "$P/sriov_numvfs" 65536
        w "$P/sriov_numvfs" "$(( $(op read "$P/sriov_totalvfs") + 1 ))" "totalvfs+1"
        w "$P/sriov_numvfs" 0
        w "$P/sriov_numvfs" " 0" '" 0"'
        w "$P/sriov_numvfs" "0 " '"0 "'
        w "$P/sriov_numvfs" +0
        w "$P/sriov_numvfs" 0x0
        w "$P/sriov_numvfs" 00
        w "$P/sriov_numvfs" "" '""'
        r "$P/sriov_numvfs"

        echo "# sriov_drivers_autoprobe"
        w "$P/sriov_drivers_autoprobe" 2
        w "$P/sriov_drivers_autoprobe" x
        w "$P/sriov_drivers_autoprobe" 0
        r "$P/sriov_drivers_autoprobe"

        echo "# enable 2 VFs; the count changes only through 0"
        w "$P/sriov_numvfs" 2
        r "$P/sriov_numvfs"
        w "$P/sriov_numvfs" 2
        w "$P/sriov_numvfs" 3
        w "$P/sriov_numvfs" 1
        r "$P/sriov_numvfs"
        l "$P/virtfn0"
        l "$P/virtfn1"
        e "$P/virtfn2"

        vf0=$(vfaddr 0)
        vf1=$(vfaddr 1)
        V=$dev/$vf0
        echo "# VF attributes (VF0 = $vf0)"
        for a in vendor device class driver_override enable; do
                r "$V/$a"
        done
        z "$V/config"
        for a in driver_override enable config remove rescan reset numa_node; do
                m "$V/$a"
        done
        l "$V/physfn"
        l "$V/subsystem"
        e "$V/driver"
        e "$V/sriov_numvfs"
        e "$V/virtfn0"
        l "$V/iommu_group"
        g0=$(readlink "$V/iommu_group"); g0=${g0##*/}
        g1=$(readlink "$dev/$vf1/iommu_group"); g1=${g1##*/}
        gp=$(readlink "$P/iommu_group"); gp=${gp##*/}
        echo "check VF0, VF1 and PF in distinct IOMMU groups -> $([ "$g0" != "$g1" ] && [ "$g0" != "$gp" ] && echo yes || echo no)"
        l "$root/kernel/iommu_groups/$g0/devices/$vf0"

        echo "# binding VF0: autoprobe 0, no override"
        w "$drv/$pfdrv/bind" "$vf0" VF0
        w "$drv/vfio-pci/bind" "$vf0" VF0
        w "$root/bus/pci/drivers_probe" "$vf0" VF0
        e "$V/driver"
        w "$drv/vfio-pci/unbind" "$vf0" VF0

        echo "# binding VF0: driver_override"
        w "$V/driver_override" vfio-pci
        r "$V/driver_override"
        e "$V/driver"
        w "$drv/$pfdrv/bind" "$vf0" VF0
        w "$root/bus/pci/drivers_probe" "$vf0" VF0
        l "$V/driver"
        l "$drv/vfio-pci/$vf0"
        r "$V/enable"
        w "$drv/vfio-pci/bind" "$vf0" VF0
        w "$drv/$pfdrv/unbind" "$vf0" VF0
        w "$drv/vfio-pci/unbind" "$vf0" VF0
        e "$V/driver"
        e "$drv/vfio-pci/$vf0"
        w "$drv/vfio-pci/bind" "$vf0" VF0
        l "$V/driver"
        w "$drv/vfio-pci/bind" nonsense
        w "$drv/vfio-pci/unbind" nonsense

        echo "# clearing driver_override keeps the current binding"
        w "$V/driver_override" "" '""'
        r "$V/driver_override"
        l "$V/driver"
        w "$drv/vfio-pci/unbind" "$vf0" VF0
        w "$root/bus/pci/drivers_probe" "$vf0" VF0
        e "$V/driver"

        echo "# dynamic ids: probe only devices allowed to probe"
        w "$drv/vfio-pci/new_id" "1b36 0010"
        w "$drv/vfio-pci/new_id" "1b36 0010"
        e "$V/driver"
        e "$dev/$vf1/driver"
        w "$drv/vfio-pci/remove_id" "1b36 0010"
        w "$drv/vfio-pci/remove_id" "1b36 0010"
        w "$drv/vfio-pci/new_id" "zz"

        echo "# disable with VF0 bound to vfio-pci (not open)"
        w "$V/driver_override" vfio-pci
        w "$root/bus/pci/drivers_probe" "$vf0" VF0
        l "$V/driver"
        w "$P/sriov_numvfs" 0
        r "$P/sriov_numvfs"
        e "$P/virtfn0"
        e "$P/virtfn1"
        e "$V"
        e "$dev/$vf1"
        e "$drv/vfio-pci/$vf0"
        e "$root/kernel/iommu_groups/$g0/devices/$vf0"

        echo "# removing a VF by hand"
        w "$P/sriov_numvfs" 2
        e "$P/remove"
        e "$dev/$vf1/remove"
        w "$dev/$vf1/remove" 1
        e "$dev/$vf1"
        e "$P/virtfn1"
        l "$P/virtfn1"
        r "$P/sriov_numvfs"
        w "$P/sriov_numvfs" 0
        e "$P/virtfn0"
        e "$P/virtfn1"

        echo "# the PF without a driver"
        w "$drv/vfio-pci/unbind" "$pf" PF
        w "$drv/$pfdrv/unbind" "$pf" PF
        e "$P/driver"
        w "$P/sriov_numvfs" 1
        w "$P/sriov_numvfs" 0
        w "$drv/$pfdrv/bind" "$pf" PF
        l "$P/driver"

        echo "# all VFs, then none"
        n=$(op read "$P/sriov_totalvfs")
        w "$P/sriov_numvfs" "$n" totalvfs
        r "$P/sriov_numvfs"
        i=0
        while [ "$i" -lt "$n" ]; do
                l "$P/virtfn$i"
                e "$dev/$(vfaddr "$i")/driver"
                i=$((i + 1))
        done
        e "$P/virtfn$n"
        w "$P/sriov_numvfs" 0
        e "$P/virtfn0"

        echo "# PF removed and found again by a rescan"
        w "$P/driver_override" "$pfdrv" PFDRV
        e "$P/remove"
        w "$P/remove" 1
        e "$P"
        e "$drv/$pfdrv/$pf"
        w "$root/bus/pci/rescan" 1
        e "$P"
        # The kernel's nvme probes asynchronously: wait for the bind.
        settle "$P/driver"
        l "$P/driver"
        r "$P/sriov_drivers_autoprobe"
        r "$P/sriov_numvfs"
        r "$P/driver_override"
        w "$P/sriov_drivers_autoprobe" 1
        r "$P/sriov_drivers_autoprobe"
        w "$root/bus/pci/rescan" 1
        w "$root/bus/pci/rescan" x
        r "$P/sriov_numvfs"
}

# The PF driver's name and IOMMU group numbers are normalised in one pass.
out=$(sequence)
printf '%s\n' "$out" | sed -e "s|/$pfdrv/|/PFDRV/|g; s|/$pfdrv\$|/PFDRV|; s|/$pfdrv |/PFDRV |g" \
        -e 's|/iommu_groups/[0-9][0-9]*|/iommu_groups/N|g'
