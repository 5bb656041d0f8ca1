# Shared by the daemon integration tests (tests/test-daemon-*.sh): a
# pcisim mount as the sysfs root, svffd on a private socket and state
# directory, svffctl pointed at it, and cleanup of everything started.
# shellcheck shell=sh

set -eu

: "${top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
: "${PCISIM:=$top_builddir/tests/pcisim/pcisim}"
: "${PCISIM_SCENARIOS:=$top_srcdir/tests/pcisim/scenarios}"
SVFFD="$top_builddir/daemon/svffd"
SVFFCTL="$top_builddir/cli/svffctl"
# svffctl cuts its tables to $COLUMNS: a test sets it where it means to.
unset COLUMNS

skip() { echo "SKIP: $*"; exit 77; }
# A VF held open (hold_vf) is named in HELD: a failure lets it go
# first, since svffd's exit would wait for a count write the held VF
# keeps in the kernel, for as long as the test's time limit.
HELD=""
fail() {
        [ -n "$HELD" ] && pcisim_ctl release "$HELD" 2>/dev/null
        echo "FAIL: $*" >&2
        [ -f "${T:-/nonexistent}/svffd.log" ] && sed 's/^/  svffd| /' "$T/svffd.log" | tail -n 40 >&2
        exit 1
}
note() { echo "# $*"; }

# GCC 12's AddressSanitizer does not keep its allocator usable across
# fork(): a child forked while another thread holds the allocator's lock
# deadlocks on its first malloc. libvirt's embedded QEMU driver forks
# inside svffd and its child allocates before exec, so with a sanitizer
# build such a test can hang. The libvirt tests give a sanitizer build a
# private libvirtd instead (libvirt-embed-lib.sh); what must embed skips.
skip_if_sanitized_fork() {
        if ldd "$SVFFD" 2>/dev/null | grep -q 'lib[at]san'; then
                skip "svffd is built with a sanitizer, under which libvirt's embedded driver's forks deadlock; run on a plain build, or with SVFF_LIBVIRT=daemon"
        fi
}

# sanitizer_env: "-E VAR=VALUE" for each sanitizer setting in the
# environment, for launchers that start svffd with a clean one
# (systemd-socket-activate): a sanitizer build's svffd needs them (TSan
# its suppressions, all of them where to log). The values hold no spaces.
sanitizer_env() {
        for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
                eval "val=\${$v:-}"
                # shellcheck disable=SC2154
                [ -n "$val" ] && printf ' -E %s=%s' "$v" "$val"
        done
        return 0
}

command -v python3 >/dev/null || skip "python3 is needed to check JSON output"
[ -x "$SVFFD" ] && [ -x "$SVFFCTL" ] || skip "svffd/svffctl not built"
[ -x "$PCISIM" ] || skip "pcisim not built"
[ -e /dev/fuse ] || skip "no /dev/fuse: pcisim cannot mount"

T=$(mktemp -d "${TMPDIR:-/tmp}/svff-test.XXXXXX")
SYS="$T/sys"
SOCK="$T/svffd.sock"
STATE="$T/state"
SVFFD_PID=""
BG_PIDS=""

cleanup() {
        set +e
        vc_rc=0
        varlink_check stop || vc_rc=1
        for p in $BG_PIDS; do kill "$p" 2>/dev/null; done
        if [ -n "$SVFFD_PID" ]; then
                kill "$SVFFD_PID" 2>/dev/null
                wait "$SVFFD_PID" 2>/dev/null
        fi
        if mountpoint -q "$SYS" 2>/dev/null; then
                fusermount3 -u "$SYS" 2>/dev/null || umount -l "$SYS" 2>/dev/null
        fi
        rm -rf "$T"
        [ "$vc_rc" = 0 ] || exit 1
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# start_pcisim SCENARIO [pcisim options]: a shipped scenario's name, or
# the path of a scenario file.
start_pcisim() {
        scen="$1"; shift
        case $scen in
        */*) ;;
        *) scen="$PCISIM_SCENARIOS/$scen.json" ;;
        esac
        mkdir -p "$SYS"
        rc=0
        "$PCISIM" --scenario "$scen" "$@" "$SYS" >"$T/pcisim.log" 2>&1 || rc=$?
        [ "$rc" = 77 ] && skip "pcisim cannot mount FUSE here: $(cat "$T/pcisim.log")"
        [ "$rc" = 0 ] || fail "pcisim failed ($rc): $(cat "$T/pcisim.log")"
}

pcisim_ctl() { printf '%s' "$*" > "$SYS/.pcisim/ctl"; }
# hold_vf VF: VF held open, as by a VFIO user, until release_vf.
hold_vf() {
        HELD=$1
        pcisim_ctl hold "$1"
}
release_vf() {
        pcisim_ctl release "$HELD"
        HELD=""
}
# write_held PF N: another process's write of N to PF's sriov_numvfs,
# kept in the kernel by PF's VF 0 held open (named in HELD) until
# release_vf; the writer's pid in writer and BG_PIDS.
write_held() {
        hold_vf "$(sys_vf "$1" 0)"
        sh -c "echo $2 > '$SYS/bus/pci/devices/$1/sriov_numvfs'" &
        writer=$!
        BG_PIDS="$writer"
}

# write_in_kernel PF: write_held PF 0, returning once the write is in
# the kernel: VF 0, held, has lost its virtfn0 link.
write_in_kernel() {
        write_held "$1" 0
        wait_for sh -c "[ ! -e '$SYS/bus/pci/devices/$1/virtfn0' ]" ||
                fail "the write by hand of PF $1's count did not reach its held VF"
}

ctl() { "$SVFFCTL" --socket "$SOCK" "$@"; }

# store_assign VF [GUEST_ADDRESS]: records VF as attached to domain vm1's
# persistent definition in the store of a stopped svffd, a stand-in for
# an attach where there is no libvirt.
store_assign() {
        python3 - "$STATE/store.json" "$1" "${2:-}" <<'PY'
import json, sys
path, vf, guest = sys.argv[1], sys.argv[2], sys.argv[3] or None
d = json.load(open(path))
d["assignments"][vf] = {"uuid": "c7a5fdbd-cdaf-9455-926a-d65c16db1809", "domain": "vm1",
                        "guest_address": guest, "alias": "ua-svff-x", "live": False,
                        "config": True, "state": "attached", "pause_mode": None}
json.dump(d, open(path, "w"))
PY
}

# wait_for CMD...: retries CMD for up to 10 s.
wait_for() { wait_for_s 10 "$@"; }

# wait_for_s SECONDS CMD...: the same for up to SECONDS, times
# SVFF_TEST_SLOWDOWN (a whole number; a TSan build runs several times
# slower, and its run sets it).
wait_for_s() {
        wait_tries=$(($1 * 20 * ${SVFF_TEST_SLOWDOWN:-1}))
        shift
        i=0
        while ! "$@" >/dev/null 2>&1; do
                i=$((i + 1))
                [ $i -lt "$wait_tries" ] || return 1
                sleep 0.05
        done
}

# A stand-in for every NVMe PF's admin queue (tests/nvme-standin.c, a
# model of QEMU's emulated controller, compiled into test builds of
# svffd): pcisim gives an NVMe PF its sysfs, but no controller can run
# here, and the NVMe class needs one to provision the VFs. The VM tier
# runs the real one. A test can unset it to see svffd without it.
SVFF_TEST_NVME_STANDIN=1
export SVFF_TEST_NVME_STANDIN

# ctl_status [ARGS]: svffctl status, which exits 5 when it finds drift or
# a failed reload: succeeds when svffd answered, whatever it found.
ctl_status() {
        ctl_status_rc=0
        ctl status "$@" || ctl_status_rc=$?
        [ "$ctl_status_rc" = 0 ] || [ "$ctl_status_rc" = 5 ]
}
svffd_answers() { ctl_status --quiet; }
# write_ended PF N: a write of N to PF's sriov_numvfs, held past its
# deadline, has ended for svffd too: sriov_numvfs may read N before the
# write() returns to svffd, which refuses changes of PF until it has.
write_ended() {
        [ "$(cat "$SYS/bus/pci/devices/$1/sriov_numvfs")" = "$2" ] &&
                [ "$(ctl status --json | jget 'd["stuck_writes"]')" = 0 ]
}

# ms_since NS: milliseconds since NS (date +%s%N), for a test's notes.
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# log_count TEXT: how many lines of svffd's log hold TEXT (a fixed
# string); 0 when none (grep -c would fail the test under set -e).
log_count() { awk -v s="$1" 'index($0, s) { n++ } END { print n + 0 }' "$T/svffd.log"; }

# start_svffd [extra options]: svffd in the background, ready to serve.
start_svffd() {
        mkdir -p "$STATE"
        "$SVFFD" --socket "$SOCK" --state-dir "$STATE" --sysfs-root "$SYS" \
                --config "$T/svff.conf" --log-level debug "$@" >>"$T/svffd.log" 2>&1 &
        SVFFD_PID=$!
        wait_for svffd_answers || fail "svffd did not come up"
        varlink_check start
}

# stop_svffd [SIGNAL]: returns svffd's exit status.
stop_svffd() {
        kill "-${1:-TERM}" "$SVFFD_PID"
        rc=0
        wait "$SVFFD_PID" || rc=$?
        SVFFD_PID=""
        varlink_check stop || fail "svffd's replies break its interface"
        return $rc
}

# varlink_check start|stop: where tests/varlink-check was built (it needs
# Go), start sends every svffctl call of the test ($SVFFCTL, so ctl too)
# through a proxy that checks each reply and error svffd sends against the
# interface description svffd serves; stop ends it and returns non-zero,
# the violations on stderr, if there was one. Raw socket calls (python)
# go to svffd directly. A test that needs svffd to see svffctl's own
# credentials sets VARLINK_CHECK=no before sourcing this file.
SVFFCTL_REAL="$SVFFCTL"
VARLINK_CHECK_PID=""
varlink_check() {
        vc="$top_builddir/tests/varlink-check/varlink-check"
        case $1 in
        start)
                [ "${VARLINK_CHECK:-yes}" != no ] && [ -x "$vc" ] || return 0
                varlink_check stop || fail "svffd's replies break its interface"
                rm -f "$T/check.sock"
                "$vc" -upstream "$SOCK" -listen "$T/check.sock" -violations "$T/violations" \
                        2>>"$T/varlink-check.log" &
                VARLINK_CHECK_PID=$!
                wait_for test -S "$T/check.sock" ||
                        fail "varlink-check did not start: $(cat "$T/varlink-check.log")"
                # svffctl as the test runs it, its --socket $SOCK (or
                # SVFF_SOCKET) swapped for the proxy's.
                cat > "$T/svffctl" <<EOF
#!/bin/sh
prev=
for a do
        shift
        o=\$a
        if [ "\$prev" = --socket ] && [ "\$a" = '$SOCK' ]; then a='$T/check.sock'; fi
        [ "\$a" = '--socket=$SOCK' ] && a='--socket=$T/check.sock'
        set -- "\$@" "\$a"
        prev=\$o
done
[ "\${SVFF_SOCKET:-}" = '$SOCK' ] && export SVFF_SOCKET='$T/check.sock'
exec '$SVFFCTL_REAL' "\$@"
EOF
                chmod +x "$T/svffctl"
                SVFFCTL="$T/svffctl"
                note "svffctl's replies checked against the served interface (varlink-check)"
                ;;
        stop)
                SVFFCTL="$SVFFCTL_REAL"
                if [ -n "$VARLINK_CHECK_PID" ]; then
                        kill "$VARLINK_CHECK_PID" 2>/dev/null
                        wait "$VARLINK_CHECK_PID" 2>/dev/null
                        VARLINK_CHECK_PID=""
                fi
                [ -s "$T/violations" ] || return 0
                echo "varlink-check: replies and errors that break the interface:" >&2
                sed 's/^/  /' "$T/violations" >&2
                mv "$T/violations" "$T/violations.reported"
                return 1
                ;;
        esac
}

# jq-like helper: jget 'EXPR' < json, EXPR in Python over "d".
jget() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

expect_eq() {
        [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

# sysfs facts, read straight from the pcisim mount.
sys_numvfs() { cat "$SYS/bus/pci/devices/$1/sriov_numvfs"; }
sys_driver() {
        if [ -L "$SYS/bus/pci/devices/$1/driver" ]; then
                basename "$(readlink "$SYS/bus/pci/devices/$1/driver")"
        else
                echo None
        fi
}
sys_vf() { basename "$(readlink "$SYS/bus/pci/devices/$1/virtfn$2")"; }
sys_group() { basename "$(readlink "$SYS/bus/pci/devices/$1/iommu_group")"; }
printf '{}\n' > "$T/svff.conf"

# varlink_call METHOD [PARAMS-JSON]: one call on $SOCK, the reply on stdout.
# VARLINK_CALLER, when set, is a command prefix the call runs under (e.g.
# setpriv to another uid, with a python3 that uid can run).
varlink_call() {
        ${VARLINK_CALLER:-} python3 - "$SOCK" "$1" "${2:-{\}}" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(json.dumps({"method": sys.argv[2], "parameters": json.loads(sys.argv[3])}).encode() + b"\0")
buf = b""
while not buf.endswith(b"\0"):
    d = s.recv(65536)
    if not d:
        break
    buf += d
print(buf.rstrip(b"\0").decode())
PY
}

# log_fields_check: with SVFF_LOG_FIELDS set for svffd (log.h), every
# message at info level or above in $T/svffd.log that names a PCI device
# carries SVFF_PF= or SVFF_VF=, so 'journalctl -u svffd SVFF_PF=...'
# would show it in the device's history.
log_fields_check() {
        python3 - "$T/svffd.log" <<'PY' || fail "messages about a device without its journal fields (above)"
import re, sys
addr = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
line = re.compile(r"svffd: (.*) \{PRIORITY=(\d) SVFF_PF=(\S*) SVFF_VF=(\S*) SVFF_DOMAIN=(\S*) SVFF_OPERATION=(\S*)\}$")
n = bad = 0
for l in open(sys.argv[1], errors="replace"):
    m = line.match(l.rstrip("\n"))
    if not m:
        continue
    n += 1
    msg, prio, pf, vf = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if prio <= 6 and addr.search(msg) and not pf and not vf:
        bad += 1
        print("  no SVFF_PF/SVFF_VF: " + msg, file=sys.stderr)
if n == 0:
    print("  no message with its fields: was SVFF_LOG_FIELDS set for svffd?", file=sys.stderr)
    sys.exit(1)
print("# %d messages read: each about a device carries its fields" % n if not bad else "")
sys.exit(1 if bad else 0)
PY
}
