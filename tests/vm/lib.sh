# Helpers for VM-tier scenarios (sourced inside the guest by run-inside).
# Each check prints what it checks; the first broken one ends the scenario
# with a message saying what was expected and what was found.
#
# A scenario, tests/vm/scenarios/NN-name.sh, is sourced with set -eu as
# root in the guest after these helpers; it ends with status 0 (pass), 77
# (vm_skip) or anything else (fail). Files it writes to $SVFF_VM_RUNDIR are
# kept on the host. An optional NN-name.host is sourced on the host after
# a passing guest, in the run directory, with the same SVFF_VM_* paths.
# One that calls vm_reboot at the end of its first part is booted again,
# its root's changes kept, and its NN-name.boot2 runs there instead
# (SVFF_VM_BOOT: 1, then 2).
# Add new scenarios to vm_scenarios in Makefile.am.
#
# Environment: SVFF_VM_SRCDIR, SVFF_VM_BUILDDIR (the host's trees, read-only
# here, at the same paths), SVFF_VM_RUNDIR (shared with the host, kept
# after the run), SVFF_VM_VFS (the PF's sriov_max_vfs, tests/vm/run --vfs),
# SVFF_VM_SYSTEMD (1: systemd is PID 1 and the scenario runs from a unit,
# tests/vm/run --systemd) with SVFF_VM_SHIPPED_BUILDDIR (the README's
# operator build, for 'make install').
# The guest has 2 CPUs and 2 GiB; /run, /tmp, /var/log and the overlay root
# are tmpfs; nothing the host runs is running here.

vm_t0=$(cut -d' ' -f1 /proc/uptime)
vm_checks=0
vm_cleanups=""

vm_now() { cut -d' ' -f1 /proc/uptime; }

# vm_log MESSAGE: a progress line with the guest's uptime.
vm_log() { echo "[$(vm_now)] $*"; }

vm_fail() {
        echo "FAILED: $*" >&2
        exit 1
}

# vm_skip REASON: the scenario cannot run here (exit 77).
vm_skip() {
        echo "SKIP: $*"
        exit 77
}

# assert_eq WHAT EXPECTED ACTUAL
assert_eq() {
        vm_checks=$((vm_checks + 1))
        if [ "$2" = "$3" ]; then
                echo "ok: $1 = '$3'"
        else
                vm_fail "$1: expected '$2', got '$3'"
        fi
}

# assert_true WHAT COMMAND...: COMMAND must succeed.
assert_true() {
        what=$1
        shift
        vm_checks=$((vm_checks + 1))
        if "$@"; then
                echo "ok: $what"
        else
                vm_fail "$what (command failed: $*)"
        fi
}

# assert_exists PATH and assert_missing PATH (symlinks count as present)
assert_exists() {
        vm_checks=$((vm_checks + 1))
        if [ -e "$1" ] || [ -L "$1" ]; then echo "ok: $1 exists"; else vm_fail "$1 does not exist"; fi
}
assert_missing() {
        vm_checks=$((vm_checks + 1))
        if [ -e "$1" ] || [ -L "$1" ]; then vm_fail "$1 exists, expected it gone"; else echo "ok: $1 absent"; fi
}

# vm_cleanup COMMAND: run at exit, last registered first.
vm_cleanup() { vm_cleanups="$1; $vm_cleanups"; }

vm_exit() {
        rc=$?
        set +e
        trap - EXIT
        eval "$vm_cleanups"
        vm_save_caps
        exit "$rc"
}

vm_begin() {
        trap vm_exit EXIT
        vm_log "scenario $SVFF_VM_NAME: kernel $(uname -r), $SVFF_VM_VFS VFs max"
}

vm_end() {
        [ -z "${svffd_pid:-}" ] || vm_svffd_stop
        vm_log "scenario $SVFF_VM_NAME: $vm_checks checks passed"
}

# vm_reboot: ends this boot's part of the scenario (its cleanups run now)
# and asks tests/vm/run for a second boot of the same VM, on a root that
# kept this boot's changes, where the scenario's NAME.boot2 runs
# (SVFF_VM_BOOT=2).
vm_reboot() {
        vm_log "scenario $SVFF_VM_NAME: $vm_checks checks passed in boot $SVFF_VM_BOOT; booting again"
        : >"$SVFF_VM_RUNDIR/reboot"
        exit 0
}

# vm_wait SECONDS COMMAND...: poll COMMAND every 0.1 s until it succeeds;
# fails after SECONDS of guest uptime (TCG makes each poll slow).
vm_wait() {
        deadline=$(awk -v t="$1" '{ print $1 + t }' /proc/uptime)
        shift
        while ! "$@"; do
                awk -v d="$deadline" '{ exit !($1 > d) }' /proc/uptime && return 1
                sleep 0.1
        done
}

# vm_nvme_pf: the emulated NVMe PF's address (QEMU's 1b36:0010).
vm_nvme_pf() {
        for d in /sys/bus/pci/devices/*; do
                if [ "$(cat "$d/vendor")" = 0x1b36 ] && [ "$(cat "$d/device")" = 0x0010 ] &&
                   [ -e "$d/sriov_totalvfs" ]; then
                        basename "$d"
                        return 0
                fi
        done
        return 1
}

# vm_nic_pf: the SR-IOV NIC's PF address (QEMU 10's igb, 8086:10c9;
# tests/vm/run --nic).
vm_nic_pf() {
        for d in /sys/bus/pci/devices/*; do
                if [ "$(cat "$d/vendor")" = 0x8086 ] && [ "$(cat "$d/device")" = 0x10c9 ] &&
                   [ -e "$d/sriov_totalvfs" ]; then
                        basename "$d"
                        return 0
                fi
        done
        return 1
}

# vm_svff_bin NAME: path of a host-built program, or skip if not built.
vm_svff_bin() {
        for p in "$SVFF_VM_BUILDDIR/daemon/$1" "$SVFF_VM_BUILDDIR/cli/$1" "$SVFF_VM_BUILDDIR/tests/vm/$1"; do
                [ -x "$p" ] && { echo "$p"; return 0; }
        done
        return 1
}

# vm_svffd_start [CONFIG]: svffd against the real sysfs, state on tmpfs,
# with CONFIG (JSON text) as its config file. A restart (after
# vm_svffd_stop or a kill) keeps the state directory.
vm_svffd_start() {
        svffd=$(vm_svff_bin svffd) || vm_fail "no svffd in $SVFF_VM_BUILDDIR: build it first"
        svffctl=$(vm_svff_bin svffctl) || vm_fail "no svffctl in $SVFF_VM_BUILDDIR: build it first"
        SVFF_SOCKET=/run/svff.sock
        export SVFF_SOCKET
        mkdir -p /run/svff-state
        # A killed svffd leaves its socket: wait for the new one's.
        rm -f "$SVFF_SOCKET"
        # No settings unless given. svffd refuses /dev/null (not a regular
        # file) and an empty file: an empty JSON object it is.
        echo "${1:-{\}}" >/run/svff.conf
        # A sanitizer build records each allocation's whole stack, not
        # the frame-pointer walk that ends in the first library built
        # without them: a leak report then names where it was made, and
        # tests/lsan.supp can match a library's own.
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:fast_unwind_on_malloc=0:malloc_context_size=64}" \
        "$svffd" --sysfs-root /sys --state-dir /run/svff-state --socket "$SVFF_SOCKET" \
                --config /run/svff.conf >>"$SVFF_VM_RUNDIR/svffd.log" 2>&1 &
        svffd_pid=$!
        vm_cleanup '[ -z "${svffd_pid:-}" ] || { kill "$svffd_pid"; wait "$svffd_pid"; } 2>/dev/null'

        vm_wait 20 vm_svffd_up || vm_fail "svffd did not create $SVFF_SOCKET (log: svffd.log)"
        vm_log "svffd running (pid $svffd_pid)"
}

vm_svffd_up() {
        kill -0 "$svffd_pid" 2>/dev/null ||
                vm_fail "svffd exited: $(tail -n 5 "$SVFF_VM_RUNDIR/svffd.log")"
        test -S "$SVFF_SOCKET"
}

# vm_svffd_stop: SIGTERM; svffd must exit 0 with no sanitizer report
# (sanitizer builds report leaks and errors only on their way out).
vm_svffd_stop() {
        kill "$svffd_pid"
        rc=0
        wait "$svffd_pid" || rc=$?
        svffd_pid=
        if [ "$rc" != 0 ]; then
                echo "svffd.log, last 60 lines:"
                tail -n 60 "$SVFF_VM_RUNDIR/svffd.log"
        fi
        assert_eq "svffd exit status after SIGTERM" 0 "$rc"
        vm_checks=$((vm_checks + 1))
        if grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$SVFF_VM_RUNDIR/svffd.log"; then
                vm_fail "svffd: sanitizer report in svffd.log"
        fi
        echo "ok: no sanitizer report from svffd"
}

# svffctl ARGS...: the host-built CLI against the guest's daemon.
svffctl() { "$svffctl" --socket "$SVFF_SOCKET" "$@"; }

# vm_status_after_change FILE: 'svffctl status --json' into FILE once a
# change made behind svffd's back is sure to show: svffd reads the device
# classes for drift at most once per list_max_age_msec, so past that age.
vm_status_after_change() {
        max=$(svffctl status --json | jq '.snapshot_max_age_usec') || vm_fail "svffctl status --json failed"
        sleep "$(awk -v u="$max" 'BEGIN { printf "%.3f", u / 1e6 + 0.1 }')"
        svffctl status --json >"$1" || [ $? = 5 ] || vm_fail "svffctl status --json failed"
}

# vm_libvirtd_start: a real libvirtd with the QEMU capabilities cached by
# earlier runs (ready in 3-4 s instead of 9-12 s).
# vm_libvirtd_start [SETTING...]: libvirtd with the host's libvirtd.conf
# plus each SETTING line (e.g. "max_client_requests = 16").
vm_libvirtd_start() {
        mkdir -p /run/libvirt /var/log/libvirt/qemu /var/lib/libvirt/qemu \
                 /var/cache/libvirt/qemu/capabilities
        cat /etc/libvirt/libvirtd.conf >/run/libvirtd.conf 2>/dev/null || : >/run/libvirtd.conf
        for s in "$@"; do echo "$s" >>/run/libvirtd.conf; done
        if [ -d "$SVFF_VM_RUNDIR/libvirt-caps" ]; then
                cp -a "$SVFF_VM_RUNDIR/libvirt-caps/." /var/cache/libvirt/qemu/capabilities/
        fi
        vm_libvirt_used=1
        virtlogd -d
        libvirtd -d -f /run/libvirtd.conf
        vm_wait 60 virsh -q -c qemu:///system version >/dev/null 2>&1 ||
                vm_fail "libvirtd did not answer within 60 s"
        vm_log "libvirtd ready"
}

vm_save_caps() {
        [ "${vm_libvirt_used:-0}" = 1 ] || return 0
        d=/var/cache/libvirt/qemu/capabilities
        [ -n "$(ls -A "$d" 2>/dev/null)" ] || return 0
        mkdir -p "$SVFF_VM_RUNDIR/libvirt-caps-out"
        cp -a "$d/." "$SVFF_VM_RUNDIR/libvirt-caps-out/"
}

# vm_domain_define NAME [acpi]: an OS-less nested q35 domain (TCG, 64 MiB)
# with two PCIe root ports. Without an OS only native PCIe hotplug
# completes an unplug, so ACPI PCI hotplug is turned off for the root
# ports; 'acpi' leaves it on: that domain never releases a device.
vm_domain_define() {
        hp="<qemu:commandline><qemu:arg value='-global'/>"
        hp="$hp<qemu:arg value='ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off'/></qemu:commandline>"
        [ "${2:-}" != acpi ] || hp=""
        cat >"/run/$1.xml" <<XML
<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$1</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='q35'>hvm</type><bios rebootTimeout='-1'/></os>
  <devices>
    <controller type='pci' index='0' model='pcie-root'/>
    <controller type='pci' index='1' model='pcie-root-port'/>
    <controller type='pci' index='2' model='pcie-root-port'/>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
  $hp
</domain>
XML
        virsh -q define "/run/$1.xml" >/dev/null || vm_fail "virsh define $1 failed"
}

# vm_domains_start NAME...: starts the first alone, then the others all
# at once, and waits for each. The first start turns on what the kernel
# enables for the first domain (cgroup BPF device filters), patching its
# own text: under TCG that went wrong with other starts running beside
# it (both vCPUs in soft lockups in libvirtd's threads).
vm_domains_start() {
        virsh -q start "$1" >"$SVFF_VM_RUNDIR/start-$1.log" 2>&1 ||
                vm_fail "virsh start $1 failed: $(cat "$SVFF_VM_RUNDIR/start-$1.log")"
        first=$1
        shift
        pids=""
        for d in "$@"; do
                virsh -q start "$d" >"$SVFF_VM_RUNDIR/start-$d.log" 2>&1 &
                pids="$pids $!"
        done
        for p in $pids; do
                wait "$p" || vm_fail "virsh start failed: $(cat "$SVFF_VM_RUNDIR"/start-*.log)"
        done
        vm_log "domains running: $first $*"
}

# vm_qpci DOM VF: where the guest's PCI tree (QMP query-pci) shows VF's
# vendor:device, as "BUS SLOT FUNCTION" (decimal; one VF per domain);
# nothing when it is absent.
vm_qpci() {
        qven=$(($(cat "/sys/bus/pci/devices/$2/vendor")))
        qdev=$(($(cat "/sys/bus/pci/devices/$2/device")))
        virsh -q qemu-monitor-command "$1" '{"execute":"query-pci"}' |
                jq -r --argjson v "$qven" --argjson d "$qdev" \
                        '.return[] | .. | objects | select(.id?.vendor? == $v and .id.device == $d) |
                         "\(.bus) \(.slot) \(.function)"'
}

# vm_qpci_wait DOM VF: vm_qpci, polled for up to 10 s until VF shows (a
# device just hot-added may take a moment to appear in query-pci).
vm_qpci_wait() {
        for _ in $(seq 50); do
                a=$(vm_qpci "$1" "$2")
                [ -z "$a" ] || break
                sleep 0.2
        done
        echo "$a"
}

# vm_xml_addr DOM: the guest address of the domain's hostdev in its live
# XML, as "BUS SLOT FUNCTION" (decimal); nothing when it has none.
vm_xml_addr() {
        virsh -q dumpxml "$1" --xpath '//hostdev/address' 2>/dev/null |
                sed -n "s/.* bus=.\(0x[0-9a-f]*\). slot=.\(0x[0-9a-f]*\). function=.\(0x[0-9a-f]*\).*/\1 \2 \3/p" |
                { read -r b s f && echo "$((b)) $((s)) $((f))"; }
}

# vm_svff_addr VF: the guest address svffd recorded for VF ("BUS SLOT
# FUNCTION", decimal), then its state and domain.
vm_svff_addr() {
        svffctl list --json | jq -r --arg vf "$1" '.pfs[].vfs[] | select(.address == $vf) |
                .assigned_to | "\(.guest_address) \(.state) \(.domain)"' |
                { read -r a st dom && [ "$a" != null ] &&
                  echo "$((0x$(echo "$a" | cut -d: -f2))) $((0x$(echo "$a" | cut -d: -f3 | cut -d. -f1))) $(echo "$a" | cut -d. -f2) $st $dom"; }
}

# vm_have_reconf: whether this build's svffctl has 'reconf'.
vm_have_reconf() {
        "$(vm_svff_bin svffctl)" reconf --help >/dev/null 2>&1
}

# vm_assigned_setup N [CONFIG]: libvirtd, N OS-less domains d1..dN (plus
# 'hold', with ACPI hotplug, when vm_hold=1), svffd with CONFIG,
# 'svffctl init PF N' and VF i-1 attached to domain di. Sets pf, P (its
# sysfs directory), vfs (the VFs) and doms.
vm_assigned_setup() {
        command -v jq >/dev/null || vm_fail "no jq (scripts/setup-deps installs it)"
        modprobe nvme
        modprobe vfio-pci
        pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
        P=/sys/bus/pci/devices/$pf
        vm_wait 10 test -e "$P/driver" || vm_fail "PF $pf did not bind nvme"
        vm_libvirtd_start
        doms=""
        i=1
        while [ "$i" -le "$1" ]; do
                vm_domain_define "d$i"
                doms="$doms d$i"
                i=$((i + 1))
        done
        [ "${vm_hold:-0}" != 1 ] || vm_domain_define hold acpi
        vm_cleanup 'for d in $doms hold; do virsh -q destroy "$d" >/dev/null 2>&1; done'
        vm_domains_start $doms $([ "${vm_hold:-0}" != 1 ] || echo hold)
        vm_svffd_start "${2:-}"
        svffctl init "$pf" "$1" >/dev/null || vm_fail "svffctl init $pf $1 failed"
        vfs=""
        i=0
        for d in $doms; do
                v=$(basename "$(readlink "$P/virtfn$i")")
                svffctl attach "$v" "$d" >/dev/null || vm_fail "svffctl attach $v $d failed"
                vfs="$vfs $v"
                i=$((i + 1))
        done
        vm_log "$1 VFs assigned:$vfs"
}

# vm_state VF: svffd's record of VF's assignment ("STATE DOMAIN").
vm_state() {
        svffctl list --json | jq -r --arg vf "$1" \
                '.pfs[].vfs[] | select(.address == $vf) | "\(.assigned_to.state) \(.assigned_to.domain)"'
}

# vm_check_kept WHEN: every assignment of vm_assigned_setup attached, on
# vfio-pci, at the guest address it had ($before, from vm_places).
vm_check_kept() {
        when=$1
        assert_eq "$when: every VF at the same guest address (query-pci)" "$before" "$(vm_places)"
        set -- $doms
        for v in $vfs; do
                assert_eq "$when: VF $v on vfio-pci" vfio-pci \
                        "$(basename "$(readlink "/sys/bus/pci/devices/$v/driver")")"
                assert_eq "$when: VF $v assignment" "attached $1" "$(vm_state "$v")"
                shift
        done
}

# vm_svffd_start_faulted FAULT [CONFIG]: svffd restarted with the fault
# point FAULT armed (SVFF_FAULT: it SIGKILLs itself there).
vm_svffd_start_faulted() {
        vm_svffd_stop
        SVFF_FAULT=$1
        export SVFF_FAULT
        vm_svffd_start "${2:-}"
        unset SVFF_FAULT
}

# vm_svffd_killed FAULT: svffd ended, killed at FAULT (128 + SIGKILL).
vm_svffd_killed() {
        rc=0
        wait "$svffd_pid" || rc=$?
        svffd_pid=
        assert_eq "svffd killed at $1 (SIGKILL)" 137 "$rc"
}

# vm_have_fault_points: svffd is built with them (configure
# --enable-fault-points; scripts/check does).
vm_have_fault_points() { "$(vm_svff_bin svffd)" --version | grep -q '^+FAULT-POINTS$'; }

# vm_nic_setup: the igb PF on its driver, up: pf, P and ifname set.
vm_nic_setup() {
        modprobe igb
        modprobe vfio-pci
        pf=$(vm_nic_pf) || vm_fail "no igb PF (8086:10c9): is this QEMU 10 with -device igb?"
        P=/sys/bus/pci/devices/$pf
        vm_wait 20 test -d "$P/net" || vm_fail "PF $pf did not come up on igb (dmesg: $(dmesg | tail -n 5))"
        ifname=$(ls "$P/net" | head -n1)
        ip link set "$ifname" up || true
}

# vm_places: each assignment as "VF DOMAIN query-pci-address", one line
# each, in the order of $vfs and $doms (for before/after comparisons).
vm_places() {
        set -- $doms
        for v in $vfs; do
                echo "$v $1 $(vm_qpci_wait "$1" "$v")"
                shift
        done
}

# vm_secondary VF FIELD: FIELD of VF index VF's entry in the secondary
# controller list of the NVMe PF's controller $dev (/dev/nvmeN), as 'nvme
# list-secondary' shows it (secondary-controller-state: 1 online, 0
# offline).
vm_secondary() {
        nvme list-secondary "$dev" -o json >"$SVFF_VM_RUNDIR/secondary.json" 2>"$SVFF_VM_RUNDIR/secondary.err" ||
                vm_fail "nvme list-secondary $dev failed: $(cat "$SVFF_VM_RUNDIR/secondary.err")"
        jq -r --argjson vfn "$(($1 + 1))" --arg f "$2" \
                '.["secondary-controllers"][] | select(.["virtual-function-number"] == $vfn) | .[$f]' \
                "$SVFF_VM_RUNDIR/secondary.json"
}

# vm_ctrls_of NSID: the controller IDs namespace NSID is attached to
# ('nvme list-ctrl' on $dev), decimal, space-separated.
vm_ctrls_of() {
        nvme list-ctrl "$dev" -n "$1" 2>/dev/null | sed -n 's/^\[ *[0-9]*\]: *\(0x[0-9a-fA-F]*\).*/\1/p' |
                while read -r x; do printf '%d\n' "$x"; done | tr '\n' ' ' | sed 's/ $//'
}

# vm_vfline I: VF I's line of 'ip link show $ifname' ("link/ether ...,
# vlan 100, qos 3, spoof checking off, link_state auto, trust on").
vm_vfline() {
        ip link show "$ifname" >"$SVFF_VM_RUNDIR/iplink.txt"
        sed -n "s/^ *vf $1 *\(.*\)/\1/p" "$SVFF_VM_RUNDIR/iplink.txt" | tr -s ' '
}
