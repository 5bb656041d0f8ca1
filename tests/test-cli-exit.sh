#!/bin/sh
# svffctl's exit status, as the table in svffctl(8) says: the test reads
# the EXIT STATUS section and provokes every code in it, so a code added
# to the page without a case here (or the reverse) fails. With it: an
# explicit --timeout applies to every command that talks to svffd (a
# stopped svffd makes each give up with 3) and is refused where it cannot
# apply; the usage errors svffctl finds itself say what is wrong.
. "$(dirname "$0")/daemon-lib.sh"

# svffd may be stopped (SIGSTOP) when a check fails: resume it, or the
# cleanup would wait for it forever.
fail() {
        [ -n "$SVFFD_PID" ] && kill -CONT "$SVFFD_PID" 2>/dev/null
        echo "FAIL: $*" >&2
        sed 's/^/  svffd| /' "$T/svffd.log" 2>/dev/null | tail -n 40 >&2
        exit 1
}

MAN="$top_srcdir/man/svffctl.8"
[ -f "$MAN" ] || fail "no $MAN"
[ "$(id -u)" = 0 ] || skip "needs root to run svffctl under another uid (EACCES on the socket)"
command -v setpriv >/dev/null || skip "setpriv not installed"

PF=0000:01:00.0
start_pcisim qdma
chmod 0755 "$T"
start_svffd
ctl init $PF 4 >/dev/null || fail "init"
VF=$(sys_vf $PF 1)

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$SVFFCTL" --socket "$SOCK" "$@"; }
as_nobody --version >/dev/null 2>&1 || skip "uid 65534 cannot run '$SVFFCTL' (build tree not readable)"

# expect_rc CODE WHAT CMD...: CMD exits with CODE; stderr in $T/err.
expect_rc() {
        want=$1 what=$2
        shift 2
        rc=0
        "$@" > "$T/out" 2> "$T/err" || rc=$?
        [ "$rc" = "$want" ] || fail "$what: exit $rc, svffctl(8) says $want: $(cat "$T/err")"
}

case_0() {
        expect_rc 0 "list" ctl list
        expect_rc 0 "status --json" ctl status --json
        expect_rc 0 "status with the host as recorded" ctl status
        grep -q "^Drift: *none" "$T/out" || fail "status without drift: $(cat "$T/out")"
        expect_rc 0 "status --quiet with the host as recorded" ctl status --quiet
        [ ! -s "$T/out" ] || fail "status --quiet printed: $(cat "$T/out")"
}

case_1() {
        expect_rc 1 "init beyond totalvfs" ctl init $PF 300
        expect_rc 1 "release of an unrecorded VF" ctl release 0000:01:07.7
        printf '{ "workers": "many" }\n' > "$T/bad.conf"
        expect_rc 1 "config check of an invalid file" ctl config check "$T/bad.conf"
}

case_2() {
        expect_rc 2 "no command" ctl
        expect_rc 2 "unknown command" ctl frobnicate
        expect_rc 2 "unknown option" ctl list --frobnicate
        expect_rc 2 "option without its value" ctl list --socket
        expect_rc 2 "malformed PF address" ctl init bogus 4
        grep -q "'bogus' is not a PF address" "$T/err" || fail "bad PF address message: $(cat "$T/err")"
        expect_rc 2 "malformed VF address" ctl release 0000:01:00
        expect_rc 2 "malformed VF address for attach" ctl attach 01:0.4 vm1
        expect_rc 2 "malformed PF address for list" ctl list 0000:zz:00.0
        expect_rc 2 "negative VF count" ctl init $PF -1
        grep -q "'-1' is not a VF count" "$T/err" || fail "init PF -1: $(cat "$T/err")"
        grep -q "invalid option" "$T/err" && fail "init PF -1 still blames an option: $(cat "$T/err")"
        expect_rc 2 "negative VF count for reconf" ctl reconf $PF -3
        expect_rc 2 "VF count that is not a number" ctl init $PF lots
        long=$(python3 -c 'print("d" * 300)')
        expect_rc 2 "300-character domain" ctl attach "$VF" "$long"
        grep -q "too long" "$T/err" || fail "long domain message: $(cat "$T/err")"
        grep -q "required" "$T/err" && fail "long domain called 'required': $(cat "$T/err")"
        expect_rc 2 "empty domain" ctl attach "$VF" ""
        expect_rc 2 "guest address on the host bridge's slot" ctl attach "$VF" vm1 --guest-address 00:00.0
        grep -q "host bridge" "$T/err" || fail "guest 00:00.0 message: $(cat "$T/err")"
        expect_rc 2 "malformed guest address" ctl attach "$VF" vm1 --guest-address 5:0
        expect_rc 2 "VLAN above 4095" ctl attach "$VF" vm1 --vlan 5000
        grep -q "0 to 4095" "$T/err" || fail "--vlan 5000 message: $(cat "$T/err")"
        expect_rc 2 "QoS above 7" ctl attach "$VF" vm1 --vlan 100:9
        expect_rc 2 "VLAN protocol" ctl attach "$VF" vm1 --vlan 100:0:802.1x
        expect_rc 2 "trust that is not on or off" ctl attach "$VF" vm1 --trust maybe
        expect_rc 2 "negative rate" ctl attach "$VF" vm1 --max-tx-rate -1
        expect_rc 2 "a NIC option on another command" ctl init $PF 4 --mac 02:00:00:00:00:01
        expect_rc 2 "--timeout that is not seconds" ctl --timeout=-1 list
        expect_rc 2 "--timeout on monitor" ctl --timeout=5 monitor
        grep -q "does not apply" "$T/err" || fail "monitor --timeout message: $(cat "$T/err")"
        expect_rc 2 "--timeout on config check" ctl --timeout=5 config check "$T/svff.conf"
        expect_rc 2 "option of another command" ctl list --driver x
        expect_rc 2 "-q on list" ctl list -q
        # svffd's own InvalidParameter is a usage error too.
        expect_eq "$(varlink_call io.svff.Init '{"pf":"0000:01:00.0","numvfs":"x"}' | grep -c InvalidParameter)" 1 \
                "svffd refuses a malformed count as InvalidParameter"
}

case_3() {
        expect_rc 3 "no socket" "$SVFFCTL" --socket "$T/nonexistent.sock" list
        # A stopped svffd accepts connections (the listen backlog) and
        # answers nothing: an explicit --timeout must end every command.
        kill -STOP "$SVFFD_PID"
        for args in "list" "status" "init $PF 2" "reconf $PF 2" "reconf $PF 2 --dry-run" "release $VF" \
                    "attach $VF vm1" "detach $VF" "pause $VF" "unpause $VF"; do
                start=$(date +%s)
                # (timeout 10: a command that ignores --timeout fails, 124, instead of hanging)
                expect_rc 3 "--timeout=1 $args with svffd stopped" timeout 10 "$SVFFCTL" --socket "$SOCK" --timeout=1 $args
                [ $(($(date +%s) - start)) -le 5 ] || fail "--timeout=1 $args took $(($(date +%s) - start)) s"
                grep -q "timeout" "$T/err" || fail "--timeout=1 $args: $(cat "$T/err")"
        done
        grep -q "continues in svffd" "$T/err" || fail "a timed-out change does not say it continues: $(cat "$T/err")"
        kill -CONT "$SVFFD_PID"
        # Lost mid-way: monitor --no-reconnect when svffd stops.
        "$SVFFCTL" --socket "$SOCK" monitor --no-reconnect > "$T/mon.out" 2> "$T/mon.err" &
        mon=$!
        BG_PIDS="$mon"
        wait_for grep -q subscribed "$T/mon.out" || fail "monitor did not subscribe"
        # Its times: the local zone with its offset, or UTC with --utc.
        TZ=UTC-3 "$SVFFCTL" --socket "$SOCK" monitor > "$T/mon-tz.out" 2>&1 & tz=$!
        "$SVFFCTL" --socket "$SOCK" monitor --utc > "$T/mon-utc.out" 2>&1 & utc=$!
        BG_PIDS="$mon $tz $utc"
        wait_for grep -q subscribed "$T/mon-tz.out" || fail "monitor in UTC+3 did not subscribe"
        wait_for grep -q subscribed "$T/mon-utc.out" || fail "monitor --utc did not subscribe"
        kill $tz $utc
        BG_PIDS="$mon"
        grep -qE '^[0-9-]{10}T[0-9:]{8}\.[0-9]{3}\+0300 subscribed' "$T/mon-tz.out" ||
                fail "monitor's time in the local zone (UTC+3): $(cat "$T/mon-tz.out")"
        grep -qE '^[0-9-]{10}T[0-9:]{8}\.[0-9]{3}Z subscribed' "$T/mon-utc.out" ||
                fail "monitor --utc's time: $(cat "$T/mon-utc.out")"
        stop_svffd TERM || fail "svffd exit status"
        rc=0; wait $mon || rc=$?
        BG_PIDS=""
        expect_eq "$rc" 3 "monitor --no-reconnect when svffd stops"
        start_svffd
}

case_4() {
        # The socket as svffd.socket makes it: root and the admin group only.
        chmod 0660 "$SOCK"
        rc=0; as_nobody list > "$T/out" 2> "$T/err" || rc=$?
        expect_eq "$rc" 4 "EACCES on the socket"
        grep -qi "permission denied" "$T/err" || fail "EACCES message: $(cat "$T/err")"
        # svffd refuses a change to a user who may connect.
        chmod 0666 "$SOCK"
        rc=0; as_nobody init $PF 2 > "$T/out" 2> "$T/err" || rc=$?
        expect_eq "$rc" 4 "PermissionDenied from svffd"
        chmod 0660 "$SOCK"
}

# status_rc: what 'status --quiet' exits with now.
status_rc() { rc=0; ctl status --quiet || rc=$?; echo $rc; }
status_is() { [ "$(status_rc)" = "$1" ]; }

case_5() {
        # Drift: a VF unbound from vfio-pci behind svffd's back (seen once
        # its picture is list_max_age_msec old).
        printf '%s' "$VF" > "$SYS/bus/pci/drivers/vfio-pci/unbind"
        wait_for status_is 5 || fail "status exits $(status_rc) with drift, svffctl(8) says 5: $(ctl status)"
        expect_rc 5 "status with drift" ctl status
        grep -q "driver-changed" "$T/out" || fail "status with drift: $(cat "$T/out")"
        expect_rc 5 "status --json with drift" ctl status --json
        jget 'd["drift"][0]["kind"]' < "$T/out" | grep -qx driver-changed || fail "status --json: $(cat "$T/out")"
        expect_rc 5 "status --quiet with drift" ctl status --quiet
        [ ! -s "$T/out" ] || fail "status --quiet printed: $(cat "$T/out")"
        expect_rc 5 "status --wait with drift" ctl status --wait
        ctl init $PF 4 >/dev/null || fail "init to rebind the VF"
        wait_for status_is 0 || fail "status exits $(status_rc) once the VF is back: $(ctl status)"
        # A configuration reload that failed: svffd runs the previous one.
        cp "$T/svff.conf" "$T/svff.conf.good" 2>/dev/null || echo '{}' > "$T/svff.conf.good"
        echo '{ "workers": "many" }' > "$T/svff.conf"
        kill -HUP "$SVFFD_PID"
        wait_for status_is 5 || fail "status exits $(status_rc) after a failed reload: $(ctl status)"
        expect_rc 5 "status after a failed reload" ctl status
        grep -q "reload failed" "$T/out" || fail "status after a failed reload: $(cat "$T/out")"
        cp "$T/svff.conf.good" "$T/svff.conf"
        kill -HUP "$SVFFD_PID"
        wait_for status_is 0 || fail "status exits $(status_rc) after a good reload: $(ctl status)"
}

case_130() {
        # Slow enough to interrupt: 150 ms per VF created.
        pcisim_ctl "latency vf_enable 150000"
        ctl init $PF 0 >/dev/null || fail "init 0"
        "$SVFFCTL" --socket "$SOCK" init $PF 24 > "$T/init.out" 2> "$T/init.err" &
        init=$!
        BG_PIDS="$init"
        wait_for grep -q "phase numvfs" "$T/init.err" || fail "no progress from init: $(cat "$T/init.err")"
        kill -INT $init
        rc=0; wait $init || rc=$?
        BG_PIDS=""
        expect_eq "$rc" 130 "init interrupted with Ctrl-C"
        grep -q "the operation continues in svffd; follow it with \`svffctl monitor\`" "$T/init.err" ||
                fail "Ctrl-C message: $(cat "$T/init.err")"
        # It did continue.
        wait_for_s 30 sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 24 ]" ||
                fail "the init stopped with svffctl"
        pcisim_ctl "latency vf_enable 0"
}

# The codes svffctl(8) documents, in its order.
codes=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$MAN" | awk '/^\.TP/ { getline; print }')
[ -n "$codes" ] || fail "no EXIT STATUS table in $MAN"
note "svffctl(8) documents exit codes: $(echo $codes)"
for code in $codes; do
        case $code in
        *[!0-9]*) fail "EXIT STATUS entry '$code' is not a number" ;;
        esac
        command -v "case_$code" >/dev/null || fail "svffctl(8) documents exit code $code; this test has no case for it"
        note "exit code $code"
        "case_$code"
done
# And every code svffctl uses is in the page.
for code in $(sed -n 's/^#define EXIT_[A-Z_]* \([0-9]*\)$/\1/p' "$top_srcdir/cli/cli.h"); do
        echo "$codes" | grep -qx "$code" || fail "cli/cli.h uses exit code $code, svffctl(8) does not document it"
done
echo "PASS"
