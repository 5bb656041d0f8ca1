#!/bin/sh
# Release of an assigned VF, with libvirt's QEMU driver embedded: refused
# without --force (naming the VF and the domain, the VF still on vfio-pci
# and still assigned); with --force the VF is detached from its domain
# first (the domain's definition no longer has it), then given back to
# its original driver. An unassigned VF is released as before.
. "$(dirname "$0")/libvirt-embed-lib.sh"

define vm1
PF=0000:01:00.0
start_pcisim qdma
svff_conf
start_connected
ctl init $PF 3 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF2=$(sys_vf $PF 2)
ctl attach "$VF0" vm1 --guest-address 05:00.0 > "$T/out" || fail "attach: $(cat "$T/out")"
asg="d['pfs'][0]['vfs'][0]['assigned_to']"

# Without --force: refused, nothing changed.
rc=0
ctl release "$VF0" > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "release of an assigned VF"
grep -q "VF $VF0 is assigned to domain 'vm1'" "$T/err" || fail "refusal does not name VF and domain: $(cat "$T/err")"
grep -q "svffctl detach $VF0" "$T/err" && grep -q "release --force $VF0" "$T/err" ||
        fail "refusal does not say what to do: $(cat "$T/err")"
expect_eq "$(sys_driver "$VF0")" vfio-pci "driver of the refused VF"
expect_eq "$(ctl list --json | jget "$asg['domain']")" vm1 "assignment after the refusal"
rc=0
varlink_call io.svff.Release "{\"vf\": \"$VF0\"}" > "$T/out" || rc=$?
grep -q '"io.svff.AlreadyAssigned"' "$T/out" || fail "Release over varlink: $(cat "$T/out")"
rc=0
varlink_call io.svff.Release "{\"vf\": \"$VF0\", \"force\": 1}" > "$T/out" || rc=$?
grep -q '"org.varlink.service.InvalidParameter"' "$T/out" || fail "force that is not a bool: $(cat "$T/out")"

# The dry run: refused as the release is; with --force, the plan, and
# nothing changed (the VF's driver, its record, the domain's definition).
rc=0
ctl release "$VF0" --dry-run > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "dry run of the release of an assigned VF"
grep -q "VF $VF0 is assigned to domain 'vm1'" "$T/err" || fail "dry run's refusal: $(cat "$T/err")"
cp "$STATE/store.json" "$T/store.before"
ctl release --force --dry-run "$VF0" --json > "$T/dry.json" || fail "release --force --dry-run: $(cat "$T/dry.json")"
expect_eq "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = d["plan"]
print(d["dry_run"], d["executable"], p["pf"], p["from"] == p["to"], p["release"]["vf"], p["release"]["driver"],
      p["assignments"][0]["fate"], " ".join(s["phase"] + "/" + s["action"] for s in p["steps"]))
' "$T/dry.json")" "True True $PF True $VF0 None released quiesce/release commit/commit release/release_class release/reprobe" \
        "release --force --dry-run --json"
ctl release --force --dry-run "$VF0" > "$T/out" || fail "release --force --dry-run: $(cat "$T/out")"
grep -q "^Release VF $VF0 (VF 0 of PF $PF, which keeps its 3 VFs): re-probed" "$T/out" &&
grep -q "1. \[quiesce\] detach VF $VF0 from domain 'vm1' for good (--force)" "$T/out" &&
grep -q "4. \[release\] clear VF $VF0's driver_override and re-probe it" "$T/out" ||
        fail "the printed plan: $(cat "$T/out")"
expect_eq "$(sys_driver "$VF0")" vfio-pci "VF0's driver after the dry run"
cmp -s "$STATE/store.json" "$T/store.before" || fail "the dry run changed the store"
expect_eq "$(ctl list --json | jget "$asg['domain']")" vm1 "assignment after the dry run"

# --force: detached through the Detach path, then released.
ctl release --force "$VF0" > "$T/out" 2> "$T/err" || fail "release --force: $(cat "$T/out" "$T/err")"
grep -q "VF $VF0 detached from domain 'vm1'" "$T/out" || fail "release --force output: $(cat "$T/out")"
grep -q "VF $VF0 had no driver before svffd; re-probed, it is on qdma-vf" "$T/out" ||
        fail "release --force output: $(cat "$T/out")"
[ "$(sys_driver "$VF0")" != vfio-pci ] || fail "VF0 still on vfio-pci after release --force"
ctl list --json > "$T/list.json"
expect_eq "$(jget "$asg" < "$T/list.json")" None "assignment after release --force"
expect_eq "$(jget "d['pfs'][0]['vfs'][0]['managed']" < "$T/list.json")" False "VF0 record after release --force"
grep -q "detaching it from domain 'vm1' first" "$T/svffd.log" || fail "svffd does not log the detach"

# An unassigned VF: released as before, --force or not.
ctl release "$VF1" > "$T/out" || fail "release of an unassigned VF: $(cat "$T/out")"

# An assignment still detaching (its detach timed out): --force detaches
# it again, then releases it; its dry run plans that.
ctl attach "$VF2" vm1 > "$T/out" || fail "attach VF2: $(cat "$T/out")"
stop_svffd || fail "svffd exit status"
python3 - "$STATE/store.json" "$VF2" <<'PY' || fail "marking VF2's assignment detaching"
import json, sys
with open(sys.argv[1]) as f:
    s = json.load(f)
s["assignments"][sys.argv[2]]["state"] = "detaching"
with open(sys.argv[1], "w") as f:
    json.dump(s, f)
PY
start_connected
expect_eq "$(ctl list --json | jget "d['pfs'][0]['vfs'][2]['assigned_to']['state']")" detaching "VF2's state"
ctl release --force --dry-run "$VF2" --json > "$T/dry.json" 2>&1 ||
        fail "release --force --dry-run of a detaching VF: $(cat "$T/dry.json")"
expect_eq "$(jget '" ".join(s["phase"] + "/" + s["action"] for s in d["plan"]["steps"])' < "$T/dry.json")" \
        "quiesce/release commit/commit release/release_class release/reprobe" \
        "release --force --dry-run of a detaching VF"
ctl release --force "$VF2" > "$T/out" 2>&1 || fail "release --force of a detaching VF: $(cat "$T/out")"
grep -q "VF $VF2 detached from domain 'vm1'" "$T/out" || fail "release --force output: $(cat "$T/out")"
expect_eq "$(ctl list --json | jget "d['pfs'][0]['vfs'][2]['assigned_to']")" None "VF2's assignment after it"
stop_svffd || fail "svffd exit status"

virsh_ dumpxml --inactive vm1 > "$T/vm1.xml"
python3 - "$T/vm1.xml" <<'PY' || fail "vm1 still has a hostdev: $(cat "$T/vm1.xml")"
import sys, xml.etree.ElementTree as ET
assert ET.parse(sys.argv[1]).findall("./devices/hostdev") == []
PY
echo "PASS"
