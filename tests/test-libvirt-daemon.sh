#!/bin/sh
# svffd against a private libvirtd (qemu:///system?socket=...): libvirtd
# killed in the middle of an attach (a clear error, the store unchanged,
# then svffd reconnects by itself once libvirtd is back), and a domain
# undefined while svffd is attaching to it.
#
# libvirtd runs in a private mount and network namespace with its state
# directories bind-mounted from the test's directory.
if [ -z "${SVFF_IN_NS:-}" ]; then
        unshare -m -n --propagation private true 2>/dev/null || { echo "SKIP: cannot create namespaces"; exit 77; }
        SVFF_IN_NS=1 exec unshare -m -n --propagation private sh "$0" "$@"
fi
. "$(dirname "$0")/daemon-lib.sh"

LIBVIRTD=$(command -v libvirtd || echo /usr/sbin/libvirtd)
VIRTLOGD=$(command -v virtlogd || echo /usr/sbin/virtlogd)
[ -x "$LIBVIRTD" ] && [ -x "$VIRTLOGD" ] || skip "libvirtd/virtlogd are not installed"
command -v virsh >/dev/null || skip "virsh (libvirt-clients) is not installed"
QEMU=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 is not installed"

for d in /run /var/lib/libvirt /var/cache/libvirt /var/log/libvirt /etc/libvirt; do
        mkdir -p "$T/ns$d"
done
cp -a /etc/libvirt/. "$T/ns/etc/libvirt/" 2>/dev/null
for d in /run /var/lib/libvirt /var/cache/libvirt /var/log/libvirt /etc/libvirt; do
        mkdir -p "$d" 2>/dev/null
        mount --bind "$T/ns$d" "$d" || skip "cannot bind-mount $d"
done
ip link set lo up 2>/dev/null
URI="qemu:///system?socket=/run/libvirt/libvirt-sock"
virsh_() { virsh -q -c "$URI" "$@"; }

LIBVIRTD_PID=""
start_libvirtd() {
        "$VIRTLOGD" -d 2>/dev/null || true  # already running after a restart
        "$LIBVIRTD" -d || fail "libvirtd did not start"
        wait_for virsh_ version || fail "libvirtd does not answer"
        LIBVIRTD_PID=$(cat /run/libvirtd.pid)
}
stop_all() {
        for p in $(pgrep -f "$T/ns" 2>/dev/null); do kill "$p" 2>/dev/null; done
        [ -n "$LIBVIRTD_PID" ] && kill -CONT "$LIBVIRTD_PID" 2>/dev/null && kill "$LIBVIRTD_PID" 2>/dev/null
        [ -f /run/virtlogd.pid ] && kill "$(cat /run/virtlogd.pid)" 2>/dev/null
}
trap 'stop_all; cleanup' EXIT
start_libvirtd

for vm in vm1 vm2; do
        cat > "$T/$vm.xml" <<EOF
<domain type='qemu'><name>$vm</name><memory unit='MiB'>64</memory>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices><emulator>$QEMU</emulator></devices></domain>
EOF
        virsh_ define "$T/$vm.xml" >/dev/null || fail "define $vm"
done

PF=0000:01:00.0
start_pcisim qdma
printf '{"libvirt_uri": "%s"}\n' "$URI" > "$T/svff.conf"
start_svffd
connected_n() { [ "$(grep -c "Connected to libvirt" "$T/svffd.log")" -ge "$1" ]; }
wait_for connected_n 1 || fail "svffd did not connect"
ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF2=$(sys_vf $PF 2)
gen() { ctl status --json | jget 'd["store"]["generation"]'; }

# monitor's line for the attach names the domain and the guest address.
"$SVFFCTL" --socket "$SOCK" monitor --utc > "$T/mon.out" 2>&1 &
BG_PIDS=$!
wait_for grep -q subscribed "$T/mon.out" || fail "monitor did not subscribe"
ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach through libvirtd"
attached_line() { grep -qE "^[0-9-]{10}T[0-9:]{8}\.[0-9]{3}Z vf-attached $VF0 domain=vm1 guest=05:00\.0" "$T/mon.out"; }
wait_for attached_line || fail "monitor's vf-attached line: $(cat "$T/mon.out")"
kill $BG_PIDS; BG_PIDS=""

# libvirtd dies with svffd's call in flight: frozen first, so the call
# is certainly waiting for it when it is killed.
g=$(gen)
kill -STOP "$LIBVIRTD_PID"
rc=0; ctl attach "$VF1" vm1 2> "$T/err" & APID=$!
sleep 0.5
kill -KILL "$LIBVIRTD_PID"
wait $APID || rc=$?
expect_eq "$rc" 1 "attach with libvirtd killed"
note "connection drop: $(cat "$T/err")"
grep -qi "libvirt" "$T/err" || fail "error does not say libvirt: $(cat "$T/err")"
expect_eq "$(gen)" "$g" "store after the dropped call"
wait_for grep -q "Lost the libvirt connection" "$T/svffd.log" || fail "svffd did not notice the loss"
rc=0; ctl attach "$VF1" vm1 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "attach while libvirtd is down"
grep -q "not reachable" "$T/err" || fail "unreachable message: $(cat "$T/err")"
rm -f /run/libvirtd.pid
start_libvirtd
wait_for connected_n 2 || fail "svffd did not reconnect"
ctl attach "$VF1" vm1 >/dev/null || fail "attach after the reconnect"

# The domain vanishes mid-attach: VF2 is rebound (svff's recorded driver
# is vfio-pci) slowly, and vm2 is undefined meanwhile. The attach looks
# the domain up, then sets VF2's driver_override (cleared here) before
# its 2 s probe: once it reads vfio-pci, the undefine comes in between.
printf '%s' "$VF2" > "$SYS/bus/pci/drivers/vfio-pci/unbind"
printf '\n' > "$SYS/bus/pci/devices/$VF2/driver_override"
pcisim_ctl latency probe 2000000
g=$(gen)
rc=0; ctl attach "$VF2" vm2 2> "$T/err" & APID=$!
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$VF2/driver_override')\" = vfio-pci ]" ||
        fail "the attach of VF2 did not reach its bind"
virsh_ undefine vm2 >/dev/null || fail "undefine vm2"
wait $APID || rc=$?
expect_eq "$rc" 1 "attach to a vanished domain"
grep -qi "domain" "$T/err" || fail "vanished domain: $(cat "$T/err")"
note "vanished domain: $(cat "$T/err")"
# Two commits: the attach's intent, journaled before libvirt was asked,
# and its removal once libvirt refused; no record is left.
expect_eq "$(gen)" "$((g + 2))" "store after the vanished domain"
expect_eq "$(ctl list --json | jq -r --arg vf "$VF2" '.pfs[].vfs[] | select(.address == $vf) | .assigned_to')" null \
        "VF2's assignment after the vanished domain"
expect_eq "$(ctl list --json | jget "d['pfs'][0]['vfs'][2]['assigned_to']")" None "VF2 unassigned"
pcisim_ctl latency probe 0

# Lifecycle through libvirtd: undefining vm1 releases its config VFs.
virsh_ undefine vm1 >/dev/null || fail "undefine vm1"
wait_for grep -q "vf-unassigned\|back in the pool" "$T/svffd.log" || fail "undefine not seen"
expect_eq "$(ctl list --json | jget "d['pfs'][0]['vfs'][0]['assigned_to']")" None "VF0 after undefine"
stop_svffd
echo PASS
