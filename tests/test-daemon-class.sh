#!/bin/sh
# The NVMe device class in svffd's executors, on pcisim's NVMe PF with
# the stand-in for its admin queue (SVFF_TEST_NVME_STANDIN, see
# daemon-lib.sh: a model of QEMU's emulated controller, 4 VFs, 2 VQ and
# 1 VI per VF at most; no real controller runs here, the VM tier's
# 08-nvme-class runs QEMU's):
#   - a policy's class settings are checked when the config is read;
#   - init refuses a plan the PF cannot provide before numvfs is touched,
#     with the class's figure;
#   - init provisions every VF before binding it, and list (--json and
#     the table) shows each VF's class state; status shows no drift;
#   - an init of the same count leaves every VF that is as recorded alone
#     (no command to a controller a guest may be using);
#   - release undoes it and drops the record;
#   - a crash between two VFs' class steps is an interrupted init that the
#     next init completes; a VF whose provisioning fails stops the init
#     before anything is bound;
#   - without the stand-in pcisim's NVMe PF, whose controller has no
#     device number (not the host's), is a bare PCI function.
. "$(dirname "$0")/daemon-lib.sh"
# every message about a device carries its journal fields (log_fields_check)
SVFF_LOG_FIELDS=1; export SVFF_LOG_FIELDS

PF=0000:00:04.0
# The stand-in's model, as the device would answer it (daemon/classes.c).
SVFF_TEST_NVME_STANDIN_DUMP="$T/standin"
mkdir -p "$SVFF_TEST_NVME_STANDIN_DUMP"
export SVFF_TEST_NVME_STANDIN_DUMP
start_pcisim nvme

policy() {
        printf '{ "policies": { "disks": { "match": { "address": "%s" }, "nvme": %s } } }\n' "$PF" "$1" \
                >"$T/svff.conf"
}

# ---- the config: the class checks its member when the file is read ----
policy '{ "vq": 2, "bogus": 1 }'
rc=0
ctl config check "$T/svff.conf" >"$T/check.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "config check accepted an unknown NVMe setting"
grep -q "bogus" "$T/check.out" || fail "config check does not name the unknown setting: $(cat "$T/check.out")"
policy '5'
ctl config check "$T/svff.conf" >"$T/check.out" 2>&1 && fail "config check accepted 'nvme': 5"
grep -q "policies.disks.nvme" "$T/check.out" || fail "config check does not name the key: $(cat "$T/check.out")"

# ---- refused before numvfs: 4 VFs x 3 VQ, the most one VF takes is 2 ----
policy '{ "vq": 3, "vi": 1 }'
ctl config check "$T/svff.conf" >/dev/null || fail "config check refused a well-formed NVMe member"
start_svffd
rc=0
ctl init "$PF" 4 >"$T/init.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "init of 4 VFs needing 3 VQ each succeeded: $(cat "$T/init.out")"
grep -q "VQ" "$T/init.out" || fail "the refusal does not give the class's figure: $(cat "$T/init.out")"
grep -q "nothing was changed" "$T/init.out" || fail "the refusal does not say nothing changed: $(cat "$T/init.out")"
expect_eq "$(sys_numvfs "$PF")" 0 "sriov_numvfs after the refused init"
# Its dry run says so before: the class's plan refuses, the plan is not
# executable (exit 1), and nothing was touched.
rc=0
ctl init "$PF" 4 --dry-run >"$T/init-dry.out" 2>&1 || rc=$?
expect_eq "$rc" 1 "init --dry-run of a count the class refuses"
grep -q "VQ" "$T/init-dry.out" || fail "the dry run does not give the class's figure: $(cat "$T/init-dry.out")"
grep -q "this init would be refused; see the plan" "$T/init-dry.out" ||
        fail "the dry run does not say the init would be refused: $(cat "$T/init-dry.out")"
expect_eq "$(sys_numvfs "$PF")" 0 "sriov_numvfs after the dry run"
stop_svffd || fail "svffd did not stop cleanly"

# ---- init: every VF provisioned, then bound ----
policy '{ "vq": 2, "vi": 1, "namespace": [1, 2, 3, 4] }'
start_svffd
# The dry run first: the plan's steps are the init's (the write, each
# VF's provision, the bind), the class's plan with them; nothing changes.
store_before=$(cat "$STATE/store.json" 2>/dev/null)
ctl init "$PF" 4 --dry-run --json >"$T/init-dry.json" 2>"$T/init-dry.err" ||
        fail "init --dry-run: $(cat "$T/init-dry.err")"
expect_eq "$(jget '" ".join(s["action"] for s in d["plan"]["steps"])' <"$T/init-dry.json")" \
        "numvfs provision provision provision provision bind commit" "the init's planned steps"
expect_eq "$(jget '(d["executable"], d["plan"]["init"], d["plan"]["from"], d["plan"]["to"], d["class_plan"]["class"])' \
        <"$T/init-dry.json")" "(True, True, 0, 4, 'nvme')" "the init's dry run"
expect_eq "$(sys_numvfs "$PF")" 0 "sriov_numvfs after the init's dry run"
expect_eq "$(cat "$STATE/store.json" 2>/dev/null)" "$store_before" "the store after the init's dry run"
ctl init "$PF" 4 --dry-run >"$T/init-dry.txt" 2>&1 || fail "init --dry-run: $(cat "$T/init-dry.txt")"
grep -q "^Init PF $PF: 0 -> 4 VFs, VFs bound to vfio-pci\.$" "$T/init-dry.txt" ||
        fail "the human dry run's heading: $(cat "$T/init-dry.txt")"
grep -q "^   1\. \[numvfs\] write sriov_numvfs = 4 (deadline [0-9]* s)$" "$T/init-dry.txt" ||
        fail "the human dry run's write: $(cat "$T/init-dry.txt")"
ctl init "$PF" 4 --json >"$T/init.json" 2>"$T/init.out" || fail "init $PF 4: $(cat "$T/init.out")"
expect_eq "$(sys_numvfs "$PF")" 4 "sriov_numvfs after init"
# What the init did is the plan its dry run printed, deadlines included.
same_plan() {
        python3 -c 'import json, sys
done = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1].get("plan")
dry = json.load(open(sys.argv[2]))["plan"]
if done != dry:
    sys.exit("carried out %s, planned %s" % (done, dry))' "$1" "$2"
}
same_plan "$T/init.json" "$T/init-dry.json" || fail "the init's plan is not its dry run's"
ctl list --json >"$T/list.json" || fail "list --json"
for i in 0 1 2 3; do
        vf=$(sys_vf "$PF" $i)
        expect_eq "$(sys_driver "$vf")" vfio-pci "VF $i driver"
        c="[v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == $i][0]['class']"
        expect_eq "$(jget "$c['name']" <"$T/list.json")" nvme "VF $i class"
        expect_eq "$(jget "$c['state']['secondary']" <"$T/list.json")" online "VF $i secondary"
        expect_eq "$(jget "'%d/%d' % ($c['state']['vq'], $c['state']['vi'])" <"$T/list.json")" 2/1 "VF $i VQ/VI"
        expect_eq "$(jget "$c['state']['namespaces']" <"$T/list.json")" "[$((i + 1))]" "VF $i namespaces"
        expect_eq "$(jget "$c['settings']['vq']" <"$T/list.json")" 2 "VF $i recorded settings"
        python3 -c "import json,sys; s=json.load(open(sys.argv[1])); r=s['vfs'][sys.argv[2]]['class'];
assert r['name'] == 'nvme' and r['state']['secondary'] == 'online', r" "$STATE/store.json" "$vf" ||
                fail "the store does not record VF $i's class state"
done
ctl list >"$T/list.txt" || fail "list"
head -n1 "$T/list.txt" | grep -qw CLASS || fail "no CLASS column: $(head -n1 "$T/list.txt")"
grep "^$(sys_vf "$PF" 0) " "$T/list.txt" | grep -q " online ns 1$" ||
        fail "VF 0's row does not show its class state: $(cat "$T/list.txt")"
ctl_status --json >"$T/status.json" || fail "status --json"
expect_eq "$(jget "len([x for x in d['drift'] if x['kind'] == 'class-drift'])" <"$T/status.json")" 0 \
        "class drift after init"

# ---- the same count again: every VF as recorded, left alone ----
# The plan says so: no write, each VF's class state checked, the bind.
ctl init "$PF" 4 --dry-run --json >"$T/init-dry.json" 2>"$T/init-dry.err" ||
        fail "init --dry-run of the same count: $(cat "$T/init-dry.err")"
expect_eq "$(jget '" ".join(s["action"] for s in d["plan"]["steps"])' <"$T/init-dry.json")" \
        "provision provision provision provision bind commit" "the planned steps of an init of the same count"
# The bind's deadline is svffd's for 4 VFs; the class steps have none.
expect_eq "$(jget '[s["action"] for s in d["plan"]["steps"] if s.get("deadline_msec", 0) > 0]' \
        <"$T/init-dry.json")" "['bind']" "the steps of the init's dry run with a deadline"
lines=$(wc -l <"$T/svffd.log")
ctl init "$PF" 4 --json >"$T/init2.json" 2>"$T/init2.out" || fail "init $PF 4 again: $(cat "$T/init2.out")"
same_plan "$T/init2.json" "$T/init-dry.json" || fail "the re-init's plan is not its dry run's"
expect_eq "$(tail -n +"$((lines + 1))" "$T/svffd.log" | grep -c "nvme class already as recorded, left alone")" 4 \
        "VFs left alone by a re-init of the same count"
expect_eq "$(tail -n +"$((lines + 1))" "$T/svffd.log" | grep -c "nvme class provisioned and verified")" 0 \
        "VFs provisioned again by a re-init of the same count"

# ---- release: the class's release, then the record goes ----
vf0=$(sys_vf "$PF" 0)
# Its dry run plans that order, and leaves the device and the store alone.
cp "$STATE/store.json" "$T/store.before"
ctl release "$vf0" --dry-run --json >"$T/release-dry.json" 2>&1 ||
        fail "release --dry-run $vf0: $(cat "$T/release-dry.json")"
expect_eq "$(jget '" ".join(s["action"] for s in d["plan"]["steps"]) + " " + str(d["plan"]["release"]["class_state"])' \
        <"$T/release-dry.json")" "commit release_class reprobe True" "the planned steps of VF 0's release"
cmp -s "$STATE/store.json" "$T/store.before" || fail "release --dry-run changed the store"
expect_eq "$(awk '$1 == "sc" && $2 == 1 { print $3 }' "$SVFF_TEST_NVME_STANDIN_DUMP/$PF")" "online" \
        "VF 0's secondary controller after the release's dry run"
ctl release "$vf0" >"$T/release.out" 2>&1 || fail "release $vf0: $(cat "$T/release.out")"
grep -q "\"$vf0\"" "$STATE/store.json" && fail "VF 0's record survived its release"
expect_eq "$(awk '$1 == "sc" && $2 == 1 { print $3 " " $4 " " $5 }' "$SVFF_TEST_NVME_STANDIN_DUMP/$PF")" "offline 0 0" \
        "VF 0's secondary controller on the device after its release"
ctl_status --json >"$T/status.json" || fail "status --json after release"
expect_eq "$(jget "len([x for x in d['drift'] if x['kind'] == 'class-drift'])" <"$T/status.json")" 0 \
        "class drift after release"
stop_svffd || fail "svffd did not stop cleanly"

# ---- a crash between two VFs' class steps, then init again ----
export SVFF_FAULT=after-provision-2
start_svffd
unset SVFF_FAULT
ctl init "$PF" 2 >"$T/init.out" 2>&1 && fail "init survived the crash at after-provision-2"
wait "$SVFFD_PID" 2>/dev/null || true
SVFFD_PID=""
varlink_check stop || fail "svffd's replies break its interface"
grep -q "fault point 'after-provision' (2)" "$T/svffd.log" || fail "svffd did not die at after-provision-2"
expect_eq "$(sys_numvfs "$PF")" 2 "sriov_numvfs after the crash"
start_svffd
ctl_status --json >"$T/status.json" || fail "status --json after the crash"
expect_eq "$(jget "len([x for x in d['drift'] if x['kind'] == 'interrupted' and x['device'] == '$PF'])" \
        <"$T/status.json")" 1 "the interrupted init in status"
ctl init "$PF" 2 >"$T/init.out" 2>&1 || fail "init after the crash: $(cat "$T/init.out")"
ctl list --json >"$T/list.json" || fail "list --json"
expect_eq "$(jget "[v['class']['state']['secondary'] for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs']]" \
        <"$T/list.json")" "['online', 'online']" "class state of both VFs after the crash and a new init"
stop_svffd || fail "svffd did not stop cleanly"

# ---- a VF that cannot be provisioned: nothing is bound, the rest is told ----
export SVFF_FAULT=fail-provision-2
start_svffd
unset SVFF_FAULT
rc=0
ctl init "$PF" 4 >"$T/init.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "init succeeded with VF 1's provisioning failing"
grep -q "$(sys_vf "$PF" 1)" "$T/init.out" || fail "the failure does not name VF 1: $(cat "$T/init.out")"
grep -q "none was bound" "$T/init.out" || fail "the failure does not say nothing was bound: $(cat "$T/init.out")"
for i in 0 1 2 3; do
        [ "$(sys_driver "$(sys_vf "$PF" $i)")" != vfio-pci ] || fail "VF $i was bound to vfio-pci after the failure"
done
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); v=s['vfs']
assert v[sys.argv[2]].get('class'), 'VF 0 provisioned, not recorded'
assert not v[sys.argv[3]].get('class'), 'VF 1 recorded as provisioned'" \
        "$STATE/store.json" "$(sys_vf "$PF" 0)" "$(sys_vf "$PF" 1)" || fail "the records after the failure"
stop_svffd || fail "svffd did not stop cleanly"
start_svffd
ctl init "$PF" 4 >"$T/init.out" 2>&1 || fail "init after the failure: $(cat "$T/init.out")"
expect_eq "$(sys_driver "$(sys_vf "$PF" 3)")" vfio-pci "VF 3 after the second init"
stop_svffd || fail "svffd did not stop cleanly"

# ---- without the stand-in: pcisim's PF is not the host's ----
# Its controller has no device number in sysfs, so no /dev/nvmeN of
# this host is its admin queue: it is a bare PCI function (as a
# simulated NIC is), and no admin command is sent in its name. (Open's
# refusals, a /dev/nvmeN that is not the PF's among them, are
# test-class-nvme's.)
unset SVFF_TEST_NVME_STANDIN
start_svffd
lines=$(wc -l <"$T/svffd.log")
ctl init "$PF" 0 >"$T/init.out" 2>&1 || fail "init $PF 0 without the stand-in: $(cat "$T/init.out")"
ctl init "$PF" 2 >"$T/init.out" 2>&1 || fail "init $PF 2 without the stand-in: $(cat "$T/init.out")"
expect_eq "$(sys_numvfs "$PF")" 2 "sriov_numvfs after init without the stand-in"
expect_eq "$(ctl list --json | jget "[v['class'] for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs']]")" \
        "[None, None]" "the VFs' class without the stand-in"
tail -n +"$((lines + 1))" "$T/svffd.log" | grep -q "/dev/nvme\|nvme class" &&
        fail "svffd went to an NVMe admin queue for pcisim's PF: $(tail -n +"$((lines + 1))" "$T/svffd.log")"

# ---- an init's dry run plans from the PF as it is now ----
# Another process took the count to 0 since svffd last looked: the plan
# writes it again, and has no provision for a bare PCI function. A dry
# run, as list, may answer from a snapshot up to list_max_age_msec old
# (1 s): the one it has is made older than that first.
echo 0 >"$SYS/bus/pci/devices/$PF/sriov_numvfs" || fail "writing sriov_numvfs by hand"
sleep 1.5
ctl init "$PF" 2 --dry-run --json >"$T/init-dry.json" 2>"$T/init-dry.err" ||
        fail "init --dry-run after a count changed by hand: $(cat "$T/init-dry.err")"
expect_eq "$(jget '(d["plan"]["from"], " ".join(s["action"] for s in d["plan"]["steps"]))' <"$T/init-dry.json")" \
        "(0, 'numvfs bind commit')" "the init's plan after the count went to 0 by hand"
log_fields_check
echo "PASS: test-daemon-class"
