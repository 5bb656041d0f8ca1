#!/bin/sh
# svffctl --json: errors are one JSON object on stderr with the error name
# and parameters (svffd's errors and svffctl's own); init and reconf print
# the same JSON lines (progress events, the result last); and monitor
# follows svffd across a restart unless --no-reconnect (also when it
# got svffd's shutdown event, the last of its stream).
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
start_pcisim qdma
start_svffd

# check_error NAME CMD...: CMD fails and its stderr is exactly one JSON
# object naming NAME, with a message among its parameters.
check_error() {
        name=$1
        shift
        rc=0
        "$@" > "$T/out" 2> "$T/err" || rc=$?
        [ "$rc" -ne 0 ] || fail "'$*' succeeded"
        python3 - "$T/err" "$name" <<'PY' || fail "'$*': stderr is not one JSON error: $(cat "$T/err")"
import json, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.strip()]
assert len(lines) == 1, lines
e = json.loads(lines[0])
assert e["error"] == sys.argv[2], e
assert isinstance(e["parameters"], dict) and e["parameters"]["message"], e
PY
}

check_error io.svff.NoSuchDevice ctl --json init 0000:09:00.0 2
expect_eq "$(jget 'd["parameters"]["device"]' < "$T/err")" 0000:09:00.0 "NoSuchDevice parameters"
check_error io.svff.TooManyVfs ctl init $PF 300 --json
check_error io.svff.NotManaged ctl --json release 0000:01:00.4
check_error io.svff.ctl.UsageError ctl --json init bogus 2
check_error io.svff.ctl.UsageError ctl --json init $PF -1
check_error io.svff.ctl.UsageError ctl --json frobnicate
check_error io.svff.ctl.Unreachable "$SVFFCTL" --json --socket "$T/nonexistent.sock" status
expect_eq "$(jget 'd["parameters"]["socket"]' < "$T/err")" "$T/nonexistent.sock" "Unreachable parameters"

# check_lines FILE: every line of FILE is a JSON object; the progress
# events have "event", the last line is the result and has none.
check_lines() {
        python3 - "$1" <<'PY' || fail "JSON lines of $1: $(cat "$1")"
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert all(isinstance(d, dict) for d in docs), docs
assert "event" not in docs[-1] or not isinstance(docs[-1]["event"], str), docs[-1]
assert all(isinstance(d.get("event"), str) for d in docs[:-1]), docs
assert len(docs) >= 2, "no progress lines"
PY
}

ctl --json init $PF 4 > "$T/init.json" || fail "init --json"
check_lines "$T/init.json"
expect_eq "$(tail -n 1 "$T/init.json" | jget 'd["numvfs"]')" 4 "init result"
expect_eq "$(grep -c '"event":"vf-bound"' "$T/init.json")" 4 "vf-bound lines of init --json"
ctl --json reconf $PF 6 > "$T/reconf.json" || fail "reconf --json"
check_lines "$T/reconf.json"
expect_eq "$(tail -n 1 "$T/reconf.json" | jget 'd["numvfs"]')" 6 "reconf result"

note "monitor reconnects across a restart of svffd"
# Straight to svffd's socket: the validating proxy (daemon-lib.sh) stops
# and starts with svffd, and this monitor must meet svffd's own restart.
"${SVFFCTL_REAL:-$SVFFCTL}" --socket "$SOCK" monitor --json > "$T/mon.out" 2> "$T/mon.err" &
MON=$!
BG_PIDS="$MON"
wait_for grep -q subscribed "$T/mon.out" || fail "monitor did not subscribe"
stop_svffd TERM || fail "svffd exit status"
wait_for grep -q reconnecting "$T/mon.err" || fail "monitor did not say it reconnects: $(cat "$T/mon.err")"
kill -0 $MON 2>/dev/null || fail "monitor exited when svffd stopped"
grep -q '"event":"shutdown"' "$T/mon.out" || fail "monitor did not get svffd's shutdown event: $(cat "$T/mon.out")"
start_svffd
wait_for grep -q reconnected "$T/mon.err" || fail "monitor did not reconnect: $(cat "$T/mon.err")"
# Subscribed anew (the reply, not just the connection) before the init:
# events before the subscription are not the monitor's to see.
wait_for sh -c "[ \"\$(grep -c '\"event\":\"subscribed\"' '$T/mon.out')\" -ge 2 ]" ||
        fail "monitor did not subscribe again: $(cat "$T/mon.out")"
ctl init $PF 2 >/dev/null 2>&1 || fail "init after the restart"
wait_for grep -q init-done "$T/mon.out" || fail "monitor missed the init after the restart: $(cat "$T/mon.out")"
expect_eq "$(grep -c '"event":"subscribed"' "$T/mon.out")" 2 "subscriptions"
python3 - "$T/mon.err" <<'PY' || fail "monitor --json notices are not JSON: $(cat "$T/mon.err")"
import json, sys
for l in open(sys.argv[1]):
    assert "notice" in json.loads(l)
PY
kill $MON; BG_PIDS=""

note "monitor falls behind: it says how many events were dropped and subscribes again; --no-reconnect exits 1"
# svffd's smallest backlog, and a reader that does not read: monitor's
# output goes to a FIFO read only once the inits are done.
stop_svffd TERM || fail "svffd exit status"
echo '{ "limits": { "monitor_backlog_bytes": 4096 } }' > "$T/svff.conf"
start_svffd
for how in reconnect no-reconnect; do
        mkfifo "$T/mon.$how"
        opt=""; [ $how = no-reconnect ] && opt=--no-reconnect
        "${SVFFCTL_REAL:-$SVFFCTL}" --socket "$SOCK" monitor --json $opt > "$T/mon.$how" 2> "$T/mon.$how.err" &
        MON=$!
        BG_PIDS="$MON"
        exec 3< "$T/mon.$how"
        for n in 64 0 64 0 64 0 64 0 64 0 64 0; do ctl init $PF $n >/dev/null || fail "init $PF $n"; done
        cat <&3 > "$T/mon.$how.out" &
        BG_PIDS="$MON $!"
        exec 3<&-
        wait_for grep -q '"event":"events-dropped"' "$T/mon.$how.out" ||
                fail "monitor ($how) never fell behind: $(tail -c 300 "$T/mon.$how.out")"
        if [ $how = reconnect ]; then
                wait_for grep -q "fell behind svffd's events: [0-9]* were dropped; subscribing again" \
                        "$T/mon.$how.err" || fail "monitor did not say it fell behind: $(cat "$T/mon.$how.err")"
                # Drained now: subscribed again, it follows what comes next.
                ctl init $PF 2 >/dev/null || fail "init after the drop"
                after_drop() { python3 - "$T/mon.$how.out" <<'PY'
import json, sys
ev = [json.loads(l).get("event") for l in open(sys.argv[1]) if l.strip()]
last = len(ev) - 1 - ev[::-1].index("events-dropped")
sys.exit(0 if "subscribed" in ev[last:] and "init-done" in ev[last:] else 1)
PY
                }
                wait_for after_drop || fail "monitor did not follow svffd again: $(tail -n 3 "$T/mon.$how.out")"
                kill -0 $MON 2>/dev/null || fail "monitor exited after falling behind"
                kill $MON
                wait $MON 2>/dev/null || true
        else
                rc=0; wait $MON || rc=$?
                expect_eq "$rc" 1 "monitor --no-reconnect's exit status after falling behind"
                jget 'd["error"]' < "$T/mon.$how.err" | grep -qx io.svff.ctl.EventsDropped ||
                        fail "monitor --no-reconnect's error: $(cat "$T/mon.$how.err")"
        fi
        BG_PIDS=""
done
echo "PASS"
