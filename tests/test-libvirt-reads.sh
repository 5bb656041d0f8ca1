#!/bin/sh
# A write another process holds in the kernel on one PF holds up neither
# readers nor an attach on another PF: while a write of 0 to PF A's
# sriov_numvfs is held (a VF of A held open, as a VFIO user holds it),
# 'svffctl list' and 'status' answer at once, A shown as changing, and an
# attach of a VF of PF B to a domain completes, its assignment recorded
# and in the domain's definition. Once the write ends, A is shown as it
# now is.
. "$(dirname "$0")/libvirt-embed-lib.sh"

define vm1
A=0000:01:00.0
B=0000:03:00.0
start_pcisim_qdma_nic
svff_conf
start_connected
ctl init $A 2 >"$T/out" 2>&1 || fail "init $A: $(cat "$T/out")"
ctl init $B 2 >"$T/out" 2>&1 || fail "init $B: $(cat "$T/out")"
VA0=$(sys_vf $A 0)
VB0=$(sys_vf $B 0)

# A failure while the VF is held lets it go first: the write would
# otherwise outlive the test.
HELD=""
WRITER=""
release_held() {
        [ -n "$HELD" ] && pcisim_ctl release "$HELD" 2>/dev/null
        [ -n "$WRITER" ] && wait "$WRITER" 2>/dev/null
        HELD=""
        WRITER=""
}
fail() {
        release_held
        echo "FAIL: $*" >&2
        sed 's/^/  svffd| /' "$T/svffd.log" | tail -n 40 >&2
        exit 1
}

# timed NAME CMD...: svffctl CMD (--timeout 10), its output in
# $T/NAME.out and its exit status in $rc, in $ms milliseconds.
timed() {
        name=$1
        shift
        t0=$(date +%s%N)
        rc=0
        "$SVFFCTL" --socket "$SOCK" --timeout 10 "$@" > "$T/$name.out" 2> "$T/$name.err" || rc=$?
        ms=$(ms_since "$t0")
        note "$name: svffctl $* answered in $ms ms (exit $rc)"
}
changing() { jget '[p["changing"] for p in d["pfs"] if p["address"] == "'"$1"'"][0]'; }
assigned() { jget '[(v["assigned_to"] or {}).get("domain") for p in d["pfs"] for v in p["vfs"] if v["address"] == "'"$1"'"][0]'; }

note "another process writes 0 to $A's sriov_numvfs, held in the kernel by its VF 0"
pcisim_ctl hold "$VA0"
HELD=$VA0
sh -c "echo 0 > '$SYS/bus/pci/devices/$A/sriov_numvfs'" &
WRITER=$!
# Past list_max_age_msec (1 s): the next call needs a discovery pass,
# which must not wait for the write.
sleep 1.5
kill -0 "$WRITER" 2>/dev/null || fail "the write ended before the calls could meet it"

limit=$((1500 * ${SVFF_TEST_SLOWDOWN:-1}))
timed list list --json
expect_eq "$rc" 0 "list during the write: $(cat "$T/list.err")"
[ "$ms" -lt "$limit" ] || fail "list took $ms ms while another process's write is held"
changing $A < "$T/list.out" | grep -q "another process" ||
        fail "$A is not shown as changing: $(cat "$T/list.out")"
expect_eq "$(changing $B < "$T/list.out")" None "$B during the write"

timed status status --json
[ "$rc" = 0 ] || [ "$rc" = 5 ] || fail "status during the write: exit $rc: $(cat "$T/status.err")"
[ "$ms" -lt "$limit" ] || fail "status took $ms ms while another process's write is held"

timed attach attach "$VB0" vm1
expect_eq "$rc" 0 "attach of $VB0 during the write: $(cat "$T/attach.err")"
kill -0 "$WRITER" 2>/dev/null || fail "the write ended before the attach completed: the attach did not meet it"
ctl list --json > "$T/after-attach.json" || fail "list after the attach"
expect_eq "$(assigned "$VB0" < "$T/after-attach.json")" vm1 "$VB0's assignment"
check_vfs "the attach during the write"

note "the write ends: $A is shown as it now is"
release_held
wait_for sh -c "\"$SVFFCTL\" --socket '$SOCK' list --json | grep -q '\"changing\":null.*\"changing\":null'" ||
        fail "$A stays changing after the write ended: $(ctl list --json)"
ctl list --json > "$T/end.json" || fail "list at the end"
expect_eq "$(jget '[p["numvfs"] for p in d["pfs"] if p["address"] == "'$A'"][0]' < "$T/end.json")" 0 \
        "$A's count once the write ended"
expect_eq "$(assigned "$VB0" < "$T/end.json")" vm1 "$VB0's assignment at the end"
exit 0
