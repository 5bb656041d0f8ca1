#!/bin/sh
# The dry runs of attach, detach, pause and unpause, with libvirt's QEMU
# driver: each prints the plan of its change after the change's own
# refusals and checks, and changes nothing. Read after each: the store
# (byte for byte), the VF's driver on pcisim, and the assignment.
#   - attach: the domain's checks run (a domain that is not running for
#     --live, one that does not exist); a VF svff keeps on vfio-pci but
#     found off it is planned to be bound, and is not bound;
#   - detach: the domain step, then the class's hand-back to the pool;
#   - pause: no mode (the domain's QEMU says when it runs);
#   - unpause: the re-attach of a detach pause, the class state again;
#   - detach --release --dry-run is a usage error; a dry_run that is no
#     bool is InvalidParameter.
. "$(dirname "$0")/libvirt-embed-lib.sh"

define vm1
PF=0000:01:00.0
start_pcisim qdma
svff_conf
start_connected
ctl init $PF 2 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0)
asg="d['pfs'][0]['vfs'][0]['assigned_to']"

# steps FILE: "phase/action ..." of the plan in a --json dry run.
steps() { jget '" ".join(s["phase"] + "/" + s["action"] for s in d["plan"]["steps"])' < "$1"; }
# unchanged WHAT: the store as it was before the dry run.
unchanged() { cmp -s "$STATE/store.json" "$T/store.before" || fail "$1 changed the store"; }

# ---- attach ----
cp "$STATE/store.json" "$T/store.before"
ctl attach "$VF0" vm1 --guest-address 05:00.0 --dry-run --json > "$T/dry.json" ||
        fail "attach --dry-run: $(cat "$T/dry.json")"
expect_eq "$(steps "$T/dry.json")" "commit/journal provision/provision domain/attach commit/commit" \
        "attach --dry-run steps"
expect_eq "$(jget 'd["dry_run"], d["executable"], d["plan"]["change"], d["assignment"]["domain"],
                   d["assignment"]["live"], d["assignment"]["config"], d["assignment"]["guest_address"]' \
        < "$T/dry.json")" \
        "True True {'kind': 'attach', 'bind': False, 'class_state': True} vm1 False True 0000:05:00.0" \
        "attach --dry-run: the assignment as it would be recorded"
unchanged "attach --dry-run"
expect_eq "$(ctl list --json | jget "$asg")" None "VF0's assignment after attach --dry-run"
ctl attach "$VF0" vm1 --dry-run > "$T/out" || fail "attach --dry-run: $(cat "$T/out")"
grep -q "^Attach VF $VF0 (VF 0 of PF $PF) to domain 'vm1' (" "$T/out" &&
grep -q "4. \[commit\] record the assignment as it is now$" "$T/out" || fail "the printed plan: $(cat "$T/out")"

# The domain's checks run, as the attach's own.
rc=0
ctl attach "$VF0" vm1 --live --dry-run > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "attach --live --dry-run to a domain that is not running"
grep -q "Domain 'vm1' is not running: a live attach needs a running domain" "$T/err" ||
        fail "attach --live --dry-run: $(cat "$T/err")"
rc=0
ctl attach "$VF0" nosuchvm --dry-run > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "attach --dry-run to a domain that does not exist"
grep -q "nosuchvm" "$T/err" || fail "attach --dry-run to nosuchvm: $(cat "$T/err")"

# Off vfio-pci, where svff keeps it: the plan binds it; the dry run not.
printf '%s' "$VF0" > "$SYS/bus/pci/drivers/vfio-pci/unbind"
expect_eq "$(sys_driver "$VF0")" None "VF0's driver after the unbind by hand"
ctl attach "$VF0" vm1 --dry-run --json > "$T/dry.json" || fail "attach --dry-run, unbound: $(cat "$T/dry.json")"
expect_eq "$(steps "$T/dry.json")" "bind/bind commit/journal provision/provision domain/attach commit/commit" \
        "attach --dry-run steps of an unbound VF"
expect_eq "$(sys_driver "$VF0")" None "VF0's driver after attach --dry-run"
unchanged "attach --dry-run of an unbound VF"
# On a host driver: the IOMMU group is judged with the VF on vfio-pci,
# where the attach would bind it first.
printf qdma-vf > "$SYS/bus/pci/devices/$VF0/driver_override"
printf '%s' "$VF0" > "$SYS/bus/pci/drivers/qdma-vf/bind"
expect_eq "$(sys_driver "$VF0")" qdma-vf "VF0's driver after the bind by hand"
ctl attach "$VF0" vm1 --dry-run --json > "$T/dry.json" 2>&1 || fail "attach --dry-run, on qdma-vf: $(cat "$T/dry.json")"
expect_eq "$(steps "$T/dry.json")" "bind/bind commit/journal provision/provision domain/attach commit/commit" \
        "attach --dry-run steps of a VF on a host driver"
expect_eq "$(sys_driver "$VF0")" qdma-vf "VF0's driver after attach --dry-run"
unchanged "attach --dry-run of a VF on a host driver"
grep -q "attach of VF $VF0 failed" "$T/svffd.log" && fail "a dry run's refusal was logged as a failed attach"

ctl attach "$VF0" vm1 --guest-address 05:00.0 > "$T/out" || fail "attach: $(cat "$T/out")"
expect_eq "$(sys_driver "$VF0")" vfio-pci "VF0's driver after the attach"
check_vfs "attach"

# ---- detach, pause ----
cp "$STATE/store.json" "$T/store.before"
ctl detach "$VF0" --dry-run --json > "$T/dry.json" || fail "detach --dry-run: $(cat "$T/dry.json")"
expect_eq "$(steps "$T/dry.json")" \
        "commit/journal domain/detach release/release_class provision/provision commit/commit" \
        "detach --dry-run steps"
expect_eq "$(jget 'd["domain"], d["plan"]["assignments"][0]["fate"]' < "$T/dry.json")" "vm1 released" \
        "detach --dry-run: the domain it would leave"
# Each step's deadline under svffd's settings: the detach's is
# detach_timeout_sec (5 here); the class steps have none of their own.
expect_eq "$(jget '[s.get("deadline_msec") for s in d["plan"]["steps"]]' < "$T/dry.json")" \
        "[None, 5000, None, None, None]" "detach --dry-run: the steps' deadlines"
ctl detach "$VF0" --dry-run > "$T/out" || fail "detach --dry-run: $(cat "$T/out")"
grep -q "2. \[domain\] detach VF $VF0 from domain 'vm1' and wait for the guest to let it go (deadline 5 s)$" \
        "$T/out" || fail "the printed detach plan: $(cat "$T/out")"
ctl pause "$VF0" --dry-run --json > "$T/dry.json" || fail "pause --dry-run: $(cat "$T/dry.json")"
expect_eq "$(steps "$T/dry.json")" "commit/journal domain/pause commit/commit" "pause --dry-run steps"
# A pause may try QMP's native pause (10 s) before its detach (5 s).
expect_eq "$(jget 'd["plan"]["steps"][1]["deadline_msec"]' < "$T/dry.json")" 15000 "pause --dry-run: its deadline"
expect_eq "$(jget '"mode" in d, d["assignment"]["state"]' < "$T/dry.json")" "False attached" \
        "pause --dry-run: no mode yet"
rc=0
ctl unpause "$VF0" --dry-run > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "unpause --dry-run of an attached VF"
grep -q "VF $VF0 is attached, not held: there is nothing to unpause" "$T/err" ||
        fail "unpause --dry-run refusal: $(cat "$T/err")"
unchanged "detach, pause and unpause --dry-run"
expect_eq "$(ctl list --json | jget "$asg['state']")" attached "VF0's state after the dry runs"

# ---- unpause ----
ctl pause "$VF0" > "$T/out" || fail "pause: $(cat "$T/out")"
cp "$STATE/store.json" "$T/store.before"
ctl unpause "$VF0" --dry-run --json > "$T/dry.json" || fail "unpause --dry-run: $(cat "$T/dry.json")"
expect_eq "$(steps "$T/dry.json")" "commit/journal provision/provision domain/reattach commit/commit" \
        "unpause --dry-run steps"
expect_eq "$(jget 'd["mode"]' < "$T/dry.json")" detach "unpause --dry-run: the pause it ends"
ctl unpause "$VF0" --dry-run > "$T/out" || fail "unpause --dry-run: $(cat "$T/out")"
grep -q "paused by a detach with its address reserved" "$T/out" &&
grep -q "\[domain\] re-attach VF 0 ($VF0) in domain 'vm1' at guest address 05:00.0" "$T/out" ||
        fail "the printed unpause plan: $(cat "$T/out")"
unchanged "unpause --dry-run"
expect_eq "$(ctl list --json | jget "$asg['state']")" held "VF0's state after unpause --dry-run"
# Its detach only drops the reservation: nothing to wait for.
ctl detach "$VF0" --dry-run --json > "$T/dry.json" || fail "detach --dry-run of a paused VF: $(cat "$T/dry.json")"
expect_eq "$(jget '[s.get("deadline_msec") for s in d["plan"]["steps"]]' < "$T/dry.json")" \
        "[None, None, None, None, None]" "detach --dry-run of a paused VF: the steps' deadlines"
ctl detach "$VF0" --dry-run > "$T/out" || fail "detach --dry-run of a paused VF: $(cat "$T/out")"
grep -q "2. \[domain\] drop VF $VF0's reserved guest address in domain 'vm1' (it is out of the domain already)$" \
        "$T/out" || fail "the printed detach plan of a paused VF: $(cat "$T/out")"
unchanged "detach --dry-run of a paused VF"
check_vfs "unpause --dry-run"

# ---- what is no dry run ----
rc=0
ctl detach "$VF0" --release --dry-run > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 2 "detach --release --dry-run"
rc=0
varlink_call io.svff.Detach "{\"vf\": \"$VF0\", \"dry_run\": \"yes\"}" > "$T/out" || rc=$?
grep -q '"org.varlink.service.InvalidParameter"' "$T/out" || fail "dry_run that is no bool: $(cat "$T/out")"
unchanged "the refused calls"
stop_svffd || fail "svffd exit status"
echo "PASS"
