#!/bin/sh
# attach --failover on libvirt's QEMU driver (embedded, or a private
# libvirtd under a sanitizer build), into persistent definitions: a NIC
# VF paired with the domain's virtio-net standby (found by its MAC, any
# case, or by its alias) goes in as <interface type='hostdev'
# managed='no'> with the standby's MAC and <teaming type='transient'
# persistent='ALIAS'/>, never as a <hostdev>; the assignment records the
# pair; a reconf puts the same element back; detach takes it out. A
# standby that is not there, or has no user alias, is refused with
# nothing changed.
. "$(dirname "$0")/libvirt-embed-lib.sh"

# domain NAME ALIAS_ELEMENT: a defined q35 domain with a virtio-net
# standby (MAC 52:54:00:ab:cd:ef, <teaming type='persistent'/>).
domain() {
        cat > "$T/$1.xml" <<XML
<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>64</memory>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <features><acpi/></features>
  <devices>
    <emulator>$QEMU</emulator>
    <interface type='user'>
      <mac address='52:54:00:ab:cd:ef'/>
      <model type='virtio'/>
      <teaming type='persistent'/>
      $2
    </interface>
  </devices>
</domain>
XML
        virsh_ define "$T/$1.xml" >/dev/null || fail "virsh define $1"
}
domain vmf "<alias name='ua-net0'/>"
domain vmnoalias ""

NIC=0000:03:00.0
start_pcisim nic
svff_conf
start_connected
ctl init $NIC 3 >"$T/out" 2>&1 || fail "init: $(cat "$T/out")"
N0=$(sys_vf $NIC 0); N1=$(sys_vf $NIC 1)
gen() { ctl status --json | jget 'd["store"]["generation"]'; }

# shape DOMAIN VF: the persistent definition holds VF as the standby's
# failover primary, and no <hostdev> of it (svffd stopped: from virsh,
# or, embedded, libvirt's file under the root).
shape() {
        if [ "$SVFF_LIBVIRT" = daemon ] || [ -z "$SVFFD_PID" ]; then
                virsh_ dumpxml --inactive "$1" > "$T/shape.xml" || fail "virsh dumpxml --inactive $1"
        else
                cp "$ROOT/etc/qemu/$1.xml" "$T/shape.xml"
        fi
        python3 - "$T/shape.xml" "$2" <<'PY' || fail "the XML of $1 after: $3"
import sys, xml.etree.ElementTree as ET
dom, vf = ET.parse(sys.argv[1]).getroot(), sys.argv[2]
def addr(a):
    return "%04x:%02x:%02x.%x" % tuple(int(a.get(k), 16) for k in ("domain", "bus", "slot", "function"))
mine = [i for i in dom.findall("./devices/interface")
        if i.find("source/address") is not None and addr(i.find("source/address")) == vf]
assert len(mine) == 1, "VF %s in %d <interface> elements" % (vf, len(mine))
i = mine[0]
# libvirt writes managed only when it is yes.
assert i.get("type") == "hostdev" and i.get("managed", "no") == "no", i.attrib
assert i.find("mac").get("address") == "52:54:00:ab:cd:ef", i.find("mac").attrib
assert i.find("teaming").attrib == {"type": "transient", "persistent": "ua-net0"}, i.find("teaming").attrib
assert i.find("alias").get("name") == "ua-svff-" + vf.replace(":", "-").replace(".", "-"), i.find("alias").attrib
assert i.find("driver").get("name") == "vfio", ET.tostring(i)
for h in dom.findall("./devices/hostdev"):
    a = h.find("source/address")
    assert a is None or addr(a) != vf, "VF %s is a <hostdev> too" % vf
PY
}

note "attach --failover by MAC (any case): the pair, recorded"
ctl attach "$N0" vmf --config --failover 52:54:00:AB:CD:EF >"$T/out" 2>&1 || fail "attach --failover: $(cat "$T/out")"
expect_eq "$(ctl list --json | jget "[v for p in d['pfs'] for v in p['vfs'] if v['address'] == '$N0'][0]['assigned_to']['failover']")" \
        "{'standby': 'ua-net0', 'mac': '52:54:00:ab:cd:ef'}" "the assignment's failover"
shape vmf "$N0" "attach --failover"

note "the dry run shows the pair"
ctl reconf $NIC 4 --dry-run --json > "$T/plan.json" || fail "dry run: $(cat "$T/plan.json")"
expect_eq "$(jget "[g for g in d['guests'] if g['vf'] == '$N0'][0]['failover']" < "$T/plan.json")" ua-net0 \
        "the dry run's failover"
ctl reconf $NIC 4 --dry-run > "$T/plan.txt" || fail "human dry run: $(cat "$T/plan.txt")"
grep -q "VF $N0  domain 'vmf' at .*: failover pair with ua-net0, not running or not live" "$T/plan.txt" ||
        fail "human dry run: $(cat "$T/plan.txt")"

note "a reconf puts the same element back"
ctl reconf $NIC 4 >"$T/out" 2>&1 || fail "reconf: $(cat "$T/out")"
shape vmf "$N0" "reconf"

note "detach takes the pair apart"
ctl detach "$N0" >"$T/out" 2>&1 || fail "detach: $(cat "$T/out")"
stop_svffd || fail "svffd exit status"
virsh_ dumpxml --inactive vmf | grep -q "type='hostdev'" && fail "vmf still has the VF after detach"
start_connected

note "by alias"
ctl attach "$N1" vmf --config --failover ua-net0 >"$T/out" 2>&1 || fail "attach --failover ua-net0: $(cat "$T/out")"
shape vmf "$N1" "attach --failover ua-net0"

note "refusals, nothing changed"
g=$(gen)
rc=0; ctl attach "$N0" vmf --config --failover 52:54:00:99:99:99 >"$T/out" 2>"$T/err" || rc=$?
expect_eq "$rc" 1 "a standby that is not there: exit status"
grep -q "Domain 'vmf' has no failover standby '52:54:00:99:99:99'" "$T/err" || fail "no standby: $(cat "$T/err")"
varlink_call io.svff.Attach "{\"vf\": \"$N0\", \"domain\": \"vmnoalias\", \"config\": true, \"failover\": \"52:54:00:ab:cd:ef\"}" > "$T/vl"
grep -q '"error":"io.svff.DeviceRefused"' "$T/vl" || fail "a standby without an alias: $(cat "$T/vl")"
grep -q "has no user alias" "$T/vl" || fail "a standby without an alias: $(cat "$T/vl")"
varlink_call io.svff.Attach "{\"vf\": \"$N0\", \"domain\": \"vmf\", \"failover\": 5}" > "$T/vl"
grep -q '"org.varlink.service.InvalidParameter"' "$T/vl" || fail "failover that is not a string: $(cat "$T/vl")"
expect_eq "$(gen)" "$g" "store generation after the refusals"
stop_svffd || fail "svffd exit status"
virsh_ dumpxml --inactive vmnoalias | grep -q "type='hostdev'" && fail "vmnoalias got the VF"
shape vmf "$N1" "the refusals"
echo "PASS"
