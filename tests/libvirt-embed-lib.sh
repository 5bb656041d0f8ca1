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
command -v jq >/dev/null || skip "jq is needed to read the store in the invariant check"
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
# is running (seen in dumpxml and domstate, twice in a row on a loaded
# machine, six times in one run of test-libvirt-embed); a run that died
# of a signal is run again, up to ten times in all, and says so. Its
# output goes out only from the run that counts. Its own errors are not
# retried.
virsh_() {
        for _try in 1 2 3 4 5 6 7 8 9 10; do
                _rc=0
                virsh -q -c "$URI" "$@" >"$T/virsh.out" || _rc=$?
                [ "$_rc" -gt 128 ] && [ "$_try" -lt 10 ] || break
                echo "note: virsh $1 died of signal $((_rc - 128)) (a libvirt crash); running it again" >&2
                sleep 0.2
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

# start_pcisim_qdma_nic: pcisim with the QDMA PF (0000:01:00.0) and a NIC
# (0000:03:00.0) whose VFs have IOMMU groups of their own (not their
# PF's, as in the mixed host): a bare PCI function.
start_pcisim_qdma_nic() {
        python3 - "$PCISIM_SCENARIOS" >"$T/scenario.json" <<'PY'
import json, sys
q = json.load(open(sys.argv[1] + "/qdma.json"))
n = json.load(open(sys.argv[1] + "/nic.json"))
have = {d["address"] for d in q["devices"]}
q["devices"] += [d for d in n["devices"] if d["address"] not in have]
q["drivers"] = q.get("drivers", []) + n.get("drivers", [])
json.dump(q, sys.stdout)
PY
        start_pcisim "$T/scenario.json"
}

# svff_conf [extra JSON members]
svff_conf() {
        printf '{"libvirt_uri": "%s", "detach_timeout_sec": 5, "reconf_detach_timeout_sec": 5%s}\n' "$URI" "${1:-}" > "$T/svff.conf"
}

connected_n() { [ "$(grep -c "Connected to libvirt" "$T/svffd.log")" -ge "$1" ]; }
N_STARTS=0
# start_connected [svffd options]: svffd up and connected to libvirt.
start_connected() {
        start_svffd "$@"
        N_STARTS=$((N_STARTS + 1))
        wait_for connected_n "$N_STARTS" || fail "svffd did not connect to '$URI'"
}

# check_vfs [STEP]: the invariant after every step, from the store (jq)
# and from every domain's live and persistent XML: no VF is in two
# domains, or recorded for one and present in another; a VF in a domain
# has a record for it (settled, or an intent that recovery resolves); a
# settled record is true of the XML: attached config/live ones are in
# the persistent/live definition, paused-by-detach ones in neither. The
# XML comes from virsh, but from the files libvirt keeps under the root
# (written on each change before the change returns) while an embedding
# svffd runs and holds that root.
check_vfs() {
        _step=${1:-}
        _x="$T/check-xml"
        rm -rf "$_x"; mkdir -p "$_x/config" "$_x/live"
        # A private libvirtd answers virsh whether or not svffd runs.
        if [ -z "$SVFFD_PID" ] || [ "$SVFF_LIBVIRT" = daemon ]; then
                for _d in $(virsh_ list --all --name); do
                        virsh_ dumpxml --inactive "$_d" > "$_x/config/$_d.xml" || fail "$_step: virsh dumpxml --inactive $_d"
                        if [ "$(virsh_ domstate "$_d")" = running ]; then
                                virsh_ dumpxml "$_d" > "$_x/live/$_d.xml" || fail "$_step: virsh dumpxml $_d"
                        fi
                done
        else
                for _f in "$ROOT"/etc/qemu/*.xml; do [ -e "$_f" ] && cp "$_f" "$_x/config/"; done
                for _f in "$ROOT"/run/qemu/*.xml; do [ -e "$_f" ] && cp "$_f" "$_x/live/"; done
        fi
        if [ -f "$STATE/store.json" ]; then
                jq -r '.assignments // {} | to_entries[] | [.key, .value.uuid, .value.state, (.value.live|tostring),
                       (.value.config|tostring), (.value.pause_mode // "-"), (.value.intent // "-")] | @tsv' \
                        "$STATE/store.json" > "$_x/store.tsv" || fail "$_step: store.json unreadable"
        else
                : > "$_x/store.tsv"
        fi
        python3 - "$_x" "$_step" <<'PY' || fail "invariant broken after: $_step"
import os, sys, xml.etree.ElementTree as ET
x, step = sys.argv[1], sys.argv[2]
present = {}  # vf -> {(uuid, name, where)}
for where in ("config", "live"):
    for f in sorted(os.listdir(os.path.join(x, where))):
        root = ET.parse(os.path.join(x, where, f)).getroot()
        dom = root if root.tag == "domain" else root.find("domain")  # live status XML wraps it
        uuid, name = dom.findtext("uuid"), dom.findtext("name")
        for hd in dom.findall("./devices/hostdev"):
            a = hd.find("source/address")
            if a is None:
                continue
            vf = "%04x:%02x:%02x.%x" % tuple(int(a.get(k), 16) for k in ("domain", "bus", "slot", "function"))
            present.setdefault(vf, set()).add((uuid, name, where))
records = {}
for line in open(os.path.join(x, "store.tsv")):
    vf, uuid, state, live, config, mode, intent = line.rstrip("\n").split("\t")
    records[vf] = dict(uuid=uuid, state=state, live=live == "true", config=config == "true", mode=mode, intent=intent)
bad = []
for vf, where in present.items():
    uuids = {u for u, _, _ in where}
    if len(uuids) > 1:
        bad.append("VF %s is in %d domains: %s" % (vf, len(uuids), sorted(where)))
    rec = records.get(vf)
    if rec is None:
        bad.append("VF %s is in %s with no record in the store" % (vf, sorted(where)))
    elif rec["uuid"] not in uuids:
        bad.append("VF %s is recorded for %s but is in %s" % (vf, rec["uuid"], sorted(where)))
for vf, rec in records.items():
    if rec["intent"] != "-":
        continue
    here = {w for u, _, w in present.get(vf, ()) if u == rec["uuid"]}
    if rec["state"] == "attached":
        if rec["config"] and "config" not in here:
            bad.append("VF %s is recorded attached (config) but not in the persistent definition" % vf)
        if rec["live"] and "live" not in here:
            bad.append("VF %s is recorded attached (live) but not in the running domain" % vf)
        if not rec["config"] and not rec["live"]:
            bad.append("VF %s is recorded attached nowhere" % vf)
    elif rec["state"] == "held" and rec["mode"] == "detach" and here:
        bad.append("VF %s is recorded held (detached) but is in %s" % (vf, sorted(here)))
if bad:
    print("after %s:\n  %s" % (step, "\n  ".join(bad)), file=sys.stderr)
    sys.exit(1)
PY
}
