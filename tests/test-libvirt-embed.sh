#!/bin/sh
# svffd with libvirt's QEMU driver embedded (qemu:///embed, a private root)
# against pcisim: CONFIG attach and detach on defined domains checked in
# the domain XML, pool allocation, double-assignment refusal, a VF not on
# vfio-pci, a shared IOMMU group, an unknown domain, and a LIVE attach on
# this VFIO-less host failing with libvirt's own error, store unchanged.
. "$(dirname "$0")/libvirt-embed-lib.sh"

define vm1 vm2 vm3
virsh_ start vm3 >/dev/null || fail "starting vm3 (TCG) failed"
UUID1=$(virsh_ domuuid vm1)

PF=0000:01:00.0
start_pcisim qdma
svff_conf
start_connected
ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF2=$(sys_vf $PF 2); VF3=$(sys_vf $PF 3)
gen() { ctl status --json | jget 'd["store"]["generation"]'; }

# CONFIG attach (vm1 is defined, not running: config only by default)
ctl attach "$VF0" vm1 --guest-address 05:00.0 > "$T/out" || fail "attach: $(cat "$T/out")"
grep -q "attached to domain 'vm1' at guest address 05:00.0 (config" "$T/out" || fail "attach output: $(cat "$T/out")"
ctl list --json > "$T/list.json"
a="d['pfs'][0]['vfs'][0]['assigned_to']"
expect_eq "$(jget "$a['domain']" < "$T/list.json")" vm1 "assigned domain"
expect_eq "$(jget "$a['uuid']" < "$T/list.json")" "$UUID1" "assigned uuid"
expect_eq "$(jget "$a['guest_address']" < "$T/list.json")" 0000:05:00.0 "guest address"
expect_eq "$(jget "$a['alias']" < "$T/list.json")" "ua-svff-$(echo "$VF0" | tr ':.' '--')" "alias"
expect_eq "$(jget "$a['live']" < "$T/list.json")" False "live"
expect_eq "$(jget "$a['config']" < "$T/list.json")" True "config"
expect_eq "$(jget "$a['state']" < "$T/list.json")" attached "state"
# A config-only attach is not what the guest has: STATE says defined.
ctl list | grep -q "^$VF0  *VF0 .* vm1  *05:00.0  *defined\( \|$\)" || fail "human list: $(ctl list)"
check_vfs "config attach"

# Pool: --pf takes the first free VF on vfio-pci (VF1), address chosen by libvirt
ctl attach --pf $PF vm2 --json > "$T/out" || fail "pool attach: $(cat "$T/out")"
expect_eq "$(jget 'd["vf"]' < "$T/out")" "$VF1" "pool VF"
POOLADDR=$(jget 'd["assignment"]["guest_address"]' < "$T/out")
[ "$POOLADDR" != None ] || fail "no guest address read back for the pool VF"
check_vfs "pool attach"

# Refusals, each with the store unchanged
printf '%s' "$VF3" > "$SYS/bus/pci/drivers/vfio-pci/unbind"
ctl release "$VF3" >/dev/null || fail "release VF3"
g=$(gen)
rc=0; ctl attach "$VF0" vm2 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "double assignment"
grep -q "already assigned to domain 'vm1'" "$T/err" || fail "double assignment: $(cat "$T/err")"
rc=0; ctl attach "$VF2" no-such-vm 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "unknown domain"
grep -q "No domain 'no-such-vm'" "$T/err" || fail "unknown domain: $(cat "$T/err")"
rc=0; ctl attach "$VF2" vm1 --guest-address 1:2:3 2> "$T/err" || rc=$?
expect_eq "$rc" 2 "bad guest address (a usage error, svffctl(8))"
# Over varlink, where svffctl's own check does not run: slot 0 of bus 0 is
# the host bridge of vm1's q35 machine, refused by name before anything
# is journaled (libvirt would take it into the definition, and refuse it
# only when the domain starts).
varlink_call io.svff.Attach "{\"vf\": \"$VF2\", \"domain\": \"vm1\", \"guest_address\": \"00:00.0\"}" \
        > "$T/reply.json"
expect_eq "$(jget 'd.get("error")' < "$T/reply.json")" io.svff.GuestAddressTaken "attach at 00:00.0 over varlink"
expect_eq "$(jget 'd["parameters"]["guest_address"]' < "$T/reply.json")" 0000:00:00.0 "refused guest address"
jget 'd["parameters"]["message"]' < "$T/reply.json" |
        grep -q "^Guest address '0000:00:00.0' is the slot of the host bridge on domain 'vm1' (machine '[^']*q35[^']*')" ||
        fail "00:00.0 refusal: $(cat "$T/reply.json")"
# A VF svff did not set up for vfio-pci (released above) is refused, not rebound
rc=0; ctl attach "$VF3" vm1 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "VF not on vfio-pci"
grep -q "not vfio-pci" "$T/err" || fail "not on vfio: $(cat "$T/err")"
# A PF or a bridge is named as what it is, with no policy cited.
rc=0; ctl attach "$PF" vm1 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "attach a PF"
grep -q "$PF is a PF, not a VF" "$T/err" && ! grep -q "policy" "$T/err" || fail "attach a PF: $(cat "$T/err")"
rc=0; ctl attach 0000:00:00.0 vm1 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "attach the host bridge"
grep -q "0000:00:00.0 is a host bridge, not a VF" "$T/err" || fail "attach a bridge: $(cat "$T/err")"
expect_eq "$(gen)" "$g" "store generation after refusals"
check_vfs "refusals"
# LIVE on a running domain: libvirt's own refusal (no VFIO on this host).
# It reached libvirt, so it was journaled: the intent, then its removal.
rc=0; ctl attach "$VF2" vm3 --live 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "live attach without VFIO"
grep -q "Attaching VF $VF2 to domain 'vm3' (live)" "$T/err" || fail "live error: $(cat "$T/err")"
note "live attach refused: $(cat "$T/err")"
expect_eq "$(gen)" "$((g + 2))" "store generation after the live refusal"
check_vfs "live refusal"
expect_eq "$(ctl list --json | jget "d['pfs'][0]['vfs'][2]['assigned_to']")" None "VF2 after refused attaches"

# Pause without a native command: detach-with-reservation, then back at the same address
ctl pause "$VF0" > "$T/out" || fail "pause: $(cat "$T/out")"
grep -q "detach pause" "$T/out" || fail "pause kind: $(cat "$T/out")"
expect_eq "$(ctl list --json | jget "$a['state']")" held "state after pause"
check_vfs "pause"
ctl unpause "$VF0" > "$T/out" || fail "unpause: $(cat "$T/out")"
grep -q "at guest address 05:00.0" "$T/out" || fail "unpause address: $(cat "$T/out")"
expect_eq "$(ctl list --json | jget "$a['state']")" attached "state after unpause"
check_vfs "unpause"

# Detach vm2's VF; vm1 keeps VF0. Then look at the XML with svffd stopped.
ctl detach "$VF1" > "$T/out" || fail "detach: $(cat "$T/out")"
expect_eq "$(ctl list --json | jget "d['pfs'][0]['vfs'][1]['assigned_to']")" None "VF1 after detach"
rc=0; ctl detach "$VF1" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "detach of an unassigned VF"
check_vfs "detach"
stop_svffd || fail "svffd exit status"
check_vfs "svffd stopped"

virsh_ dumpxml --inactive vm1 > "$T/vm1.xml"
virsh_ dumpxml --inactive vm2 > "$T/vm2.xml"
python3 - "$T/vm1.xml" "$T/vm2.xml" "$VF0" <<'PY' || fail "domain XML: $(cat "$T/vm1.xml")"
import sys, xml.etree.ElementTree as ET
vm1, vm2, vf = ET.parse(sys.argv[1]), ET.parse(sys.argv[2]), sys.argv[3]
hd = vm1.findall("./devices/hostdev")
assert len(hd) == 1, hd
h = hd[0]
assert h.get("managed") == "no" and h.find("driver").get("name") == "vfio"
s = h.find("source/address")
dom, bus, sf = vf.split(":")
slot, fn = sf.split(".")
assert (int(s.get("domain"), 16), int(s.get("bus"), 16), int(s.get("slot"), 16), int(s.get("function"), 16)) == \
       (int(dom, 16), int(bus, 16), int(slot, 16), int(fn, 16)), ET.tostring(s)
assert h.find("alias").get("name") == "ua-svff-" + vf.replace(":", "-").replace(".", "-")
g = h.find("address")
assert (g.get("type"), int(g.get("bus"), 16), int(g.get("slot"), 16)) == ("pci", 5, 0), ET.tostring(g)
assert vm2.findall("./devices/hostdev") == [], "vm2 still has a hostdev"
PY

# Shared IOMMU group: the NIC's VFs share the PF's group (mixed scenario)
# and a VF recorded for another domain blocks the rest of the group.
note "shared group"
fusermount3 -u "$SYS" 2>/dev/null || umount -l "$SYS"
rm -rf "$STATE"
start_pcisim mixed
start_connected
NIC=0000:03:00.0
ctl init $NIC 2 >/dev/null || fail "init NIC"
N0=$(sys_vf $NIC 0); N1=$(sys_vf $NIC 1)
expect_eq "$(sys_group "$N0")" "$(sys_group "$N1")" "NIC VFs share a group"
rc=0; ctl attach "$N0" vm1 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "group with the PF on igb"
# The PF shares the group: the advice must never be to move the PF
# (that destroys its VFs), and list says so before anyone tries.
grep -q "IOMMU group [0-9]* is not viable: it holds SR-IOV PF '$NIC' (on 'igb') with its VFs, because the platform does not isolate them (no ACS)" "$T/err" ||
        fail "non-viable group: $(cat "$T/err")"
grep -q "bind it to vfio-pci or unbind it" "$T/err" && fail "the advice moves the PF: $(cat "$T/err")"
expect_eq "$(ctl list --json | jget "[v['unassignable'] for p in d['pfs'] if p['address'] == '$NIC' for v in p['vfs']][0]")" \
        "VF $N0 shares IOMMU group $(sys_group "$N0") with its PF $NIC: the platform does not isolate them (no ACS), so the VF cannot go to a VM, and binding the PF away would destroy every VF" \
        "list's unassignable for a VF grouped with its PF"
COLUMNS=120 ctl list > "$T/list.txt"
grep -qE "^$N1 +VF1 .* unassignable( |\$)" "$T/list.txt" || fail "list's row of a VF grouped with its PF: $(cat "$T/list.txt")"
stop_svffd
python3 - "$STATE/store.json" "$N0" <<'PY'
import json, sys
p, vf = sys.argv[1], sys.argv[2]
d = json.load(open(p))
d["assignments"][vf] = {"uuid": "00000000-0000-0000-0000-000000000001", "domain": "other",
    "guest_address": None, "alias": "ua-x", "live": False, "config": True, "state": "attached", "pause_mode": None}
json.dump(d, open(p, "w"))
PY
start_connected
g=$(gen)
rc=0; ctl attach "$N1" vm1 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "shared group"
grep -q "shares IOMMU group .* assigned to domain 'other'" "$T/err" || fail "shared group: $(cat "$T/err")"
expect_eq "$(gen)" "$g" "store after the shared-group refusal"
stop_svffd
echo "PASS"
