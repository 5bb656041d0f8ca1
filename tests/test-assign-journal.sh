#!/bin/sh
# Every change of an assignment is journaled before libvirt acts, with
# libvirt's QEMU driver embedded (qemu:///embed) on pcisim, CONFIG
# assignments of defined domains. After every step no VF is in two
# domains, none is in a domain without a record, and no settled record
# says something the domain XML does not (check_vfs):
#   - a store write that really fails (a full file system) refuses the
#     attach and the pause before libvirt is asked;
#   - a failed final store write (injected) takes the attach and the
#     pause back, and leaves a detach journaled for the next start;
#   - a SIGKILL right after each intent and right after each libvirt
#     call, then a restart: recovery reads the domain XML and records
#     what is there, before the pool hands the VF out again;
#   - libvirt unreachable at start-up: the intent stays, the VF taken
#     (no detach, no release unbinding it, no reconf planned from it);
#   - a domain event while an operation runs on the PF waits for it.
. "$(dirname "$0")/libvirt-embed-lib.sh"

define vm1 vm2 vm3
UUID1=$(virsh_ domuuid vm1)
UUID2=$(virsh_ domuuid vm2)
PF=0000:01:00.0
start_pcisim qdma
svff_conf
# A small file system of its own for the store, to fill up.
mkdir -p "$STATE"
mount -t tmpfs -o size=512k tmpfs "$STATE" || skip "cannot mount a tmpfs for the store"
trap 'kill_domains; umount -l "$STATE" 2>/dev/null; cleanup' EXIT
start_connected
ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1); VF2=$(sys_vf $PF 2); VF3=$(sys_vf $PF 3)
check_vfs "init"

rec() { jq -r --arg vf "$1" ".assignments[\$vf]${2:-}" "$STATE/store.json"; }
fill() { dd if=/dev/zero of="$STATE/fill" bs=4k 2>/dev/null || true; }
unfill() { rm -f "$STATE/fill"; }

note "a store that cannot be written"
fill
rc=0; ctl attach "$VF0" vm1 > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "attach with the store full"
check_vfs "attach with the store full"
rc=0; ctl attach --pf $PF vm2 > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "pool attach with the store full"
check_vfs "pool attach with the store full"
unfill
ctl attach "$VF1" vm1 > "$T/out" || fail "attach: $(cat "$T/out")"
check_vfs "attach"
fill
rc=0; ctl pause "$VF1" > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "pause with the store full"
check_vfs "pause with the store full"
unfill
expect_eq "$(ctl list --json | jget "[v for v in d['pfs'][0]['vfs'] if v['address'] == '$VF1'][0]['assigned_to']['state']")" \
        attached "VF1 after the refused pause"
expect_eq "$(rec "$VF0")" null "VF0 after the refused attaches"
stop_svffd || fail "svffd exit status"
check_vfs "svffd stopped"

note "the final store write fails (injected)"
SVFF_FAULT=fail-attach-commit; export SVFF_FAULT
start_connected
unset SVFF_FAULT
rc=0; ctl attach "$VF2" vm2 > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "attach whose record cannot be written"
grep -q "was undone" "$T/out" || fail "attach not undone: $(cat "$T/out")"
check_vfs "attach undone"
expect_eq "$(ctl list --json | jget "[v for v in d['pfs'][0]['vfs'] if v['address'] == '$VF2'][0]['assigned_to']")" \
        None "VF2 after the undone attach"
stop_svffd
check_vfs "svffd stopped after the undone attach"

SVFF_FAULT=fail-pause-commit; export SVFF_FAULT
start_connected
unset SVFF_FAULT
rc=0; ctl pause "$VF1" > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "pause whose record cannot be written"
grep -q "was undone" "$T/out" || fail "pause not undone: $(cat "$T/out")"
check_vfs "pause undone"
expect_eq "$(ctl list --json | jget "[v for v in d['pfs'][0]['vfs'] if v['address'] == '$VF1'][0]['assigned_to']['state']")" \
        attached "VF1 after the undone pause"
stop_svffd
check_vfs "svffd stopped after the undone pause"

SVFF_FAULT=fail-detach-commit; export SVFF_FAULT
start_connected
unset SVFF_FAULT
rc=0; ctl detach "$VF1" > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "detach whose record cannot be written"
check_vfs "detach not recorded"
expect_eq "$(rec "$VF1" .intent)" detach "VF1 on disk after the unrecorded detach"
stop_svffd
check_vfs "svffd stopped after the unrecorded detach"
N_RESOLVED=0
# restart_resolved N: svffd up, N more intents resolved.
restart_resolved() {
        start_connected
        N_RESOLVED=$((N_RESOLVED + $1))
        wait_for sh -c "[ \$(grep -c ' resolved: ' '$T/svffd.log') -ge $N_RESOLVED ]" ||
                fail "svffd did not resolve $1 intent(s)"
}
# The undone attach and pause were recorded by the write after the undo
# (the store works again); the detach was journaled only and resolves.
restart_resolved 1
check_vfs "restart after the injected failures"
expect_eq "$(rec "$VF1")" null "VF1 after recovery of the detach"
expect_eq "$(rec "$VF2")" null "VF2 after recovery of the undone attach"
stop_svffd

# crash_at POINT CTL-ARGS...: svffd with SVFF_FAULT=POINT dies of it
# during the call.
crash_at() {
        _p=$1; shift
        SVFF_FAULT=$_p; export SVFF_FAULT
        start_connected
        unset SVFF_FAULT
        rc=0; ctl "$@" > "$T/out" 2>&1 || rc=$?
        wait_for sh -c "! kill -0 $SVFFD_PID" || fail "svffd did not die at '$_p': $(cat "$T/out")"
        wait "$SVFFD_PID" 2>/dev/null || true
        SVFFD_PID=""
        rm -f "$SOCK"
        grep -q "fault point '$_p'" "$T/svffd.log" || fail "svffd died elsewhere than '$_p'"
        check_vfs "SIGKILL at $_p"
}

note "SIGKILL at each step"
crash_at after-attach-intent attach "$VF2" vm1
expect_eq "$(rec "$VF2" .intent)" attach "VF2 on disk after the kill"
restart_resolved 1
check_vfs "recovery after after-attach-intent"
expect_eq "$(rec "$VF2")" null "VF2: the attach never reached libvirt"
stop_svffd

crash_at after-attach-libvirt attach "$VF2" vm1
restart_resolved 1
check_vfs "recovery after after-attach-libvirt"
expect_eq "$(rec "$VF2" .state)" attached "VF2: the attach reached libvirt"
expect_eq "$(rec "$VF2" .uuid)" "$UUID1" "VF2's domain"
expect_eq "$(rec "$VF2" .config)" true "VF2 config"
# The pool must not hand VF2 out again: vm2 gets another VF.
ctl attach --pf $PF vm2 --json > "$T/out" || fail "pool attach: $(cat "$T/out")"
POOLVF=$(jget 'd["vf"]' < "$T/out")
[ "$POOLVF" != "$VF2" ] || fail "the pool gave $VF2, attached to vm1, to vm2"
check_vfs "pool attach after recovery"
ctl detach "$POOLVF" >/dev/null || fail "detach $POOLVF"
check_vfs "detach $POOLVF"
stop_svffd

crash_at after-pause-libvirt pause "$VF2"
restart_resolved 1
check_vfs "recovery after after-pause-libvirt"
expect_eq "$(rec "$VF2" .state)" held "VF2: the pause reached libvirt"
expect_eq "$(rec "$VF2" .pause_mode)" detach "VF2 pause mode"
stop_svffd

crash_at after-unpause-intent unpause "$VF2"
restart_resolved 1
check_vfs "recovery after after-unpause-intent"
expect_eq "$(rec "$VF2" .state)" held "VF2: the unpause never reached libvirt"
stop_svffd

crash_at after-unpause-libvirt unpause "$VF2"
restart_resolved 1
check_vfs "recovery after after-unpause-libvirt"
expect_eq "$(rec "$VF2" .state)" attached "VF2: the unpause reached libvirt"
stop_svffd

crash_at after-pause-intent pause "$VF2"
restart_resolved 1
check_vfs "recovery after after-pause-intent"
expect_eq "$(rec "$VF2" .state)" attached "VF2: the pause never reached libvirt"
stop_svffd

crash_at after-detach-libvirt detach "$VF2"
restart_resolved 1
check_vfs "recovery after after-detach-libvirt"
expect_eq "$(rec "$VF2")" null "VF2: the detach reached libvirt"
stop_svffd

note "libvirt unreachable at start-up"
crash_at after-attach-libvirt attach "$VF3" vm2
cp "$T/svff.conf" "$T/svff.conf.good"
printf '{"libvirt_uri": "qemu:///system?socket=%s/no-libvirt-sock"}\n' "$T" > "$T/svff.conf"
start_svffd
wait_for grep -q "retrying in the background" "$T/svffd.log" || fail "svffd did not try libvirt"
expect_eq "$(rec "$VF3" .intent)" attach "VF3's intent while libvirt is away"
ctl list --json > "$T/list.json"
expect_eq "$(jget "[v for v in d['pfs'][0]['vfs'] if v['address'] == '$VF3'][0]['assigned_to']['intent']" < "$T/list.json")" \
        attach "VF3 in list while libvirt is away"
# (vm2 is not running: the attach is to its definition only)
ctl list | grep -q "^$VF3 .* vm2 .* defined (attach unresolved)" || fail "human list: $(ctl list)"
rc=0; ctl detach "$VF3" > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "detach of an unresolved VF"
rc=0; ctl release "$VF3" > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "release of an unresolved VF"
grep -q "unfinished attach" "$T/out" || fail "release of an unresolved VF: $(cat "$T/out")"
expect_eq "$(sys_driver "$VF3")" vfio-pci "VF3's driver after the refused release"
rc=0; ctl reconf $PF 4 > "$T/out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "reconf planned from an unresolved assignment"
grep -q "unfinished attach" "$T/out" || fail "reconf with an unresolved VF: $(cat "$T/out")"
# Its dry run refuses the same: the plan it would print is not the one
# that could run.
rc=0; ctl reconf $PF 3 --dry-run > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "dry run of a reconf of the PF of an unresolved VF"
grep -q "VF $VF3 has an unfinished attach" "$T/out" || fail "reconf dry run with an unresolved VF: $(cat "$T/out")"
# An init of the count the PF has would provision and bind VF3 under
# the attach that is not resolved: refused the same.
rc=0; ctl init $PF 4 > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "init of the PF of an unresolved VF"
grep -q "unfinished attach" "$T/out" || fail "init with an unresolved VF: $(cat "$T/out")"
check_vfs "libvirt away"
stop_svffd
mv "$T/svff.conf.good" "$T/svff.conf"
restart_resolved 1
check_vfs "recovery once libvirt is back"
expect_eq "$(rec "$VF3" .uuid)" "$UUID2" "VF3's domain after recovery"
expect_eq "$(rec "$VF3" .state)" attached "VF3 after recovery"
stop_svffd

note "a domain event while an operation runs on the PF"
# A live-only assignment (none can be made here: no VFIO) written into
# the store, to a running vm3; its QEMU then dies (STOPPED), which
# closes such an assignment, while a slow release of VF0 runs on the PF.
virsh_ start vm3 >/dev/null || fail "starting vm3 (TCG) failed"
UUID3=$(virsh_ domuuid vm3)
jq --arg vf "$VF1" --arg u "$UUID3" '.assignments[$vf] = {uuid: $u, domain: "vm3", guest_address: null,
        alias: "ua-x", live: true, config: false, state: "attached", pause_mode: null, intent: null}' \
        "$STATE/store.json" > "$T/store.json" && cat "$T/store.json" > "$STATE/store.json"
start_connected
# The embedded driver finds vm3's QEMU again in the background: a live
# attach refused for want of VFIO (not for a stopped domain) shows that
# it has, and is journaled and withdrawn like any refusal.
wait_for sh -c "\"$SVFFCTL\" --socket \"$SOCK\" attach $VF2 vm3 --live 2>&1 | grep -q VFIO" ||
        fail "svffd does not see vm3 running"
pcisim_ctl "latency unbind 5000000"
# The release, and a Status sent on a second connection the moment its
# reply is in: svffd reads that Status only after the turn of its loop
# that ended the release. What the store says of VF1 once Status is
# answered is what that turn left.
python3 - "$SOCK" "$VF0" "$STATE/store.json" "$VF1" > "$T/release.out" 2>&1 <<'PY' &
import json, socket, sys
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    return s
def call(s, method, params):
    s.sendall(json.dumps({"method": method, "parameters": params}).encode() + b"\0")
    buf = b""
    while not buf.endswith(b"\0"):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    return json.loads(buf.rstrip(b"\0"))
a, b = conn(), conn()
r = call(a, "io.svff.Release", {"vf": sys.argv[2]})
call(b, "io.svff.Status", {})
print(json.dumps(r))
print(json.dumps(json.load(open(sys.argv[3]))["assignments"].get(sys.argv[4])))
sys.exit("error" in r)
PY
REL=$!
BG_PIDS="$REL"
wait_for sh -c "\"$SVFFCTL\" --socket \"$SOCK\" status --json | grep -q release" || fail "the release did not start"
# QEMU's pid file: under the embedded root, or the private libvirtd's /run.
if [ "$SVFF_LIBVIRT" = daemon ]; then pidfile=/run/libvirt/qemu/vm3.pid; else pidfile=$ROOT/run/qemu/vm3.pid; fi
kill -KILL "$(cat "$pidfile")"
wait_for grep -q "Domain 'vm3' changed while an operation owns its assignments" "$T/svffd.log" ||
        fail "the STOPPED event was not held back"
expect_eq "$(rec "$VF1" .live)" true "VF1 while the release runs"
wait "$REL" || fail "release: $(cat "$T/release.out")"
BG_PIDS=""
# Applied as the release ends (a hook of its removal), in the same turn
# of svffd's loop that answered it, so before svffd reads any later call.
# (It used to wait for a poll every 200 ms, which a call could overtake.)
expect_eq "$(tail -n 1 "$T/release.out")" null \
        "VF1's live-only assignment right after the release ended (the held-back STOPPED applied)"
pcisim_ctl "latency unbind 0"
grep -q "live-only assignment of VF $VF1 is closed" "$T/svffd.log" || fail "VF1 not closed"
check_vfs "held-back event applied"
stop_svffd
check_vfs "end"
echo "PASS"
