# Shared by the reconf integration tests: svffd on pcisim with libvirt's
# QEMU driver embedded (libvirt-embed-lib.sh: a private root in a private
# mount namespace), and helpers that check the invariants a reconf must
# keep. Source it first thing (it re-executes the test in that namespace):
#
#   . "$(dirname "$0")/reconf-lib.sh"
# shellcheck shell=sh

. "${top_srcdir:-$(dirname "$0")/..}/tests/libvirt-embed-lib.sh"

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
