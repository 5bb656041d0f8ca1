#!/bin/sh
# Reads never wait for writes: while a PF's sriov_numvfs write is in the
# kernel (which serialises every read of sriov_numvfs behind it), List
# and Status answer at once from the last snapshot, the PF in flux shown
# as changing with the operation named, the other PFs as they are; once
# the write ends, the PF is shown as it now is.
#   - a write past its deadline, held by a VF a VFIO user keeps open;
#   - a slow write (pcisim's latency profile with the SVFF paper's
#     figures) while its init runs;
#   - another process's write that no read of svffd's has met yet: an
#     init of that PF is refused by its worker's first read of the count,
#     under a deadline, and the worker is free for another PF's init;
#     a reconf of it plans from a reading taken after it was asked, so
#     it is refused too, before anything moves, under a list_max_age_msec
#     long enough that an older snapshot would otherwise serve;
#   - a dry run, which asks a PF's device class, while svffd's one ops
#     worker (workers 1) writes another PF's count: the class is asked
#     on the discovery pool, not behind the write;
#   - svffd's own write, which no call waits for a pass to read;
#   - dry runs one after another, which share one read of the device
#     class;
#   - an operation's end, which the next operation on the PF does not
#     hide;
#   - inits back to back for longer than list_max_age_msec, during
#     which a steady reader waits for no pass.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
OTHER=0000:03:00.0
cat > "$T/svff.conf" <<'CONF'
{
  "settle_msec": 50,
  "workers": 1,
  "numvfs_timeout_sec": 1,
  "numvfs_timeout_per_vf_msec": 300
}
CONF
start_pcisim mixed --latency-profile svff-paper
start_svffd

# timed NAME CMD...: runs CMD (svffctl, --timeout 5), its output in
# $T/NAME.out, and fails unless it answers within 1.5 s (times
# SVFF_TEST_SLOWDOWN): svffd answers from its last snapshot.
timed() {
        name=$1
        shift
        t0=$(date +%s%N)
        rc=0
        "$SVFFCTL" --socket "$SOCK" --timeout 5 "$@" > "$T/$name.out" 2> "$T/$name.err" || rc=$?
        ms=$(ms_since "$t0")
        note "$name: svffctl $* answered in $ms ms (exit $rc)"
        expect_eq "$rc" 0 "$name: exit status ($(cat "$T/$name.err"))"
        [ "$ms" -lt $((1500 * ${SVFF_TEST_SLOWDOWN:-1})) ] ||
                fail "$name: svffctl $* took $ms ms while a numvfs write is in the kernel"
}

# end_write WHAT: the write by hand, which must still be in the kernel
# after WHAT met it, let go; it succeeds, and List shows PF settled.
end_write() {
        kill -0 $writer 2>/dev/null || fail "the write by hand ended before $1: it did not meet it"
        release_vf
        rc=0; wait $writer || rc=$?
        BG_PIDS=""
        expect_eq "$rc" 0 "the write by hand met by $1"
        wait_for pf_settled $PF || fail "the PF stays changing after the write met by $1 ended: $(ctl list --json)"
}

# changing PF < list.json: the PF's changing field, "None" when settled.
changing() { jget '[p["changing"] for p in d["pfs"] if p["address"] == "'"$1"'"][0]'; }
list_numvfs() { jget '[p["numvfs"] for p in d["pfs"] if p["address"] == "'"$1"'"][0]'; }
# pf_settled PF: list shows PF as nothing changes it, at 0 VFs (the
# other PFs of the scenario say nothing about this one).
pf_settled() { [ "$(ctl list --json | jget '[(p["changing"], p["numvfs"]) for p in d["pfs"] if p["address"] == "'"$1"'"][0]')" = "(None, 0)" ]; }

ctl init $PF 2 > "$T/out" 2>&1 || fail "init 2: $(cat "$T/out")"
VF0=$(sys_vf $PF 0)
# init_refused N WHAT MESSAGE: 'svffctl init PF N', which would wait
# behind a count write in the kernel, is refused within 15 s with
# OperationInProgress and MESSAGE (exit 124: it waited).
init_refused() {
        rc=0; timeout 15 "$SVFFCTL" --socket "$SOCK" init $PF "$1" --json > "$T/out" 2> "$T/err" || rc=$?
        [ "$rc" != 124 ] || fail "$2: the init waited behind the write"
        expect_eq "$rc" 1 "$2: $(cat "$T/out")"
        grep -q '"error":"io.svff.OperationInProgress"' "$T/err" && grep -q "$3" "$T/err" ||
                fail "$2: $(cat "$T/err")"
}

# reconf_refused [--dry-run]: 'svffctl reconf PF 2' while another
# process writes PF's count is refused the same way, before it starts.
started() { log_count "Reconf of PF $PF to 2 VFs requested"; }
reconf_refused() {
        what="a reconf${1:+ $1} of the PF another process writes"
        n=$(started)
        rc=0; timeout 15 "$SVFFCTL" --socket "$SOCK" reconf $PF 2 "$@" --json > "$T/out" 2> "$T/err" || rc=$?
        [ "$rc" != 124 ] || fail "$what waited behind the write"
        expect_eq "$rc" 1 "$what: $(cat "$T/out")"
        grep -q '"error":"io.svff.OperationInProgress"' "$T/err" &&
        grep -q "Another process is writing the VF count of PF $PF" "$T/err" || fail "$what: $(cat "$T/err")"
        expect_eq "$(started)" "$n" "$what: reconfs started"
}

note "a write past its deadline: VF 0 held open, init 0 gives up after 1.6 s, the write goes on"
hold_vf "$VF0"
rc=0
ctl init $PF 0 > "$T/out" 2> "$T/err" || rc=$?
[ "$rc" != 0 ] || fail "init 0 passed with VF 0 held open"
grep -q "goes on in the background" "$T/err" || fail "init 0 with VF 0 held: $(cat "$T/err")"
timed stuck-list list --json
changing $PF < "$T/stuck-list.out" | grep -q "sriov_numvfs" ||
        fail "the PF with a write past its deadline is not shown as changing: $(cat "$T/stuck-list.out")"
expect_eq "$(list_numvfs $PF < "$T/stuck-list.out")" 2 "the last known count while the write is stuck"
expect_eq "$(changing $OTHER < "$T/stuck-list.out")" None "another PF while the write is stuck"
timed stuck-list-text list
grep -q "changing" "$T/stuck-list-text.out" || fail "list does not say the PF is changing: $(cat "$T/stuck-list-text.out")"
timed stuck-status status
# Another init meanwhile would wait behind the write (it did, for as
# long as the VF was held, and held the PF as "in progress"): refused
# at once, naming the write.
init_refused 0 "init 0 again while the write is in the kernel" \
        "A VF count write of PF $PF passed its deadline and is still in the kernel"
release_vf
wait_for_s 20 sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 0 ]" || fail "the held write never ended"
wait_for pf_settled $PF || fail "the PF stays changing after the write ended: $(ctl list --json)"
ctl list --json > "$T/list.json"
expect_eq "$(list_numvfs $PF < "$T/list.json")" 0 "the count once the stuck write ended"
expect_eq "$(changing $PF < "$T/list.json")" None "the PF once the stuck write ended"

note "a slow write: init 40 at the paper's 136 ms per VF, List and Status meanwhile"
ctl init $PF 40 > "$T/init.out" 2> "$T/init.err" &
init=$!
BG_PIDS="$init"
wait_for grep -q "$PF: setting sriov_numvfs 0 -> 40" "$T/svffd.log" || fail "the init did not reach its numvfs write"
# Past list_max_age_msec (1 s): the list takes a pass, which leaves the
# PF to its init and carries its picture over; it must still name the
# init (it did not when the pass came before the list).
sleep 1.2
timed slow-list list --json
changing $PF < "$T/slow-list.out" | grep -q "init" ||
        fail "the PF being initialised is not shown as changing by its init: $(cat "$T/slow-list.out")"
expect_eq "$(changing $OTHER < "$T/slow-list.out")" None "another PF during the init"
timed slow-status status --json
jget '[o["op"] for o in d["operations"] if o["pf"] == "'$PF'"][0]' < "$T/slow-status.out" | grep -qx init ||
        fail "status does not name the init: $(cat "$T/slow-status.out")"
timed slow-list-pf list $PF
rc=0; wait $init || rc=$?
BG_PIDS=""
expect_eq "$rc" 0 "init 40: $(cat "$T/init.err")"
ctl list --json > "$T/list.json"
expect_eq "$(list_numvfs $PF < "$T/list.json")" 40 "the count after the slow init"
expect_eq "$(changing $PF < "$T/list.json")" None "the PF after the slow init"
expect_eq "$(jget '[len(p["vfs"]) for p in d["pfs"] if p["address"] == "'$PF'"][0]' < "$T/list.json")" 40 \
        "the VFs listed after the slow init"

note "a write by another process: sriov_numvfs set to 0 by hand, List and Status meanwhile, an init of another PF"
# VF 0 held open keeps the write in the kernel until it is released. No
# deadline of svffd's bounds this write: only a deadline on each read of
# the count keeps discovery from waiting for it.
write_held $PF 0
VF0=$HELD
# Past list_max_age_msec (1 s), so that the next List needs a pass.
sleep 1.5
kill -0 $writer 2>/dev/null || fail "the write by hand ended before List could meet it"
timed other-list list --json
changing $PF < "$T/other-list.out" | grep -q "another process" ||
        fail "the PF another process writes is not shown as changing: $(cat "$T/other-list.out")"
expect_eq "$(list_numvfs $PF < "$T/other-list.out")" 40 "the last known count while another process writes"
expect_eq "$(changing $OTHER < "$T/other-list.out")" None "another PF while another process writes"
timed other-status status --json
jget '[o["changing"] for o in d["owners"] if o["pf"] == "'$PF'"][0]' < "$T/other-status.out" | grep -q "another process" ||
        fail "status does not show the PF another process writes as changing: $(cat "$T/other-status.out")"
timed other-status-text status
grep -q "$PF: changing: .*another process" "$T/other-status-text.out" ||
        fail "status does not say the PF is changing: $(cat "$T/other-status-text.out")"
timed other-list-again list --json
# Its dry run refuses what the reconf would, at once, with the reason.
t0=$(date +%s%N)
reconf_refused --dry-run
ms=$(ms_since "$t0")
note "other-dry: reconf --dry-run answered in $ms ms"
[ "$ms" -lt $((1500 * ${SVFF_TEST_SLOWDOWN:-1})) ] || fail "reconf --dry-run took $ms ms while another process writes"
# An init of that PF would wait behind the write: refused at once.
init_refused 2 "an init of the PF another process writes" "Another process is writing the VF count of PF $PF"
# So would a reconf's count step, after its domains gave their VFs up:
# refused at once too, before anything moves.
reconf_refused
timed other-init init $OTHER 2
end_write "the checks"
ctl list --json > "$T/list.json"
expect_eq "$(list_numvfs $PF < "$T/list.json")" 0 "the count once the write by hand ended"

note "a write by another process that no read has met yet: the init meets it under a deadline, refused at once"
# svffd knows of another process's write only once a read of the count
# waited for it. Here none has: the init's check lets it through, and its
# worker's first read of the count must not wait (it did, holding the
# ops worker until the write ended).
echo 2 > "$SYS/bus/pci/devices/$PF/sriov_numvfs"
met=$(log_count "PF $PF: its VF count did not answer within")
write_in_kernel $PF
t0=$(date +%s%N)
init_refused 2 "an init of the PF another process writes, which no read had met" \
        "Another process is writing the VF count of PF $PF.*Nothing was changed"
note "unmet-init: refused in $(ms_since "$t0") ms"
[ "$(log_count "PF $PF: its VF count did not answer within")" -gt "$met" ] ||
        fail "the init was refused before its worker met the write: $(cat "$T/err")"
# The ops worker is free: an init of another PF goes through.
ctl --timeout 10 init $OTHER 3 > "$T/out" 2>&1 || fail "init of $OTHER beside the refused one: $(cat "$T/out")"
end_write "the init"
ctl init $PF 2 > "$T/out" 2>&1 || fail "init 2 once the write ended: $(cat "$T/out")"
expect_eq "$(sys_numvfs $PF)" 2 "the count after the init"
# A reconf plans on the main loop from the snapshot: from one that read
# the PF after the reconf was asked for, so that it meets such a write
# and is refused before anything moves (it started, and its count step
# waited behind the write). Under a long list_max_age_msec, so that any
# snapshot taken before the write would serve, however slow the build.
max_age() {
        sed "s/\"workers\": 1,\( \"list_max_age_msec\": [0-9]*,\)\{0,1\}/\"workers\": 1,$1/" "$T/svff.conf" > "$T/svff.conf.new"
        mv "$T/svff.conf.new" "$T/svff.conf"
        ctl config reload > "$T/out" 2>&1 || fail "config reload: $(cat "$T/out")"
}
max_age ' "list_max_age_msec": 600000,'
expect_eq "$(ctl status --json | jget 'd["snapshot_max_age_usec"]')" 600000000 "list_max_age_msec after the reload"
write_in_kernel $PF
t0=$(date +%s%N)
reconf_refused
note "unmet-reconf: refused in $(ms_since "$t0") ms"
end_write "the reconf"
max_age ""
ctl init $PF 0 > "$T/out" 2>&1 || fail "init 0: $(cat "$T/out")"

note "a dry run of the QDMA PF while the ops worker writes the count of another PF"
pcisim_ctl "latency vf_enable 300000"
ctl init $OTHER 7 > "$T/init-other.out" 2>&1 &
init=$!
BG_PIDS="$init"
wait_for grep -q "$OTHER: setting sriov_numvfs 0 -> 7" "$T/svffd.log" || fail "the init of $OTHER did not reach its write"
timed class-dry reconf $PF 2 --dry-run --json
kill -0 $init 2>/dev/null || fail "the init of $OTHER ended before the dry run answered: the check did not meet it"
expect_eq "$(jget 'd["class_plan"]["class"], " ".join(s["action"] for s in d["plan"]["steps"])' \
        < "$T/class-dry.out")" "qdma numvfs provision provision bind commit" "the dry run during the write"
rc=0; wait $init || rc=$?
BG_PIDS=""
expect_eq "$rc" 0 "init $OTHER 7: $(cat "$T/init-other.out")"
pcisim_ctl "latency vf_enable 0"

note "svffd's own write: List and Status do not wait for a pass to read the PF its init is changing"
# A snapshot younger than list_max_age_msec serves: only the init's
# changes could make a call wait.
# The write's deadline from 3.1 s to 6.1 s: the calls below must meet a
# write that lasts longer than they take on a loaded machine.
sed -e 's/"workers": 1,/"workers": 1, "list_max_age_msec": 60000,/' \
    -e 's/"numvfs_timeout_sec": 1,/"numvfs_timeout_sec": 4,/' "$T/svff.conf" > "$T/svff.conf.new"
mv "$T/svff.conf.new" "$T/svff.conf"
ctl config reload > "$T/out" 2>&1 || fail "config reload: $(cat "$T/out")"
expect_eq "$(ctl status --json | jget 'd["snapshot_max_age_usec"]')" 60000000 "list_max_age_msec after the reload"
waits() { ctl status --json | jget 'd["snapshot_waits"]'; }
ctl list > /dev/null || fail "list before the init"
w0=$(waits)
# 7 -> 0 sleeps in the kernel's sriov_disable: 5 s here (the paper's
# second, stretched; within the write's deadline of 6.1 s), which the
# calls below must meet.
pcisim_ctl "latency sriov_disable 5000000"
ctl init $OTHER 3 > "$T/init-own.out" 2>&1 &
init=$!
BG_PIDS="$init"
wait_for grep -q "$OTHER: setting sriov_numvfs 7 -> 0" "$T/svffd.log" || fail "the init of $OTHER did not reach its write"
sleep 0.3
timed own-list list --json
changing $OTHER < "$T/own-list.out" | grep -q "init" ||
        fail "the PF being initialised is not shown as changing by its init: $(cat "$T/own-list.out")"
expect_eq "$(changing $PF < "$T/own-list.out")" None "another PF during the init"
# Exit 5: the init is in progress.
ctl_status --json > "$T/own-status.out" || fail "status during the init: exit $ctl_status_rc"
w1=$(jget 'd["snapshot_waits"]' < "$T/own-status.out")
kill -0 $init 2>/dev/null || fail "the init of $OTHER ended before the reads: they did not meet its write"
expect_eq "$w1" "$w0" "the calls that waited for a pass while the init wrote the count"
rc=0; wait $init || rc=$?
BG_PIDS=""
expect_eq "$rc" 0 "init $OTHER 3: $(cat "$T/init-own.out")"
pcisim_ctl "latency sriov_disable 1000000"
ctl list --json > "$T/list.json"
expect_eq "$(list_numvfs $OTHER < "$T/list.json")" 3 "the count once the init ended"
expect_eq "$(changing $OTHER < "$T/list.json")" None "the PF once the init ended"

note "dry runs share the device class's read while the host, the store and the policy stay as they were"
asks() { grep -c "Asking the device class of PF $PF for a plan of 2 VFs" "$T/svffd.log"; }
a0=$(asks)
for i in 1 2 3 4 5; do
        ctl reconf $PF 2 --dry-run --json > "$T/share-$i.out" 2>&1 || fail "dry run $i: $(cat "$T/share-$i.out")"
done
expect_eq "$(($(asks) - a0))" 1 "the device-class reads of five dry runs in a row"
for i in 2 3 4 5; do
        cmp -s "$T/share-1.out" "$T/share-$i.out" || fail "dry run $i differs: $(cat "$T/share-$i.out")"
done
expect_eq "$(jget 'd["class_plan"]["class"]' < "$T/share-5.out")" qdma "the shared dry run's class"
ctl init $PF 1 > "$T/out" 2>&1 || fail "init 1: $(cat "$T/out")"
a1=$(asks)
ctl reconf $PF 2 --dry-run --json > "$T/share-after.out" 2>&1 || fail "dry run after the init: $(cat "$T/share-after.out")"
expect_eq "$(($(asks) - a1))" 1 "the device-class reads of a dry run after svffd changed the PF"

note "an operation's end shows, even when the next one on the PF begins before any call"
ctl init $PF 2 > "$T/out" 2>&1 || fail "init 2: $(cat "$T/out")"
ctl list > /dev/null || fail "list after init 2"
VA0=$(sys_vf $PF 0)
VA1=$(sys_vf $PF 1)
# Each release then takes 1.6 s: the unbind from vfio-pci, the re-probe.
pcisim_ctl "latency unbind $((800000 * ${SVFF_TEST_SLOWDOWN:-1}))"
pcisim_ctl "latency probe $((800000 * ${SVFF_TEST_SLOWDOWN:-1}))"
ctl release "$VA0" > "$T/rel0.out" 2>&1 || fail "release of VF 0: $(cat "$T/rel0.out")"
ctl release "$VA1" > "$T/rel1.out" 2>&1 &
rel=$!
BG_PIDS="$rel"
sleep 0.5
ctl list --json > "$T/between.json" || fail "list during the second release"
kill -0 $rel 2>/dev/null || fail "the second release ended before the list: it did not meet it"
vf0=$(jget '[v["driver"] for p in d["pfs"] for v in p["vfs"] if v["address"] == "'"$VA0"'"][0]' < "$T/between.json")
[ "$vf0" != vfio-pci ] || fail "the list during the second release shows VF 0 before the first release"
expect_eq "$vf0" "$(sys_driver "$VA0")" "VF 0's driver in a list during the second release"
rc=0; wait $rel || rc=$?
BG_PIDS=""
expect_eq "$rc" 0 "release of VF 1: $(cat "$T/rel1.out")"
pcisim_ctl "latency unbind 0"
pcisim_ctl "latency probe 0"

note "inits back to back for longer than list_max_age_msec: a steady reader waits for no pass"
# The snapshot grows too old a few times over while the PF is busy, and
# a reader calling without a pause meets each stretch before it does
# (list_max_age_msec / 10, the least lead, is longer than a call). The
# refresh ahead of need then leaves the busy PF to its operation, and an
# init's end is shown at once, not behind the pass running then.
# Not stretched under a sanitizer: the lead grows with the passes' time.
age=2000
sed 's/"list_max_age_msec": 60000,/"list_max_age_msec": '$age',/' "$T/svff.conf" > "$T/svff.conf.new"
mv "$T/svff.conf.new" "$T/svff.conf"
ctl config reload > "$T/out" 2>&1 || fail "config reload: $(cat "$T/out")"
expect_eq "$(ctl status --json | jget 'd["snapshot_max_age_usec"]')" $((age * 1000)) "list_max_age_msec after the reload"
# 80 binds at 100 ms: about four times list_max_age_msec
pcisim_ctl "latency probe 100000"
( for n in 30 20 30; do
        "$SVFFCTL" --socket "$SOCK" init $PF $n > "$T/cycle-$n.out" 2>&1 || exit 1
  done ) &
cycle=$!
BG_PIDS="$cycle"
wait_for grep -q "$PF: setting sriov_numvfs 2 -> 0" "$T/svffd.log" || fail "the first init did not reach its write"
ctl list > /dev/null || fail "list as the inits begin"
w0=$(waits)
aheads() { log_count "Refreshing the snapshot ahead of need"; }
ahead0=$(aheads)
t0=$(date +%s%N)
calls=0
while kill -0 $cycle 2>/dev/null; do
        ctl list --json > "$T/cycle-list.json" || fail "list during the inits"
        calls=$((calls + 1))
done
ms=$(ms_since "$t0")
rc=0; wait $cycle || rc=$?
BG_PIDS=""
pcisim_ctl "latency probe 0"
expect_eq "$rc" 0 "the inits back to back: $(cat "$T"/cycle-*.out)"
w1=$(waits)
ahead=$(($(aheads) - ahead0))
note "$calls lists in $ms ms during the inits, $((w1 - w0)) of them waited for a pass; $ahead refreshes ahead of need"
[ "$ms" -gt $((2 * age)) ] || fail "the inits took $ms ms: they did not outlast list_max_age_msec twice"
[ "$ahead" -ge 1 ] || fail "no refresh ahead of need in $ms ms of inits"
# Before, a reader waited at about every expiry; a host slowed down may
# still cost one now and then.
expiries=$((ms / age))
[ $((2 * (w1 - w0))) -lt "$expiries" ] ||
        fail "$((w1 - w0)) of $calls lists waited for a pass during the inits ($expiries expiries)"
ctl list --json > "$T/list.json"
expect_eq "$(list_numvfs $PF < "$T/list.json")" 30 "the count after the inits"
expect_eq "$(changing $PF < "$T/list.json")" None "the PF after the inits"
exit 0
