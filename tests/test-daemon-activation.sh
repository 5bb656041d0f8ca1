#!/bin/sh
# Socket activation through systemd-socket-activate (FileDescriptorName
# varlink), READY=1 and STATUS= on a datagram socket set as NOTIFY_SOCKET,
# WATCHDOG=1 when WATCHDOG_USEC asks for it, and SIGHUP reloading the
# config (a bad file keeps the running one and shows in status).
. "$(dirname "$0")/daemon-lib.sh"

command -v systemd-socket-activate >/dev/null || skip "systemd-socket-activate not installed"

start_pcisim qdma
mkdir -p "$STATE"

# A notify peer: collects datagrams until it has seen READY=1 and WATCHDOG=1.
python3 - "$T/notify.sock" "$T/notify.log" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
seen = set()
with open(sys.argv[2], "w") as log:
    while not {"READY=1", "WATCHDOG=1"} <= seen:
        msg = s.recv(4096).decode()
        for line in msg.split("\n"):
            seen.add(line)
            log.write(line + "\n")
            log.flush()
PY
NOTIFY_PID=$!
BG_PIDS="$NOTIFY_PID"
wait_for test -S "$T/notify.sock" || fail "notify peer did not start"

systemd-socket-activate -l "$SOCK" --fdname=varlink \
        -E NOTIFY_SOCKET="$T/notify.sock" -E WATCHDOG_USEC=400000 $(sanitizer_env) \
        "$SVFFD" --state-dir "$STATE" --sysfs-root "$SYS" --config "$T/svff.conf" \
        --socket "$T/not-this-one.sock" --log-level debug >>"$T/svffd.log" 2>&1 &
SVFFD_PID=$!
wait_for test -S "$SOCK" || fail "systemd-socket-activate did not listen"

# The first connection starts svffd on the passed socket.
ctl list --json > "$T/list.json" || fail "list through the activated socket"
expect_eq "$(jget 'd["pfs"][0]["address"]' < "$T/list.json")" 0000:01:00.0 "PF through activation"
[ ! -e "$T/not-this-one.sock" ] || fail "svffd bound --socket instead of using the passed socket"
grep -q "passed by systemd" "$T/svffd.log" || fail "svffd did not report using the passed socket"
# Activation shown, the rest of svffctl's calls are checked against the
# interface (not before: varlink-check's first call would start svffd).
varlink_check start

wait "$NOTIFY_PID" || fail "no READY=1 and WATCHDOG=1: $(cat "$T/notify.log" 2>/dev/null)"
BG_PIDS=""
grep -qx "READY=1" "$T/notify.log" || fail "READY=1 missing"
grep -q "^STATUS=" "$T/notify.log" || fail "STATUS= missing"

# SIGHUP: a valid change is applied, an invalid file keeps the old config.
ctl_status --json > "$T/status.json"
expect_eq "$(jget 'd["config_error"]' < "$T/status.json")" None "config error before reload"
printf '{ "log_level": "info", "limits": { "idle_timeout_sec": 30 } }\n' > "$T/svff.conf"
kill -HUP "$SVFFD_PID"
wait_for grep -q "Configuration reloaded" "$T/svffd.log" || fail "reload not logged"
printf '{ "log_level": "chatty",\n  "bogus_key": 1 }\n' > "$T/svff.conf"
kill -HUP "$SVFFD_PID"
wait_for grep -q "keeping the running one" "$T/svffd.log" || fail "bad reload not logged"
ctl_status --json > "$T/status.json"
jget 'd["config_error"]' < "$T/status.json" | grep -q "svff.conf" || fail "status does not name the bad config file"
ctl status | grep -q "reload failed" || fail "human status lacks the config error"
ctl list >/dev/null || fail "svffd stopped serving after a bad reload"

stop_svffd TERM || fail "activated svffd exited non-zero on SIGTERM"
echo "PASS"
