# A private libvirtd for one test: its own /run, /etc/libvirt,
# /var/lib/libvirt, /var/cache/libvirt and /var/log/libvirt, bind-mounted
# from the test's directory inside the test's private mount namespace, so
# tests running in parallel (make -j) each have a daemon of their own and
# none touches the host's libvirt. Clients, svffd among them, reach it as
# qemu:///system over its socket; svffd then never forks, which is what
# lets it run under ASan and TSan (libvirt's embedded driver forks inside
# the calling process).
#
# Sourced by libvirt-embed-lib.sh after daemon-lib.sh ($T, skip, fail,
# wait_for), inside a private mount (and network) namespace:
#
#   libvirtd_setup         the private directories and configuration
#   libvirtd_start         start it, wait until it answers; sets LIBVIRTD_URI
#   libvirtd_kill_domains  stop every QEMU it started
#   libvirtd_stop          stop it (and its domains)
# shellcheck shell=sh

LIBVIRTD=$(command -v libvirtd || echo /usr/sbin/libvirtd)
LIBVIRTD_PID=""
LIBVIRTD_URI="qemu:///system?socket=/run/libvirt/libvirt-sock"

libvirtd_setup() {
        [ -x "$LIBVIRTD" ] || skip "libvirtd (libvirt-daemon) is not installed"
        # /run is private already (a tmpfs of the test's namespace).
        for d in /etc/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt; do
                mkdir -p "$T/ns$d" "$d" 2>/dev/null
                mount --bind "$T/ns$d" "$d" || skip "cannot bind-mount a private $d"
        done
        ip link set lo up 2>/dev/null || true
        # root only, over the UNIX socket, no polkit (no D-Bus here).
        cat > /etc/libvirt/libvirtd.conf <<'EOF'
auth_unix_rw = "none"
auth_unix_ro = "none"
unix_sock_rw_perms = "0700"
unix_sock_ro_perms = "0700"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
EOF
        # No virtlogd (QEMU's output goes to a file); QEMU as root so it
        # reads the test's 0700 directory; no cgroups, so two daemons
        # starting domains of the same name and id do not meet in the
        # host's cgroup tree; no security driver or per-domain namespaces
        # a container may refuse.
        cat > /etc/libvirt/qemu.conf <<'EOF'
stdio_handler = "file"
user = "root"
group = "root"
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
EOF
}

libvirtd_up() { virsh -q -c "$LIBVIRTD_URI" version; }

libvirtd_start() {
        "$LIBVIRTD" -f /etc/libvirt/libvirtd.conf >>"$T/libvirtd.out" 2>&1 &
        LIBVIRTD_PID=$!
        # The first start probes QEMU's capabilities: seconds, more under load.
        wait_for_s 60 libvirtd_up || {
                tail -n 20 /var/log/libvirt/libvirtd.log "$T/libvirtd.out" >&2 2>/dev/null
                fail "the private libvirtd does not answer on $LIBVIRTD_URI"
        }
}

# The QEMU processes outlive libvirtd: kill them by the pid files it
# keeps under the private /run (not by name, which other tests share).
libvirtd_kill_domains() {
        for f in /run/libvirt/qemu/*.pid; do
                [ -f "$f" ] || continue
                p=$(cat "$f" 2>/dev/null) && [ -n "$p" ] && kill "$p" 2>/dev/null
        done
        return 0
}

libvirtd_stop() {
        libvirtd_kill_domains
        if [ -n "$LIBVIRTD_PID" ]; then
                kill -CONT "$LIBVIRTD_PID" 2>/dev/null
                kill "$LIBVIRTD_PID" 2>/dev/null
                wait "$LIBVIRTD_PID" 2>/dev/null
                LIBVIRTD_PID=""
        fi
        return 0
}
