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
journal_none() { [ "$(journal)" = None ]; }
# Dead (a zombie until waited for), not just done answering.
svffd_gone() { case $(ps -o stat= -p "$SVFFD_PID") in Z*|'') true ;; *) false ;; esac; }

# reconf_scene VF2_DOMAIN [CONF_EXTRA]: the scene of the fault tests
# (a test build with fault points, or the test skips): domains vm1..vm3
# defined (DOMAINS), pcisim's qdma PF (PF) at 4 VFs (VF0..VF3), VF0 in
# vm1, VF1 in vm2 and VF2 in VF2_DOMAIN at guest addresses 05..07:00.0;
# their assignments in "before"; svffd stopped and the domain XML
# checked. CONF_EXTRA goes into svff.conf (svff_conf).
reconf_scene() {
        DOMAINS="vm1 vm2 vm3"
        define $DOMAINS
        start_pcisim qdma
        svff_conf "${2:-}"
        start_connected
        varlink_call io.svff.Debug.InjectUevent '{}' | grep -q InterfaceNotFound &&
                skip "svffd was built without --enable-fault-points"
        PF=0000:01:00.0
        ctl init $PF 4 >/dev/null || fail "init"
        VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF2=$(sys_vf $PF 2); VF3=$(sys_vf $PF 3)
        ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach VF0"
        ctl attach "$VF1" vm2 --guest-address 06:00.0 >/dev/null || fail "attach VF1"
        ctl attach "$VF2" "$1" --guest-address 07:00.0 >/dev/null || fail "attach VF2"
        before=$(assignments_snapshot)
        stop_svffd || fail "svffd exit status"
        check_xml
}


# flash_hook_standin: the image directory $IMAGES (root's, mode 0755, as
# svffd requires of it), and $T/hook, standing in for a vendor's flash
# tool (no FPGA here) on pcisim's QDMA PF. Each run is logged to $T/hook.log as
# "hook PF IMAGE DEADLINE on-bus|removed"; what it does is the image's
# first line: "DEVICE TOTALVFS [touch | offset=N stride=N]" has pcisim
# bring the PF back as 10ee:DEVICE with TOTALVFS VFs (touch: the image
# changes while the hook runs; offset/stride: its VFs at other host
# addresses), "fail" exits 1, "slow" passes any deadline, "kill" kills svffd,
# "latin1" exits 1 with a last line that is not UTF-8 and holds control
# characters (ESC, U+202E), as a vendor's tool might print.
flash_hook_standin() {
        IMAGES="$T/images"
        mkdir -p "$IMAGES"
        chmod 755 "$IMAGES"
        cat > "$T/hook" <<EOF
#!/bin/sh
# flash hook stand-in: PF IMAGE DEADLINE
pf=\$1 image=\$2
if [ -e '$SYS/bus/pci/devices/'"\$pf" ]; then where=on-bus; else where=removed; fi
echo "hook \$pf \$image \$3 \$where" >> '$T/hook.log'
echo "writing \$image to \$pf"
read -r what n rest < "\$image"
[ "\$rest" = touch ] && touch -d '+5 hours' "\$image"
case \$what in
fail) echo "flash failed: bad bitstream"; exit 1 ;;
latin1) printf 'flash failed: caf\351 \033[2J\342\200\256 \377\n'; exit 1 ;;
slow) sleep 30; exit 0 ;;
kill) kill -9 \$PPID; sleep 1; exit 0 ;;
esac
case \$rest in offset=*|stride=*) layout=" \$rest" ;; *) layout= ;; esac
printf 'reprogram %s %s %s qdma-pf%s' "\$pf" "\$what" "\$n" "\$layout" > '$SYS/.pcisim/ctl' || exit 2
echo "done"
EOF
        chmod 755 "$T/hook"
}

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
# across domains, so order within a phase may differ). A provision step
# done names the VF the kernel made at its index, which the plan cannot;
# the dry run's steps say what each may take, which the log does not.
steps_equal() {
        python3 - "$1" "$2" <<'PY' || fail "the executed steps differ from the dry run"
import json, sys
plan = json.load(open(sys.argv[1]))["plan"]["steps"]
done = json.load(open(sys.argv[2]))["steps"]
for s in plan:
    s.pop("deadline_msec", None)
for s in done:
    if s["action"] == "provision":
        assert s.pop("vf", None), "provision step without its VF: %s" % s
order = ["quiesce", "numvfs", "provision", "bind", "restore", "commit"]
key = lambda s: (order.index(s["phase"]), json.dumps(s, sort_keys=True))
phases = [order.index(s["phase"]) for s in done]
assert phases == sorted(phases), "steps ran out of phase order: %s" % [s["phase"] for s in done]
if sorted(plan, key=key) != sorted(done, key=key):
    print("dry run: %s\nexecuted: %s" % (json.dumps(plan), json.dumps(done)), file=sys.stderr)
    sys.exit(1)
PY
}
