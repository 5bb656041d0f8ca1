#!/bin/sh
# Attach with device-class settings, with libvirt (embedded, or a private
# libvirtd under a sanitizer build), on pcisim's NVMe PF and the stand-in
# for its admin queue (SVFF_TEST_NVME_STANDIN, daemon-lib.sh: no real
# controller runs on the host; the VM tier's 08-nvme-class runs QEMU's):
# 'attach --namespace' provisions the namespace before the domain gets the
# VF and records it with the assignment; a namespace already another VF's
# is refused before libvirt is asked, nothing recorded; 'detach --release'
# undoes it, and so does 'reconf --force' for the assignment it drops
# (a failure of that release is said, the reconf done).
. "$(dirname "$0")/libvirt-embed-lib.sh"

define vm1 vm2
# restart_faulted POINT: svffd stopped, then started with fault point
# POINT armed.
restart_faulted() {
        stop_svffd || fail "svffd did not stop cleanly"
        SVFF_FAULT=$1; export SVFF_FAULT
        start_connected
        unset SVFF_FAULT
}
PF=0000:00:04.0
start_pcisim nvme
svff_conf ", \"policies\": { \"disks\": { \"match\": { \"address\": \"$PF\" },
        \"nvme\": { \"vq\": 2, \"vi\": 1, \"namespace\": [1, null] } } }"
start_connected
ctl init $PF 2 >"$T/out" 2>&1 || fail "init: $(cat "$T/out")"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1)
vf1="[v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == 1][0]"
expect_eq "$(ctl list --json | jget "$vf1['class']['state']['namespaces']")" "[]" "VF 1's namespaces after init"

# A namespace VF 0 has: refused before libvirt, no assignment recorded.
rc=0
ctl attach "$VF1" vm1 --namespace 1 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" != 0 ] || fail "attach of VF 1 with VF 0's namespace succeeded"
grep -q "namespace 1" "$T/err" || fail "the refusal does not name the namespace: $(cat "$T/err")"
expect_eq "$(ctl list --json | jget "$vf1['assigned_to']")" None "VF 1's assignment after the refusal"
virsh_ dumpxml vm1 | grep -q "ua-svff" && fail "vm1 got a hostdev although the attach was refused"

# What the class is given besides the settings (the VF's recorded state,
# whether it goes back to its tenant) is svffd's alone: an Attach whose
# settings carry such keys is refused like any unknown key, before
# libvirt is asked, and the VF keeps no namespace.
for extra in '"tenant": true' '"state": {"namespaces": [2], "scid": 2}'; do
        varlink_call io.svff.Attach "{\"vf\": \"$VF1\", \"domain\": \"vm1\",
                \"class\": {\"namespace\": 2, $extra}}" >"$T/reply"
        expect_eq "$(jget "d.get('error')" <"$T/reply")" io.svff.DeviceRefused "Attach with {$extra}: $(cat "$T/reply")"
        key=${extra%%\":*}
        grep -q "Unknown NVMe setting '${key#\"}'" "$T/reply" ||
                fail "the refusal of {$extra} does not name the key: $(cat "$T/reply")"
        expect_eq "$(ctl list --json | jget "$vf1['assigned_to']")" None "VF 1's assignment after {$extra}"
        expect_eq "$(ctl list --json | jget "$vf1['class']['state']['namespaces']")" "[]" \
                "VF 1's namespaces after {$extra}"
        virsh_ dumpxml vm1 | grep -q "ua-svff" && fail "vm1 got a hostdev although {$extra} was refused"
done

# Its own namespace: provisioned first, recorded with the assignment.
ctl attach "$VF1" vm1 --namespace 2 >"$T/out" 2>&1 || fail "attach --namespace 2: $(cat "$T/out")"
ctl list --json >"$T/list.json"
expect_eq "$(jget "$vf1['class']['state']['namespaces']" <"$T/list.json")" "[2]" "VF 1's namespaces after attach"
expect_eq "$(jget "$vf1['assigned_to']['class']['settings']['namespace']" <"$T/list.json")" 2 \
        "the assignment's class settings"
expect_eq "$(jget "$vf1['assigned_to']['domain']" <"$T/list.json")" vm1 "VF 1's domain"
check_vfs "after attach --namespace"

# A record made while svffd still took "state" and "tenant" from an
# Attach's settings (its own keys for a reprovision then): svffd drops
# them where it reads the record, so an init or a reconf of the PF does
# not fail on them, and the VF keeps its namespace.
stop_svffd || fail "svffd did not stop cleanly"
python3 - "$STATE/store.json" "$VF1" <<'PY'
import json, sys
path, vf = sys.argv[1], sys.argv[2]
d = json.load(open(path))
for rec in (d["assignments"][vf], d["vfs"][vf]):
    rec["class"]["settings"]["tenant"] = True
json.dump(d, open(path, "w"))
PY
start_connected
ctl init $PF 2 >"$T/out" 2>&1 || fail "init of a PF whose assignment was recorded with 'tenant': $(cat "$T/out")"
ctl reconf $PF 2 --cycle >"$T/out" 2>&1 ||
        fail "reconf --cycle of a PF whose assignment was recorded with 'tenant': $(cat "$T/out")"
ctl list --json >"$T/list.json"
expect_eq "$(jget "$vf1['class']['state']['namespaces']" <"$T/list.json")" "[2]" "VF 1's namespaces after the reconf"
expect_eq "$(jget "$vf1['assigned_to']['domain']" <"$T/list.json")" vm1 "VF 1's domain after the reconf"
check_vfs "after the reconf of a record with 'tenant'"

# Over varlink: class must be an object.
rc=0
varlink_call io.svff.Attach "{\"vf\": \"$VF0\", \"domain\": \"vm2\", \"class\": 1}" >"$T/out" || rc=$?
grep -q '"org.varlink.service.InvalidParameter"' "$T/out" || fail "class that is not an object: $(cat "$T/out")"
# Its keys are snake_case; both spellings of one key (the kebab-case of
# earlier releases is still read) are refused before libvirt is asked.
varlink_call io.svff.Attach "{\"vf\": \"$VF0\", \"domain\": \"vm2\",
        \"class\": {\"scrub_on_release\": \"none\", \"scrub-on-release\": \"none\"}}" >"$T/out"
grep -q '"org.varlink.service.InvalidParameter"' "$T/out" || fail "both spellings of a class key: $(cat "$T/out")"
grep -q "gives 'scrub_on_release' twice, as 'scrub-on-release' (the old spelling)" "$T/svffd.log" ||
        fail "the refusal of both spellings does not name them"
expect_eq "$(ctl list --json | jget "[v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == 0][0]['assigned_to']")" \
        None "VF 0's assignment after the refusal"

# detach --release: off the domain, the class's release, the record gone.
ctl detach "$VF1" --release >"$T/out" 2>&1 || fail "detach --release: $(cat "$T/out")"
ctl list --json >"$T/list.json"
expect_eq "$(jget "$vf1['assigned_to']" <"$T/list.json")" None "VF 1's assignment after detach --release"
expect_eq "$(jget "$vf1['class']" <"$T/list.json")" None "VF 1's class record after detach --release"
virsh_ dumpxml vm1 | grep -q "ua-svff" && fail "vm1 still has the hostdev after detach --release"
check_vfs "after detach --release"

# reconf --force: the assignment the new count drops gets its class's
# release once the count is in place: namespace 2 leaves VF 1's
# secondary, so VF 0 can have it (refused while VF 1's secondary had it).
ctl init $PF 2 >"$T/out" 2>&1 || fail "init $PF 2 again: $(cat "$T/out")"
ctl attach "$VF1" vm1 --namespace 2 >"$T/out" 2>&1 || fail "attach --namespace 2 again: $(cat "$T/out")"
lines=$(wc -l <"$T/svffd.log")
ctl reconf $PF 1 --force >"$T/out" 2>&1 || fail "reconf $PF 1 --force: $(cat "$T/out")"
expect_eq "$(sys_numvfs $PF)" 1 "sriov_numvfs after reconf --force"
tail -n +"$((lines + 1))" "$T/svffd.log" | grep -q "VF 1 of PF $PF, released by the reconf: its device class's setup undone" ||
        fail "svffd did not run the class's release of VF 1: $(tail -n +"$((lines + 1))" "$T/svffd.log")"
ctl attach "$VF0" vm2 --namespace 2 >"$T/out" 2>&1 ||
        fail "namespace 2 is still VF 1's after reconf --force released it: $(cat "$T/out")"
expect_eq "$(ctl list --json | jget "[v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == 0][0]['class']['state']['namespaces']")" \
        "[2]" "VF 0's namespaces (the assignment's, over the policy's) after taking VF 1's"
ctl detach "$VF0" >"$T/out" 2>&1 || fail "detach $VF0: $(cat "$T/out")"

# svffd killed right after that release: the restart resumes the reconf
# from its journal, releases again (a release is idempotent) and the
# namespace is free; VF 0 gives it back with its own release.
ctl reconf $PF 2 >"$T/out" 2>&1 || fail "reconf $PF 2 before the kill: $(cat "$T/out")"
VF1=$(sys_vf $PF 1)
ctl attach "$VF1" vm1 --namespace 3 >"$T/out" 2>&1 || fail "attach --namespace 3 before the kill: $(cat "$T/out")"
restart_faulted after-class-release-1
rc=0
ctl reconf $PF 1 --force >"$T/out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "svffd survived its fault point after-class-release-1: $(cat "$T/out")"
grep -qE "fault point 'after-class-release' \([0-9]*\) reached, killing svffd" "$T/svffd.log" ||
        fail "svffd was not killed after the class's release"
wait "$SVFFD_PID" 2>/dev/null || true
SVFFD_PID=""
varlink_check stop || fail "svffd's replies break its interface"
start_connected
journal_left() { python3 -c "import json; d=json.load(open('$STATE/store.json')); print(bool(((d.get('journal') or {}).get('pfs') or {})))"; }
no_journal() { [ "$(journal_left)" = False ]; }
wait_for_s 20 no_journal ||
        fail "the reconf did not resume after the kill: journal $(journal_left)"
expect_eq "$(sys_numvfs $PF)" 1 "sriov_numvfs after the resumed reconf --force"
ctl attach "$VF0" vm2 --namespace 3 >"$T/out" 2>&1 ||
        fail "namespace 3 is still VF 1's after the resumed reconf --force: $(cat "$T/out")"
ctl detach "$VF0" --release >"$T/out" 2>&1 || fail "detach --release $VF0 after the kill: $(cat "$T/out")"
check_vfs "after the kill after the class's release"

# A class release that fails is said, and the reconf still goes through
# (the VF is gone with its count; what is left is named).
ctl --json reconf $PF 2 >"$T/reconf2.json" 2>"$T/out" || fail "reconf $PF 2: $(cat "$T/out")"
# Its progress counts the plan's steps: the class's provision of each
# VF is reported, but never takes done past total.
python3 - "$T/reconf2.json" <<'PY' || fail "reconf progress past its total: $(cat "$T/reconf2.json")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
steps = [e for e in ev if e.get("event") in ("reconf-step", "reconf-step-failed")]
assert any(e.get("action") == "provision" for e in steps), "no provision step reported"
assert all(e["done"] <= e["total"] for e in steps), [(e["done"], e["total"]) for e in steps]
PY
VF1=$(sys_vf $PF 1)
ctl attach "$VF1" vm1 --namespace 3 >"$T/out" 2>&1 || fail "attach --namespace 3: $(cat "$T/out")"
restart_faulted fail-class-release-1
ctl reconf $PF 1 --force --json >"$T/out.json" 2>"$T/err" || fail "reconf --force with a failing release: $(cat "$T/err")"
grep -q "device class's release failed" "$T/out.json" ||
        fail "the reply does not say the class's release failed: $(cat "$T/out.json")"
expect_eq "$(sys_numvfs $PF)" 1 "sriov_numvfs after reconf --force with a failing release"
check_vfs "after reconf --force"
echo "PASS: test-libvirt-class"
