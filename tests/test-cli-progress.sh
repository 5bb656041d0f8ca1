#!/bin/sh
# Progress of init and reconf (svffctl's side): without a terminal one
# line per phase, not one per VF; on a real terminal (tmux, read with
# capture-pane) a line that moves, with the phase, the counts and an ETA,
# during a 252-VF init on the scale scenario slowed down by pcisim's
# latencies; the lines of a monitor running on the same terminal never
# glue onto it; and a reconf to 252 VFs shows its numvfs write's VFs
# so far, as events (--json) and on its line.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:20:00.0
N=252
start_pcisim scale
start_svffd
# 10 ms per VF created and 8 ms per bind and per probe: about 2.5 s for
# the count, 4 s for the binding, so the whole test stays within a
# minute.
pcisim_ctl "latency vf_enable 10000"
pcisim_ctl "latency bind 8000"
pcisim_ctl "latency probe 8000"

note "no terminal: one line per phase"
ctl init $PF $N > "$T/init.out" 2> "$T/init.err" || fail "init: $(cat "$T/init.err")"
expect_eq "$(grep -c 'phase numvfs' "$T/init.err")" 1 "numvfs phase lines"
expect_eq "$(grep -c 'phase bind' "$T/init.err")" 1 "bind phase lines"
expect_eq "$(wc -l < "$T/init.err")" 2 "progress lines for $N VFs"
grep -q "PF $PF: $N VFs on vfio-pci" "$T/init.out" || fail "init result: $(cat "$T/init.out")"
ctl init $PF 0 >/dev/null 2>&1 || fail "init 0"

note "reconf, no terminal: its numvfs write's VFs so far, as events apart from its steps"
ctl init $PF 100 >/dev/null 2>&1 || fail "init 100"
ctl reconf $PF $N --json > "$T/reconf.json" 2> "$T/reconf.err" || fail "reconf: $(cat "$T/reconf.err")"
python3 - "$T/reconf.json" $N <<'PY' || fail "the reconf's numvfs progress: $(grep numvfs-progress "$T/reconf.json")"
import json, sys
text, n = open(sys.argv[1]).read(), int(sys.argv[2])
dec, i, evs = json.JSONDecoder(), 0, []
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    o, i = dec.raw_decode(text, i)
    evs.append(o)
prog = [e for e in evs if e.get("event") == "numvfs-progress"]
up = [e for e in prog if e["numvfs"] == n]
# the write to N advancing, counted apart from the plan's steps
assert len(up) >= 2, prog
assert all(e["phase"] == "numvfs" and e["deadline_msec"] > 0 and 0 <= e["vfs"] <= n for e in prog), prog
assert [e["vfs"] for e in up] == sorted(set(e["vfs"] for e in up)), up
steps = [e for e in evs if e.get("event") == "reconf-step"]
assert steps and all(e["total"] == steps[-1]["total"] and e["done"] <= e["total"] for e in prog), prog
PY
varlink_check stop || fail "svffd's replies break its interface"
varlink_check start
ctl init $PF 0 >/dev/null 2>&1 || fail "init 0"

command -v tmux >/dev/null || skip "tmux is not installed (scripts/setup-deps installs it): the terminal part cannot run"
TMUX_SOCK="$T/tmux.sock"
tm() { tmux -S "$TMUX_SOCK" "$@"; }
tm new-session -d -x 200 -y 80 "env -i HOME=$T TERM=screen PATH=$PATH sh" || skip "tmux cannot start a session here"
tm_cleanup() { tm kill-server 2>/dev/null; cleanup; }
trap tm_cleanup EXIT

# on_terminal OP COMMAND: types COMMAND on the terminal, collects the
# progress lines of OP ("OP PF ...") into $T/seen as they are redrawn,
# every 0.1 s until COMMAND ends, and the whole screen into $T/screen;
# fails unless COMMAND exited 0.
on_terminal() {
        tm send-keys "clear; $2; echo $1-RC=\$?" Enter
        i=0
        : > "$T/seen"
        while ! tm capture-pane -p | grep -q "$1-RC=[0-9]"; do
                tm capture-pane -p | grep "^$1 $PF " >> "$T/seen" || true
                i=$((i + 1))
                [ $i -lt 300 ] || fail "$1 on the terminal did not end: $(tm capture-pane -p)"
                sleep 0.1
        done
        tm capture-pane -p -S - > "$T/screen"
        grep -q "$1-RC=0" "$T/screen" || fail "$1 on the terminal failed: $(cat "$T/screen")"
}

note "a terminal: a moving progress line, monitor lines apart from it"
# The monitor ends with the init: left running, it would wait for its
# svffd forever, after the test.
on_terminal init "'$SVFFCTL' --socket '$SOCK' monitor & m=\$!; sleep 1; '$SVFFCTL' --socket '$SOCK' init $PF $N; r=\$?; kill \$m; (exit \$r)"
grep -q "numvfs" "$T/seen" || fail "no numvfs phase shown: $(sort -u "$T/seen")"
grep -q "bind .*/$N VFs" "$T/seen" || fail "no bind counts shown: $(sort -u "$T/seen")"
grep -q "ETA" "$T/seen" || fail "no ETA shown: $(sort -u "$T/seen")"
# It moved: several different counts during the bind phase, and the
# elapsed time ticking during the numvfs write.
[ "$(grep -oE "bind [0-9]+/$N VFs" "$T/seen" | sort -u | wc -l)" -ge 3 ] ||
        fail "the bind count did not move: $(sort -u "$T/seen")"
[ "$(grep "numvfs" "$T/seen" | sort -u | wc -l)" -ge 2 ] ||
        fail "the numvfs phase showed one frozen line: $(sort -u "$T/seen")"
# ...and the VFs the write has made so far, against its deadline.
[ "$(grep -oE "numvfs [0-9]+/$N VFs" "$T/seen" | sort -u | wc -l)" -ge 2 ] ||
        fail "the numvfs write's count did not move: $(sort -u "$T/seen")"
grep -qE "writing $N to sriov_numvfs: [0-9]+ so far, deadline [0-9]+s" "$T/seen" ||
        fail "the numvfs write's progress does not show its deadline: $(sort -u "$T/seen")"
# Monitor and progress never share a line: every monitor line begins
# with its timestamp, and no line holds both.
python3 - "$T/screen" <<'PY' || fail "monitor and progress lines glued together: $(cat "$T/screen")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
ev = [l for l in lines if re.search(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d{4}) ", l)]
assert len(ev) >= 40, len(ev)
for l in ev:
    assert re.match(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d{4}) ", l), l
    assert not re.search(r"init \S+ [|/\\-] ", l), l
PY
grep -q "PF $PF: $N VFs on vfio-pci" "$T/screen" || fail "result line: $(cat "$T/screen")"

note "a terminal: reconf's line shows its numvfs write advancing"
ctl init $PF 100 >/dev/null 2>&1 || fail "init 100"
on_terminal reconf "'$SVFFCTL' --socket '$SOCK' reconf $PF $N"
[ "$(grep -oE "writing $N to sriov_numvfs: [0-9]+ so far, deadline [0-9]+s" "$T/seen" | sort -u | wc -l)" -ge 2 ] ||
        fail "the reconf's numvfs write did not show its VFs moving: $(sort -u "$T/seen")"
echo "PASS"
