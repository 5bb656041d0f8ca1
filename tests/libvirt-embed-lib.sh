# Shared by the tests that run svffd on pcisim with libvirt's QEMU driver
# embedded (qemu:///embed, a private root): the root with its qemu.conf,
# virsh_ on it, define, and svffd configured for and connected to it.
# Source it first thing:
#
#   . "$(dirname "$0")/libvirt-embed-lib.sh"
#
# Only one process may open an embed root, and libvirt writes under
# /run/libvirt outside it: the test runs in a private mount namespace with
# its own /run (the first time, sourcing this re-executes the test there);
# svffd opens the root while it runs, virsh before and after.
# shellcheck shell=sh

if [ -z "${SVFF_IN_MOUNT_NS:-}" ]; then
        unshare -m --propagation private true 2>/dev/null || { echo "SKIP: cannot create a mount namespace"; exit 77; }
        SVFF_IN_MOUNT_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi
. "${top_srcdir:-$(dirname "$0")/..}/tests/daemon-lib.sh"

skip_if_sanitized_fork
command -v virsh >/dev/null || skip "virsh (libvirt-clients) is not installed"
QEMU=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 is not installed"
mount -t tmpfs tmpfs /run || skip "cannot mount a private /run"

ROOT="$T/libvirt"
URI="qemu:///embed?root=$ROOT"
mkdir -p "$ROOT/etc"
# No virtlogd here; QEMU runs as root so it can read the test's 0700 dir.
printf 'stdio_handler = "file"\nuser = "root"\ngroup = "root"\n' > "$ROOT/etc/qemu.conf"

# virsh_ ARGS...: virsh on the embedded root. libvirt 9.0's virsh with the
# embedded QEMU driver sometimes dies of SIGSEGV when a domain of the root
# is running (seen after 'dumpxml' under load); a run that died of a
# signal is run once more, and says so. Its output goes out only from the
# run that counts. Its own errors are not retried.
virsh_() {
        for _try in 1 2; do
                _rc=0
                virsh -q -c "$URI" "$@" >"$T/virsh.out" || _rc=$?
                [ "$_rc" -gt 128 ] && [ "$_try" = 1 ] || break
                echo "note: virsh $1 died of signal $((_rc - 128)) (a libvirt crash); running it once more" >&2
        done
        cat "$T/virsh.out"
        return "$_rc"
}

kill_domains() {
        # QEMU outlives the embedding process: stop what this root started.
        for p in $(pgrep -f "$ROOT/lib/qemu" 2>/dev/null); do kill "$p" 2>/dev/null; done
}
trap 'kill_domains; cleanup' EXIT

# define NAME...: persistent domains, defined and not started.
define() {
        for d in "$@"; do
                cat > "$T/$d.xml" <<XML
<domain type='qemu'>
  <name>$d</name>
  <memory unit='MiB'>64</memory>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices><emulator>$QEMU</emulator></devices>
</domain>
XML
                virsh_ define "$T/$d.xml" >/dev/null || fail "virsh define $d"
        done
}

# svff_conf [extra JSON members]
svff_conf() {
        printf '{"libvirt-uri": "%s", "detach-timeout-sec": 5%s}\n' "$URI" "${1:-}" > "$T/svff.conf"
}

connected_n() { [ "$(grep -c "Connected to libvirt" "$T/svffd.log")" -ge "$1" ]; }
N_STARTS=0
# start_connected [svffd options]: svffd up and connected to libvirt.
start_connected() {
        start_svffd "$@"
        N_STARTS=$((N_STARTS + 1))
        wait_for connected_n "$N_STARTS" || fail "svffd did not connect to '$URI'"
}
