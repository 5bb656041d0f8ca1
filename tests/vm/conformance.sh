#!/bin/sh
# One scripted sequence of PCI sysfs operations on an SR-IOV PF, printed as a
# normalised transcript: run against the real kernel's /sys and against a
# pcisim mount, the two transcripts must be identical.
#
#   SYSFS_OP=path/to/sysfs-op tests/vm/conformance.sh SYSFS_ROOT PF
#
# Preconditions: PF has sriov_totalvfs >= 4, no VFs, is bound to its SR-IOV
# driver (one whose remove() leaves SR-IOV on, as nvme's does), the
# vfio-pci and vfio_iommu_type1 modules are loaded, and 0000:00:00.0 is a
# device on the PF's bus. It ends by removing the PF with VFs enabled:
# that leaves orphaned VFs the kernel cannot clean up (enabling VFs over
# them fails, and once hit a kernel BUG), so it is the last thing done,
# and nothing writes sriov_numvfs after it. Run it once per boot.
#
# A VF held open: on the kernel, sysfs-op hold opens it through VFIO as
# QEMU does; on pcisim (SYSFS_ROOT/.pcisim/ctl exists) the control
# channel's hold does the same.
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
# gone PATH: up to 10 s for PATH to disappear.
gone() {
        i=0
        while [ "$i" -lt 100 ] && [ -e "$1" ]; do
                sleep 0.1
                i=$((i + 1))
        done
}

tmpd=$(mktemp -d)
holdpid=
cleanup() {
        [ -z "$holdpid" ] || kill "$holdpid" 2>/dev/null || true
        rm -rf "$tmpd"
}
trap cleanup EXIT
sim=
[ -e "$root/.pcisim/ctl" ] && sim=1
# hold BDF NAME / release BDF NAME: a VFIO user opens the VF and lets go.
hold() {
        if [ -n "$sim" ]; then
                echo "hold $2 -> $(op write "$root/.pcisim/ctl" "hold $1")"
                return
        fi
        g=$(readlink "$dev/$1/iommu_group")
        : >"$tmpd/hold"
        # Not through op(): $! must be the holder itself, to kill it.
        "$SYSFS_OP" hold "/dev/vfio/${g##*/}" "$1" >"$tmpd/hold" 2>&1 &
        holdpid=$!
        i=0
        while [ "$i" -lt 100 ] && ! [ -s "$tmpd/hold" ]; do
                sleep 0.1
                i=$((i + 1))
        done
        echo "hold $2 -> $(head -n1 "$tmpd/hold")"
}
release() {
        if [ -n "$sim" ]; then
                echo "release $2 -> $(op write "$root/.pcisim/ctl" "release $1")"
                return
        fi
        kill "$holdpid" 2>/dev/null || true
        wait "$holdpid" 2>/dev/null || true
        holdpid=
        echo "release $2 -> OK"
}

w() {  # w PATH VALUE [SHOWN-VALUE]
        echo "write $(label "$1") ${3:-$2} -> $(op write "$1" "$2")"
}
r() { echo "read $(label "$1") -> $(op read "$1")"; }
l() { echo "link $(label "$1") -> $(op link "$1")"; }
e() { echo "exists $(label "$1") -> $(op exists "$1")"; }
z() { echo "size $(label "$1") -> $(op size "$1")"; }
m() { echo "mode $(label "$1") -> $(op mode "$1")"; }
c() { echo "count $(label "$1") -> $(op count "$1")"; }
# Without CAP_SYS_ADMIN:
cu() { echo "count (unprivileged) $(label "$1") -> $(op -u count "$1")"; }
wu() { echo "write (unprivileged) $(label "$1") $2 -> $(op -u write "$1" "$2")"; }

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
        r "$P/enable"
        w "$P/enable" 1
        r "$P/enable"
        w "$P/enable" 0
        w "$P/enable" 0
        r "$P/enable"
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

        echo "# bus drivers_autoprobe: only a leading 0 turns it off"
        B=$root/bus/pci/drivers_autoprobe
        m "$B"
        r "$B"
        for v in 0 n 0 off 0x1 x 00 "" 1; do
                w "$B" "$v" "\"$v\""
                r "$B"
        done

        echo "# enable with a driver bound"
        r "$P/enable"
        w "$P/enable" x
        w "$P/enable" 0
        w "$P/enable" 1
        r "$P/enable"

        echo "# numa_node: -1 or an online node"
        numa=$(op read "$P/numa_node")
        for v in 1 2 64 1024 -2 -+1 x ""; do
                w "$P/numa_node" "$v" "\"$v\""
        done
        w "$P/numa_node" 0
        r "$P/numa_node"
        w "$P/numa_node" -1
        r "$P/numa_node"
        w "$P/numa_node" +0x0
        r "$P/numa_node"
        w "$P/numa_node" "$numa" "(as before)"

        echo "# without CAP_SYS_ADMIN"
        c "$P/config"
        cu "$P/config"
        wu "$P/enable" 1
        wu "$P/numa_node" 0

        echo "# disabling with VF0 open by a VFIO user"
        w "$P/sriov_drivers_autoprobe" 0
        w "$P/sriov_numvfs" 2
        vf0=$(vfaddr 0)
        vf1=$(vfaddr 1)
        V=$dev/$vf0
        w "$V/driver_override" vfio-pci
        w "$root/bus/pci/drivers_probe" "$vf0" VF0
        l "$V/driver"
        hold "$vf0" VF0
        "$SYSFS_OP" write "$P/sriov_numvfs" 0 >"$tmpd/writer" 2>&1 &
        writer=$!
        # VF 0 goes first: once its link is gone the writer is stuck on it.
        gone "$P/virtfn0"
        sleep 1
        e "$P/virtfn0"
        e "$P/virtfn1"
        e "$V"
        e "$dev/$vf1"
        e "$V/physfn"
        e "$dev/$vf1/physfn"
        e "$V/driver"
        l "$P/virtfn1"
        echo "check the writer still blocked -> $([ -s "$tmpd/writer" ] && echo no || echo yes)"
        release "$vf0" VF0
        wait "$writer" || true
        echo "write PF/sriov_numvfs 0 (while VF0 was held) -> $(cat "$tmpd/writer")"
        e "$V"
        e "$dev/$vf1"
        r "$P/sriov_numvfs"

        echo "# unbinding the PF driver with VFs enabled keeps them"
        w "$P/sriov_numvfs" 2
        w "$drv/$pfdrv/unbind" "$pf" PF
        e "$P/driver"
        r "$P/sriov_numvfs"
        l "$P/virtfn0"
        l "$P/virtfn1"
        e "$V/physfn"
        r "$P/enable"
        w "$P/sriov_numvfs" 0
        w "$P/sriov_numvfs" 1
        w "$P/sriov_numvfs" 2

        echo "# vfio-pci refuses a PF with VFs enabled"
        w "$P/driver_override" vfio-pci
        w "$drv/vfio-pci/bind" "$pf" PF
        w "$root/bus/pci/drivers_probe" "$pf" PF
        e "$P/driver"
        r "$P/sriov_numvfs"
        w "$P/driver_override" "" '""'
        w "$drv/$pfdrv/bind" "$pf" PF
        l "$P/driver"
        w "$P/sriov_numvfs" 0
        e "$P/virtfn0"

        echo "# vfio-pci on the PF: sriov_numvfs only with enable_sriov"
        E=$root/module/vfio_pci/parameters/enable_sriov
        m "$E"
        r "$E"
        w "$drv/$pfdrv/unbind" "$pf" PF
        w "$P/driver_override" vfio-pci
        w "$root/bus/pci/drivers_probe" "$pf" PF
        l "$P/driver"
        w "$P/sriov_numvfs" 1
        w "$P/sriov_numvfs" 0
        w "$E" maybe
        w "$E" y
        r "$E"
        w "$P/sriov_numvfs" 1
        r "$P/sriov_numvfs"
        vf0=$(vfaddr 0)
        V=$dev/$vf0
        r "$V/driver_override"
        settle "$V/driver"
        l "$V/driver"
        w "$P/sriov_numvfs" 2
        w "$drv/vfio-pci/unbind" "$pf" PF
        r "$P/sriov_numvfs"
        e "$V"
        w "$E" N
        r "$E"
        w "$P/driver_override" "" '""'
        w "$drv/$pfdrv/bind" "$pf" PF
        l "$P/driver"

        echo "# a device's rescan (0000:00:00.0 shares the PF's bus)"
        H=$dev/0000:00:00.0
        m "$H/rescan"
        w "$P/remove" 1
        e "$P"
        w "$H/rescan" x
        w "$H/rescan" 0
        e "$P"
        w "$H/rescan" 1
        e "$P"
        settle "$P/driver"
        l "$P/driver"

        echo "# removing the PF with VFs enabled orphans them (last: no way back)"
        w "$P/sriov_drivers_autoprobe" 0
        w "$P/sriov_numvfs" 2
        vf0=$(vfaddr 0)
        vf1=$(vfaddr 1)
        V=$dev/$vf0
        w "$P/remove" 1
        e "$P"
        e "$V"
        e "$dev/$vf1"
        e "$V/physfn"
        l "$V/physfn"
        e "$V/driver"
        w "$root/bus/pci/rescan" 1
        e "$P"
        settle "$P/driver"
        l "$P/driver"
        r "$P/sriov_numvfs"
        r "$P/sriov_drivers_autoprobe"
        e "$P/virtfn0"
        e "$V"
        e "$dev/$vf1"
        l "$V/physfn"
        echo "# not done: enabling VFs over the orphans (ENOENT, then a kernel BUG)"
}

# The PF driver's name and IOMMU group numbers are normalised in one pass,
# line by line: a guest that dies half-way still leaves what it did.
sequence | sed -u -e "s|/$pfdrv/|/PFDRV/|g; s|/$pfdrv\$|/PFDRV|; s|/$pfdrv |/PFDRV |g" \
        -e 's|/iommu_groups/[0-9][0-9]*|/iommu_groups/N|g'
