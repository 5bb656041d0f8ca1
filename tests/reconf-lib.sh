# Shared by the reconf integration tests: svffd on pcisim with libvirt's
# QEMU driver embedded (qemu:///embed, a private root) in a private mount
# namespace, defined domains, and helpers that check the invariants a
# reconf must keep. Source it after re-executing in a mount namespace:
#
#   if [ -z "${SVFF_IN_MOUNT_NS:-}" ]; then ... exec unshare -m ...; fi
#   . "$(dirname "$0")/reconf-lib.sh"
# shellcheck shell=sh

. "${top_srcdir:-$(dirname "$0")/..}/tests/daemon-lib.sh"

skip_if_sanitized_fork
command -v virsh >/dev/null || skip "virsh (libvirt-clients) is not installed"
QEMU=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 is not installed"
mount -t tmpfs tmpfs /run || skip "cannot mount a private /run"

ROOT="$T/libvirt"
URI="qemu:///embed?root=$ROOT"
mkdir -p "$ROOT/etc"
printf 'stdio_handler = "file"\nuser = "root"\ngroup = "root"\n' > "$ROOT/etc/qemu.conf"
virsh_() { virsh -q -c "$URI" "$@"; }

kill_domains() {
        for p in $(pgrep -f "$ROOT/lib/qemu" 2>/dev/null); do kill "$p" 2>/dev/null; done
}
trap 'kill_domains; cleanup' EXIT

# define NAME...: persistent domains that never run (CONFIG assignments).
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

store_py() { python3 -c "import json,sys; d=json.load(open('$STATE/store.json')); $1"; }
journal() { store_py 'print(d.get("journal"))'; }

# Records VF -> "domain guest_address alias state" for later comparison.
assignments_snapshot() {
        store_py 'print("\n".join(sorted("%s %s %s %s %s" % (v, a["domain"], a["guest_address"], a["alias"], a["state"]) for v, a in d["assignments"].items())))'
}

# check_vfio PF: every VF of PF on vfio-pci.
check_vfio() {
        n=$(sys_numvfs "$1")
        i=0
        while [ "$i" -lt "$n" ]; do
                vf=$(sys_vf "$1" "$i")
                [ "$(sys_driver "$vf")" = vfio-pci ] || fail "VF $i ($vf) of $1 is on $(sys_driver "$vf"), not vfio-pci"
                i=$((i + 1))
        done
}

# check_xml: with svffd stopped, each domain's persistent XML holds
# exactly the hostdevs the store records (lines "DOMAIN VF GUEST_ADDRESS
# ALIAS" from xml_expect).
check_xml() {
        xml_expect > "$T/xml-expect"
        for d in $DOMAINS; do virsh_ dumpxml --inactive "$d" > "$T/xml-$d.xml" || fail "dumpxml $d"; done
        python3 - "$T" "$DOMAINS" <<'PY' || fail "domain XML does not match the assignments"
import sys, xml.etree.ElementTree as ET
t, doms = sys.argv[1], sys.argv[2].split()
want = [l for l in open(t + "/xml-expect").read().splitlines() if l.strip()]
exp = {d: set() for d in doms}
for w in want:
    d, vf, ga, alias = w.split()
    exp[d].add((vf, ga, alias))
for d in doms:
    got = set()
    for h in ET.parse("%s/xml-%s.xml" % (t, d)).findall("./devices/hostdev"):
        s = h.find("source/address")
        vf = "%04x:%02x:%02x.%x" % tuple(int(s.get(k), 16) for k in ("domain", "bus", "slot", "function"))
        g = h.find("address")
        ga = "%04x:%02x:%02x.%x" % tuple(int(g.get(k), 16) for k in ("domain", "bus", "slot", "function"))
        got.add((vf, ga, h.find("alias").get("name")))
    if got != exp[d]:
        print("domain %s: expected %s, got %s" % (d, sorted(exp[d]), sorted(got)), file=sys.stderr)
        sys.exit(1)
PY
}

# xml_expect: what check_xml expects: the attached assignments (paused
# ones are off their domain, their reservation only in the store).
xml_expect() {
        store_py 'print("\n".join("%s %s %s %s" % (a["domain"], v, a["guest_address"], a["alias"]) for v, a in sorted(d["assignments"].items()) if a["state"] == "attached"))'
}

# steps_equal PLAN.json RESULT.json: the executed step log is the dry
# run's steps, in phase order (quiesce and restore run in parallel
# across domains, so order within a phase may differ).
steps_equal() {
        python3 - "$1" "$2" <<'PY' || fail "the executed steps differ from the dry run"
import json, sys
plan = json.load(open(sys.argv[1]))["plan"]["steps"]
done = json.load(open(sys.argv[2]))["steps"]
order = ["quiesce", "numvfs", "bind", "restore", "commit"]
key = lambda s: (order.index(s["phase"]), json.dumps(s, sort_keys=True))
phases = [order.index(s["phase"]) for s in done]
assert phases == sorted(phases), "steps ran out of phase order: %s" % [s["phase"] for s in done]
if sorted(plan, key=key) != sorted(done, key=key):
    print("dry run: %s\nexecuted: %s" % (json.dumps(plan), json.dumps(done)), file=sys.stderr)
    sys.exit(1)
PY
}
