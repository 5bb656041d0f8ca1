#!/bin/sh
# svffctl reprogram on pcisim's QDMA PF with CONFIG assignments on defined
# domains (libvirt as the reconf tests run it): a hook that swaps the
# PF's identity through pcisim's control channel (new device id, new
# sriov_totalvfs) with every assignment kept, --force releasing one, the
# image checks, a failing hook, a hook past its deadline, an identity the
# policy does not allow (each leaves the PF "reprogram interrupted" with
# its assignments paused, and reprogram or reconf takes it up again; a
# reprogram of it is refused while another process writes its count), and
# svffd killed at every step, the hook included.
#
# The hook is reconf-lib.sh's stand-in for a vendor's flash tool: it
# reads what the image asks of it and tells pcisim what the device comes
# back as.
. "$(dirname "$0")/reconf-lib.sh"
# every message about a device carries its journal fields (log_fields_check)
SVFF_LOG_FIELDS=1; export SVFF_LOG_FIELDS

DOMAINS="vm1 vm2 vm3"
define $DOMAINS
start_pcisim qdma
PF=0000:01:00.0
flash_hook_standin
# good: back as 10ee:913f with 8 VFs; bad: as 10ee:9fff (not allowed);
# fail: exit 1; slow: past the deadline; kill: svffd dies while it runs.
echo "913f 8" > "$IMAGES/good.bit"
echo "9fff 8" > "$IMAGES/bad.bit"
echo "fail" > "$IMAGES/fail.bit"
echo "latin1" > "$IMAGES/latin1.bit"
echo "slow" > "$IMAGES/slow.bit"
echo "kill" > "$IMAGES/kill.bit"
ln -s "$IMAGES/good.bit" "$IMAGES/link.bit"
echo "913f 8" > "$T/outside.bit"
svff_conf ", \"flash_hook\": \"$T/hook\", \"flash_image_dir\": \"$IMAGES\", \"flash_timeout_sec\": 3,
 \"policies\": { \"fpga\": { \"match\": { \"address\": \"$PF\" }, \"reprogram_ids\": [\"10ee:913f\"],
 \"qdma\": { \"qmax\": 256 } } }"
start_connected

# reached POINT WHAT: svffd's log says it reached fault point POINT
# ("after-detach-1" is point "after-detach", occurrence 1).
reached() { grep -qE "fault point '($1|${1%-[0-9]*})' \([0-9]*\) reached, $2" "$T/svffd.log"; }
# settled: no reprogram journaled but an interrupted one.
settled() { p=$(phase); [ "$p" = None ] || [ "$p" = interrupted ]; }
sys_id() { cat "$SYS/bus/pci/devices/$1/device"; }
phase() { store_py 'j = d.get("journal") or {}; e = (j.get("pfs") or {}).get("'$PF'"); print(e["phase"] if e else None)'; }
states() { store_py 'print(" ".join(sorted(a["state"] for a in d["assignments"].values())))'; }

ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF3=$(sys_vf $PF 3)
ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach VF0"
ctl attach "$VF1" vm2 --guest-address 06:00.0 >/dev/null || fail "attach VF1"
ctl attach "$VF3" vm3 --guest-address 07:00.0 >/dev/null || fail "attach VF3"
before=$(assignments_snapshot)

# good_state: the PF reprogrammed to 913f with 4 VFs on vfio-pci and
# every assignment as before, its policy's qmax, no journal.
good_state() {
        expect_eq "$(sys_id $PF)" 0x913f "PF device id ($1)"
        expect_eq "$(sys_numvfs $PF)" 4 "numvfs ($1)"
        expect_eq "$(sys_driver $PF)" qdma-pf "PF driver ($1)"
        # pcisim's rescanned PF starts at its scenario's 512 queues: the
        # policy's qmax is set again before the VFs.
        expect_eq "$(cat "$SYS/bus/pci/devices/$PF/qdma/qmax")" 256 "PF qmax ($1)"
        check_vfio $PF
        expect_eq "$(assignments_snapshot)" "$before" "assignments ($1)"
        expect_eq "$(journal)" None "journal ($1)"
}

note "dry run: the plan and the identities allowed, nothing touched"
gen() { ctl status --json | jget 'd["store"]["generation"]'; }
g=$(gen)
ctl reprogram $PF "$IMAGES/good.bit" --dry-run --json > "$T/plan.json" || fail "dry run: $(cat "$T/plan.json")"
expect_eq "$(jget 'd["executable"]' < "$T/plan.json")" True "dry run executable"
expect_eq "$(jget '" ".join(d["ids"])' < "$T/plan.json")" "10ee:903f 10ee:913f" "identities allowed"
ctl reprogram $PF "$IMAGES/good.bit" --dry-run > "$T/plan.txt" || fail "human dry run"
# The plan names every step the run takes: the PF's, off the bus,
# between the two writes; the class's provision of each new VF.
expect_eq "$(jget '" ".join(s["action"] for s in d["plan"]["steps"])' < "$T/plan.json")" \
        "pause pause pause numvfs remove_pf flash rescan check_identity bind_pf numvfs provision provision provision provision bind unpause unpause unpause commit" \
        "the dry run's steps"
grep -q "^   6\. \[reprogram\] run the flash hook on '$IMAGES/good.bit' (deadline [0-9]* s)$" "$T/plan.txt" ||
        fail "human dry run, the flash: $(cat "$T/plan.txt")"
grep -q "\[reprogram\] check the PF is one of 10ee:903f 10ee:913f with at least 4 VFs$" "$T/plan.txt" ||
        fail "human dry run, the identity: $(cat "$T/plan.txt")"
expect_eq "$(gen)" "$g" "store generation after the dry run"
[ -e "$T/hook.log" ] && fail "the dry run ran the hook"

note "image paths: outside the directory, a symbolic link, missing: refused before anything"
for img in "$T/outside.bit" "$IMAGES/link.bit" "$IMAGES/none.bit" "$IMAGES/../outside.bit"; do
        rc=0; ctl reprogram $PF "$img" 2> "$T/err" || rc=$?
        expect_eq "$rc" 1 "reprogram with $img"
        grep -q "$img" "$T/err" || fail "refusal of $img: $(cat "$T/err")"
done
rc=0; ctl reprogram $PF relative.bit 2> "$T/err" || rc=$?
expect_eq "$rc" 2 "a relative image path"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after the refusals"
expect_eq "$(gen)" "$g" "store generation after the refusals"
[ -e "$T/hook.log" ] && fail "a refused image reached the hook"

note "a hook another user owns: refused by path and owner, in the dry run too, before anything"
chown 65534 "$T/hook" || fail "chown of the hook"
for dry in --dry-run ""; do
        rc=0; ctl reprogram $PF "$IMAGES/good.bit" $dry 2> "$T/err" || rc=$?
        expect_eq "$rc" 1 "reprogram $dry with a hook owned by uid 65534"
        grep -q "'$T/hook' is owned by uid 65534, not root" "$T/err" || fail "refusal $dry: $(cat "$T/err")"
done
chown 0 "$T/hook" || fail "chown of the hook back"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after the hook's refusals"
expect_eq "$(gen)" "$g" "store generation after the hook's refusals"
[ -e "$T/hook.log" ] && fail "a hook another user owns ran"

note "fewer VFs than assigned: refused without --force"
rc=0; ctl reprogram $PF "$IMAGES/good.bit" --numvfs 2 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reprogram to 2 without --force"
grep -q "would lose VF 3 ($VF3) of domain 'vm3'" "$T/err" || fail "refusal: $(cat "$T/err")"

note "reprogram: removed with numvfs 0, flashed off the bus, back as 10ee:913f, every assignment kept"
# A device an operator removed on another bus stays removed: the rescan
# is the PF's own bus's (class/pci_bus/0000:01/rescan), not the whole bus.
OTHER=0000:00:00.0
echo 1 > "$SYS/bus/pci/devices/$OTHER/remove" || fail "removing $OTHER by hand"
ctl reprogram $PF "$IMAGES/good.bit" --json > "$T/out.json" || fail "reprogram: $(cat "$T/out.json")"
[ -e "$SYS/bus/pci/devices/$OTHER" ] && fail "the reprogram's rescan brought back $OTHER, removed by hand on bus 00"
echo 1 > "$SYS/bus/pci/rescan" || fail "rescan"
[ -e "$SYS/bus/pci/devices/$OTHER" ] || fail "$OTHER did not come back with a rescan of every bus"
tail -n 1 "$T/out.json" > "$T/result.json"
good_state "reprogram"
expect_eq "$(wc -l < "$T/hook.log")" 1 "hook runs"
grep -q "^hook $PF $IMAGES/good.bit [0-9]* removed$" "$T/hook.log" || fail "hook arguments: $(cat "$T/hook.log")"
expect_eq "$(jget '" ".join(s["action"] for s in d["steps"] if s["phase"] == "reprogram")' < "$T/result.json")" \
        "remove_pf flash rescan check_identity bind_pf" "reprogram steps"
expect_eq "$(jget '[s["numvfs"] for s in d["steps"] if s["action"] == "numvfs"]' < "$T/result.json")" "[0, 4]" \
        "numvfs writes"
grep -q "Flash hook for PF $PF: writing $IMAGES/good.bit" "$T/svffd.log" || fail "hook output not logged"
expect_eq "$(cat "$SYS/bus/pci/devices/$PF/sriov_totalvfs")" 8 "new sriov_totalvfs"

# interrupted WHAT: the PF "reprogram interrupted", assignments paused
# with their records, the drift (that one entry) and the journal say so.
interrupted() {
        expect_eq "$(phase)" interrupted "journal phase after $1"
        expect_eq "$(states)" "held held held" "assignment states after $1"
        expect_eq "$(store_py 'print(sorted(d["assignments"]))')" "['$VF0', '$VF1', '$VF3']" "records after $1"
        ctl_status --json > "$T/status.json" || fail "status after $1"
        jget '[x["message"] for x in d["drift"] if x["kind"] == "interrupted"][0]' < "$T/status.json" |
                grep -q "reprogram interrupted" || fail "no interrupted drift after $1: $(cat "$T/status.json")"
        # That one drift says it all: not also the PF missing, nor each
        # assignment without its VF, each with another next step.
        expect_eq "$(jget '[x["kind"] for x in d["drift"]]' < "$T/status.json")" "['interrupted']" \
                "the drift after $1"
}

note "a failing hook: reprogram interrupted, then reprogram again"
rc=0; ctl reprogram $PF "$IMAGES/fail.bit" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reprogram with a failing hook"
grep -q "reprogram interrupted: the flash hook failed" "$T/err" || fail "failing hook: $(cat "$T/err")"
grep -q "bad bitstream" "$T/err" || fail "the hook's last line is not in the message: $(cat "$T/err")"
interrupted "a failing hook"
[ -e "$SYS/bus/pci/devices/$PF" ] && fail "PF back on the bus after a failed flash"
ctl reprogram $PF "$IMAGES/good.bit" >/dev/null 2> "$T/err" || fail "reprogram after the failure: $(cat "$T/err")"
good_state "reprogram after a failing hook"

note "a hook whose last line is not UTF-8: the store stays readable, svffd starts again, the terminal sees escapes"
rc=0; ctl reprogram $PF "$IMAGES/latin1.bit" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reprogram with a hook printing Latin-1"
# U+FFFD for each bad byte (svffd), ESC and U+202E escaped (svffctl)
fffd=$(printf '\357\277\275')
grep -qF "flash failed: caf$fffd \\x1b[2J\\u202e $fffd" "$T/err" || fail "the hook's last line: $(cat -v "$T/err")"
grep -q "$(printf '\033')" "$T/err" && fail "svffctl printed a raw ESC: $(cat -v "$T/err")"
interrupted "a hook printing Latin-1"
expect_eq "$(store_py 'print(d["journal"]["pfs"]["'$PF'"]["reprogram"]["reason"].count("\ufffd"))')" 2 \
        "U+FFFD in the journal's reason"
stop_svffd || fail "svffd exit status"
start_connected
interrupted "a restart after a hook printing Latin-1"
ctl status --json | jget '[x["message"] for x in d["drift"] if x["kind"] == "interrupted"][0]' |
        grep -qF "flash failed: caf$fffd" || fail "status after the restart: $(ctl status --json)"
ctl_status > "$T/status.txt" || fail "human status"
grep -qF "caf$fffd \\x1b[2J\\u202e $fffd" "$T/status.txt" || fail "human status: $(cat -v "$T/status.txt")"
grep -q "$(printf '\033')" "$T/status.txt" && fail "status printed a raw ESC: $(cat -v "$T/status.txt")"
ctl reprogram $PF "$IMAGES/good.bit" >/dev/null 2> "$T/err" || fail "reprogram after Latin-1: $(cat "$T/err")"
good_state "reprogram after a hook printing Latin-1"

note "a hook past its deadline: killed, interrupted, then reconf takes the PF as it is"
rc=0; ctl reprogram $PF "$IMAGES/slow.bit" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reprogram with a slow hook"
grep -q "passed its deadline" "$T/err" || fail "slow hook: $(cat "$T/err")"
interrupted "a slow hook"
runs=$(wc -l < "$T/hook.log")
ctl reconf $PF 4 >/dev/null 2> "$T/err" || fail "reconf after the slow hook: $(cat "$T/err")"
good_state "reconf after a slow hook"
expect_eq "$(wc -l < "$T/hook.log")" "$runs" "hook runs by the reconf"

note "an identity the policy does not allow: interrupted, then reprogram again"
rc=0; ctl reprogram $PF "$IMAGES/bad.bit" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reprogram to a disallowed identity"
grep -q "10ee:9fff, not one of the identities" "$T/err" || fail "identity refusal: $(cat "$T/err")"
interrupted "a disallowed identity"
expect_eq "$(sys_id $PF)" 0x9fff "PF identity after the bad image"
note "another process writes the count of the interrupted PF: its reprogram is refused, not left waiting"
echo 1 > "$SYS/bus/pci/devices/$PF/sriov_numvfs"
write_in_kernel $PF
# svffd learns of the write by a read of the count: past
# list_max_age_msec (1 s), a List takes a pass, which meets it.
sleep 1.5
ctl list > /dev/null || fail "list while another process writes the count"
t0=$(date +%s%N)
rc=0; timeout 20 "$SVFFCTL" --socket "$SOCK" reprogram $PF "$IMAGES/good.bit" > "$T/out" 2> "$T/err" || rc=$?
note "the reprogram of the interrupted PF answered in $(ms_since "$t0") ms (exit $rc)"
[ "$rc" != 124 ] || fail "the reprogram of the interrupted PF waited behind the write"
expect_eq "$rc" 1 "reprogram of the interrupted PF while another process writes its count: $(cat "$T/out")"
grep -q "Another process is writing the VF count of PF $PF" "$T/err" || fail "the refusal: $(cat "$T/err")"
kill -0 $writer 2>/dev/null || fail "the write by hand ended before the reprogram: it did not meet it"
release_vf
rc=0; wait $writer || rc=$?
BG_PIDS=""
expect_eq "$rc" 0 "the write by hand"
interrupted "the refused reprogram"
# Refused again (nothing changed) until svffd's read that gave up on the
# write has returned.
wait_for ctl reprogram $PF "$IMAGES/good.bit" ||
        fail "reprogram after the bad identity: $(ctl reprogram $PF "$IMAGES/good.bit" 2>&1)"
good_state "reprogram after a disallowed identity"

note "svffd killed at every step, the hook included"
# after-flash-journal and the hook: the flash is not known to have
# succeeded, so svffd's restart reports it interrupted and the operator
# reprograms again; every other point resumes by itself.
for point in after-journal after-detach-1 after-numvfs-0 after-remove-journal after-remove-pf \
             after-flash-journal hook after-flash after-rescan after-bind-pf after-numvfs-N after-rebind \
             after-reattach-1 before-clear; do
        stop_svffd || true
        img="$IMAGES/good.bit"
        if [ $point = hook ]; then img="$IMAGES/kill.bit"; else SVFF_FAULT=$point; export SVFF_FAULT; fi
        start_connected
        rc=0; ctl reprogram $PF "$img" > "$T/kill.out" 2>&1 || rc=$?
        [ "$rc" = 0 ] && fail "svffd survived $point: $(cat "$T/kill.out")"
        [ $point = hook ] || reached "$point" "killing svffd" ||
                fail "svffd was not killed at $point"
        wait "$SVFFD_PID" 2>/dev/null || true
        SVFFD_PID=""
        varlink_check stop || fail "svffd's replies break its interface"
        unset SVFF_FAULT
        start_connected
        wait_for_s 20 settled || fail "svffd did not settle after $point: journal phase $(phase)"
        case $point in
        after-flash-journal|hook)
                interrupted "a kill at $point"
                ctl status --json | jget '[r["outcome"] for r in d["recovered"] if r["pf"] == "'$PF'"][-1]' |
                        grep -q interrupted || fail "recovered list after $point: $(ctl status --json)"
                ctl reprogram $PF "$IMAGES/good.bit" >/dev/null 2> "$T/err" ||
                        fail "reprogram after a kill at $point: $(cat "$T/err")"
                ;;
        esac
        good_state "a kill at $point"
done

note "svffd stopped (SIGTERM) at every step: it ends at a safe point, the next start goes on"
for point in after-journal after-detach-1 after-numvfs-0 after-remove-journal after-remove-pf \
             after-flash-journal after-flash after-rescan after-bind-pf after-numvfs-N after-rebind \
             after-reattach-1 before-clear; do
        stop_svffd || true
        SVFF_FAULT=$point SVFF_FAULT_ACTION=term; export SVFF_FAULT SVFF_FAULT_ACTION
        start_connected
        ctl reprogram $PF "$IMAGES/good.bit" > "$T/term.out" 2>&1 || true
        rc=0; wait "$SVFFD_PID" || rc=$?
        SVFFD_PID=""
        varlink_check stop || fail "svffd's replies break its interface"
        expect_eq "$rc" 0 "svffd's exit status after a stop at $point"
        reached "$point" "sending SIGTERM" ||
                fail "the stop at $point was never reached"
        unset SVFF_FAULT SVFF_FAULT_ACTION
        start_connected
        wait_for_s 20 settled || fail "svffd did not settle after a stop at $point: journal phase $(phase)"
        # Stopped while the hook ran (the stop came just before it), svffd
        # cannot know the flash succeeded: the operator reprograms again.
        if [ "$(phase)" = interrupted ]; then
                [ $point = after-flash-journal ] || fail "a stop at $point left the reprogram interrupted"
                ctl reprogram $PF "$IMAGES/good.bit" >/dev/null 2> "$T/err" ||
                        fail "reprogram after a stop at $point: $(cat "$T/err")"
        fi
        good_state "a stop at $point"
done

note "reconf --reprogram IMAGE: the same flow through Reconf"
runs=$(wc -l < "$T/hook.log")
ctl reconf $PF 4 --reprogram "$IMAGES/good.bit" >/dev/null 2> "$T/err" || fail "reconf --reprogram: $(cat "$T/err")"
good_state "reconf --reprogram"
expect_eq "$(wc -l < "$T/hook.log")" $((runs + 1)) "hook runs after reconf --reprogram"

note "--numvfs 2 --force: VF 3's assignment released, the others kept"
ctl reprogram $PF "$IMAGES/good.bit" --numvfs 2 --force >/dev/null 2> "$T/err" || fail "forced reprogram: $(cat "$T/err")"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after the forced reprogram"
check_vfio $PF
expect_eq "$(store_py 'print(sorted(d["assignments"]))')" "['$VF0', '$VF1']" "assignments after --force"
expect_eq "$(journal)" None "journal after the forced reprogram"

note "the domains' XML says the same as the store"
stop_svffd || fail "svffd exit status"
DOMAINS="vm1 vm2 vm3"
check_xml
log_fields_check
echo "PASS"
