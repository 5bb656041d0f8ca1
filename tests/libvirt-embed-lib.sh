# Shared by the tests that run svffd on pcisim against libvirt's QEMU
# driver: the libvirt side, virsh_ on it, define, and svffd configured for
# and connected to it. Source it first thing:
#
#   . "$(dirname "$0")/libvirt-embed-lib.sh"
#
# Two ways to give svffd a libvirt, chosen by SVFF_LIBVIRT (set it before
# sourcing, or in the environment):
#   embed   libvirt's QEMU driver inside svffd (qemu:///embed, a private
#           root). Only one process may open a root: svffd opens it while
#           it runs, virsh before and after.
#   daemon  a private libvirtd of the test's own (libvirtd-lib.sh), which
#           svffd reaches over its socket (qemu:///system?socket=...).
#   auto    (the default) daemon when svffd is built with a sanitizer,
#           embed otherwise.
# The embedded driver forks inside svffd, and GCC 12's ASan allocator does
# not survive a fork taken while another thread holds its lock (the child
# deadlocks on its first malloc); TSan does not support a fork of a
# threaded process either. With the daemon svffd never forks, so the
# sanitizer builds run these tests in full.
#
# libvirt writes under /run/libvirt whichever way: the test runs in a
# private mount namespace with its own /run (and, for the daemon, its own
# network namespace); the first time, sourcing this re-executes the test
# there.
# shellcheck shell=sh

if [ "${SVFF_LIBVIRT:-auto}" = auto ]; then
        if ldd "${top_builddir:-$(dirname "$0")/..}/daemon/svffd" 2>/dev/null | grep -q 'lib[at]san'; then
                SVFF_LIBVIRT=daemon
        else
                SVFF_LIBVIRT=embed
        fi
fi
case $SVFF_LIBVIRT in
embed|daemon) export SVFF_LIBVIRT ;;
*) echo "FAIL: SVFF_LIBVIRT='$SVFF_LIBVIRT': embed, daemon or auto" >&2; exit 1 ;;
esac

if [ -z "${SVFF_IN_MOUNT_NS:-}" ]; then
        ns="-m"
        [ "$SVFF_LIBVIRT" = daemon ] && ns="-m -n"
        # shellcheck disable=SC2086
        unshare $ns --propagation private true 2>/dev/null || { echo "SKIP: cannot create a private namespace (unshare $ns)"; exit 77; }
        # shellcheck disable=SC2086
        SVFF_IN_MOUNT_NS=1 exec unshare $ns --propagation private sh "$0" "$@"
fi
. "${top_srcdir:-$(dirname "$0")/..}/tests/daemon-lib.sh"

[ "$SVFF_LIBVIRT" = embed ] && skip_if_sanitized_fork
command -v virsh >/dev/null || skip "virsh (libvirt-clients) is not installed"
QEMU=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 is not installed"
mount -t tmpfs tmpfs /run || skip "cannot mount a private /run"

if [ "$SVFF_LIBVIRT" = daemon ]; then
        . "${top_srcdir:-$(dirname "$0")/..}/tests/libvirtd-lib.sh"
        libvirtd_setup
        URI=$LIBVIRTD_URI
        libvirtd_start
        note "libvirt: a private libvirtd ($URI)"
else
        ROOT="$T/libvirt"
        URI="qemu:///embed?root=$ROOT"
        mkdir -p "$ROOT/etc"
        # No virtlogd here; QEMU runs as root so it can read the test's 0700 dir.
        printf 'stdio_handler = "file"\nuser = "root"\ngroup = "root"\n' > "$ROOT/etc/qemu.conf"
        note "libvirt: embedded in svffd ($URI)"
fi

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
        if [ "$SVFF_LIBVIRT" = daemon ]; then
                libvirtd_stop
                return 0
        fi
        # QEMU outlives the embedding process: stop what this root started.
        for p in $(pgrep -f "$ROOT/lib/qemu" 2>/dev/null); do kill "$p" 2>/dev/null; done
}
# svffd first (its cleanup), then libvirt's side.
trap 'cleanup_svffd_first' EXIT
cleanup_svffd_first() {
        set +e
        if [ -n "$SVFFD_PID" ]; then
                kill "$SVFFD_PID" 2>/dev/null
                wait "$SVFFD_PID" 2>/dev/null
                SVFFD_PID=""
        fi
        kill_domains
        cleanup
}

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
