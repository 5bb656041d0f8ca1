#!/bin/sh
# svffd's metrics file (metrics_textfile) as Prometheus sees it: Debian's
# node_exporter, on a loopback port with only its textfile collector,
# reads svffd's output directory; the test scrapes it with curl, has
# promtool lint each scrape, and checks the values after an init, a
# failed provisioning, an attach, a reconf, drift made behind svffd's
# back (a device class's too, which no event announces), and a stop. The alert rules shipped in contrib/prometheus are
# checked and unit-tested with promtool, and the Grafana dashboard in
# contrib/grafana has its queries parsed by promtool and their metrics
# found in the scrape.
. "$(dirname "$0")/reconf-lib.sh"

NODE_EXPORTER=$(command -v prometheus-node-exporter) ||
        skip "prometheus-node-exporter is not installed (scripts/setup-deps --test installs it)"
PROMTOOL=$(command -v promtool) || skip "promtool is not installed (package prometheus; scripts/setup-deps --test)"
command -v curl >/dev/null || skip "curl is needed to scrape node_exporter"
RULES="${top_srcdir:-$(dirname "$0")/..}/contrib/prometheus/svff-alerts.yml"
RULES_TEST="${top_srcdir:-$(dirname "$0")/..}/contrib/prometheus/svff-alerts-test.yml"

note "the alert rules pass promtool's check and their unit tests"
"$PROMTOOL" check rules "$RULES" > "$T/rules.out" 2>&1 || fail "promtool check rules: $(cat "$T/rules.out")"
"$PROMTOOL" test rules "$RULES_TEST" > "$T/rules.out" 2>&1 || fail "promtool test rules: $(cat "$T/rules.out")"

# The Grafana dashboard's queries: each parses as PromQL (promtool checks
# them as recording rules, the dashboard's $instance made a regex), and
# each metric they name is one svffd writes (checked after the first
# scrape, below).
DASHBOARD="${top_srcdir:-$(dirname "$0")/..}/contrib/grafana/svff-dashboard.json"
python3 - "$DASHBOARD" "$T/dashboard-rules.yml" "$T/dashboard-metrics" <<'PY' || fail "reading the dashboard $DASHBOARD"
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
assert exprs, "no queries"
with open(sys.argv[2], "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        f.write("      - record: dashboard_query_%d\n        expr: %s\n" % (i, json.dumps(e.replace("$instance", ".+"))))
names = set(n for e in exprs for n in re.findall(r"\bsvff_[a-z_]+", e))
names.add(re.search(r"label_values\((\w+)", d["templating"]["list"][0]["query"]).group(1))
open(sys.argv[3], "w").write("\n".join(sorted(names)) + "\n")
PY
"$PROMTOOL" check rules "$T/dashboard-rules.yml" > "$T/rules.out" 2>&1 ||
        fail "the dashboard's queries do not parse: $(cat "$T/rules.out")"

TEXTFILE="$T/textfile"
mkdir -p "$TEXTFILE"
# A free port on the loopback (the kernel picks it; node_exporter binds
# it a moment later).
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$PORT" --collector.disable-defaults --collector.textfile \
        --collector.textfile.directory="$TEXTFILE" --web.disable-exporter-metrics > "$T/node-exporter.log" 2>&1 &
BG_PIDS="$BG_PIDS $!"
wait_for curl -sf "http://127.0.0.1:$PORT/metrics" ||
        fail "node_exporter did not serve on 127.0.0.1:$PORT: $(cat "$T/node-exporter.log")"

# scrape: node_exporter's page into $T/scrape, linted by promtool.
scrape() {
        curl -sf "http://127.0.0.1:$PORT/metrics" > "$T/scrape" || fail "scraping node_exporter failed"
        "$PROMTOOL" check metrics < "$T/scrape" > "$T/lint" 2>&1 ||
                fail "promtool check metrics: $(cat "$T/lint"); the scrape: $(cat "$T/scrape")"
}
# value NAME [LABEL=VALUE,...]: the sample of NAME with exactly those
# labels in the last scrape, or "none".
value() {
        python3 - "$T/scrape" "$1" "${2:-}" <<'PY'
import re, sys
path, name, want = sys.argv[1:]
want = dict(kv.split("=", 1) for kv in want.split(",") if kv)
for line in open(path):
    if line.startswith("#"):
        continue
    m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line.rstrip("\n"))
    if not m or m.group(1) != name:
        continue
    labels = dict((k, v.encode().decode("unicode_escape"))
                  for k, v in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
    if labels == want:
        print(m.group(3))
        sys.exit(0)
print("none")
PY
}
# is NAME LABELS VALUE: scrapes and compares (for wait_for).
is() { scrape; [ "$(value "$1" "$2")" = "$3" ]; }
# expect NAME LABELS VALUE WHAT: waits for the file (written at most
# once a second) to say so.
expect() {
        wait_for is "$1" "$2" "$3" ||
                fail "$4: $1{$2} is $(value "$1" "$2"), not $3; the scrape: $(grep -v '^#' "$T/scrape")"
}
# The store's generation (0 before its first commit: no file yet).
generation() { if [ -e "$STATE/store.json" ]; then store_py 'print(d["generation"])'; else echo 0; fi; }

DOMAINS="vm1"
define $DOMAINS
start_pcisim qdma
PF=0000:01:00.0
# The PF's queue count is the class's, recorded with each VF's state.
svff_conf ", \"metrics_textfile\": \"$TEXTFILE/svff.prom\", \"metrics_poll_sec\": 1,
  \"policies\": { \"q\": { \"match\": { \"address\": \"$PF\" }, \"qdma\": { \"qmax\": 256 } } }"
# The third VF's provisioning fails (a test build's fault injection; the
# QDMA stand-in itself never fails).
export SVFF_FAULT=fail-provision-3
# svffd.service's UMask=: the file must still be readable by
# node_exporter, which runs as a user of its own.
old_umask=$(umask)
umask 027
start_connected
umask "$old_umask"
unset SVFF_FAULT
fault_build=yes
varlink_call io.svff.Debug.InjectUevent '{}' | grep -q InterfaceNotFound && fault_build=no

note "svffd up: the file is there, its PF at 0 VFs"
expect svff_up "version=$(ctl --version | awk '{print $NF}')" 1 "svff_up"
expect svff_pf_vfs "owner=,pf=$PF" 0 "VFs before init"
expect svff_pf_totalvfs "owner=,pf=$PF" 252 "totalvfs"
expect svff_store_generation "" "$(generation)" "store generation"
expect svff_operation_in_progress "" 0 "operations"
expect svff_assignments state=attached 0 "attached assignments"
expect svff_assignments state=held 0 "held assignments (paused by svffd)"
expect svff_drift kind=assignment-without-vf 0 "drift"
expect svff_reconf_duration_seconds_count "" 0 "reconfs"
expect svff_class_provision_failures_total "" 0 "provision failures"
[ "$(stat -c %a "$TEXTFILE/svff.prom")" = 644 ] || fail "svff.prom is mode $(stat -c %a "$TEXTFILE/svff.prom")"
[ -e "$TEXTFILE/svff.prom.tmp" ] && fail "the temporary file was left behind"
grep -q 'node_textfile_scrape_error 0' "$T/scrape" || fail "node_exporter could not read svff.prom: $(cat "$T/scrape")"
while read -r name; do
        grep -q "^$name[ {]" "$T/scrape" || fail "the dashboard queries $name, which svffd does not write"
done < "$T/dashboard-metrics"

note "init to 2 VFs"
ctl init $PF 2 > /dev/null || fail "init $PF 2"
expect svff_pf_vfs "owner=operator,pf=$PF" 2 "VFs after init"
expect svff_store_generation "" "$(generation)" "store generation after init"

if [ $fault_build = yes ]; then
        note "init to 4 VFs whose third VF cannot be provisioned"
        ctl init $PF 4 > /dev/null 2>&1 && fail "init $PF 4 succeeded with its provisioning failing"
        expect svff_class_provision_failures_total "" 1 "provision failures after a failed init"
        ctl init $PF 2 > /dev/null || fail "init $PF 2 again"
        expect svff_pf_vfs "owner=operator,pf=$PF" 2 "VFs after init again"
else
        note "not a build with fault points: the provisioning failure is not made"
fi

note "attach a VF to vm1"
VF0=$(sys_vf $PF 0)
ctl attach "$VF0" vm1 --guest-address 05:00.0 > /dev/null || fail "attach $VF0 vm1"
expect svff_assignments state=attached 1 "attached assignments after attach"
expect svff_store_generation "" "$(generation)" "store generation after attach"

note "reconf to 6 VFs, the assignment kept"
ctl reconf $PF 6 > /dev/null || fail "reconf $PF 6"
expect svff_pf_vfs "owner=operator,pf=$PF" 6 "VFs after reconf"
expect svff_reconf_duration_seconds_count "" 1 "reconfs after one"
expect svff_reconf_duration_seconds_bucket 'le=+Inf' 1 "the histogram's +Inf bucket"
# Its domain is defined, not running: no guest went without the VF.
expect svff_domain_device_downtime_seconds_count "" 0 "device downtimes after a reconf of a stopped domain's VF"
expect svff_assignments state=attached 1 "attached assignments after reconf"
expect svff_operation_in_progress "" 0 "operations after reconf"
expect svff_store_generation "" "$(generation)" "store generation after reconf"
sum=$(value svff_reconf_duration_seconds_sum)
python3 -c "import sys; sys.exit(not 0 < float('$sum') < 60)" || fail "reconf duration sum is $sum"
[ $fault_build = yes ] && expect svff_class_provision_failures_total "" 1 "provision failures after the reconf"

note "idle (svffd looks at the host every second), the file is not written again"
mtime=$(stat -c %y "$TEXTFILE/svff.prom")
sleep 3
[ "$(stat -c %y "$TEXTFILE/svff.prom")" = "$mtime" ] || fail "svff.prom was rewritten with nothing changed"

note "a burst of changes is written at most once a second"
# inotify would be neater; the file's inode changes with each rename.
# Watched until 5 s after the burst: a write may wait for the look at the
# host in flight, which a loaded machine (distcheck's parallel tests)
# makes slow.
python3 - "$TEXTFILE/svff.prom" "$T/burst.done" > "$T/inodes" <<'PY' &
import os, sys, time
seen, end = [], time.time() + 60
while time.time() < end:
    if os.path.exists(sys.argv[2]):
        end = min(end, os.stat(sys.argv[2]).st_mtime + 5)
    try:
        i = os.stat(sys.argv[1]).st_ino
    except FileNotFoundError:
        i = None
    if not seen or seen[-1][1] != i:
        seen.append((time.time(), i))
    time.sleep(0.005)
for t, i in seen[1:]:
    print("%.3f" % t)
PY
watcher=$!
for _ in 1 2 3 4 5 6; do
        ctl detach "$VF0" > /dev/null || fail "detach $VF0"
        ctl attach "$VF0" vm1 --guest-address 05:00.0 > /dev/null || fail "attach $VF0 again"
done
touch "$T/burst.done"
wait $watcher
note "$(wc -l < "$T/inodes") write(s) during the burst"
[ -s "$T/inodes" ] || fail "svff.prom was not written during the changes"
python3 - "$T/inodes" <<'PY' || fail "svff.prom was written more often than once a second: $(cat "$T/inodes")"
import sys
t = [float(l) for l in open(sys.argv[1])]
sys.exit(any(b - a < 0.9 for a, b in zip(t, t[1:])))
PY
expect svff_assignments state=attached 1 "attached assignments after the burst"

note "the PF's queue count changed behind svffd's back: class-drift, read within metrics_poll_sec (1 s) with no event"
expect svff_drift kind=class-drift 0 "class drift before the change"
printf 300 > "$SYS/bus/pci/devices/$PF/qdma/qmax" || fail "writing the PF's qdma/qmax"
wait_for_s 5 is svff_drift kind=class-drift 6 ||
        fail "class drift: svff_drift{kind=class-drift} is $(value svff_drift kind=class-drift), not 6"
printf 256 > "$SYS/bus/pci/devices/$PF/qdma/qmax" || fail "writing the PF's qdma/qmax back"
wait_for_s 5 is svff_drift kind=class-drift 0 ||
        fail "class drift gone: svff_drift{kind=class-drift} is $(value svff_drift kind=class-drift), not 0"

note "the VF count changed behind svffd's back: drift, a domain without its VF"
# pcisim sends no uevent: svffd's look every metrics_poll_sec finds it.
printf 0 > "$SYS/bus/pci/devices/$PF/sriov_numvfs" || fail "writing sriov_numvfs"
wait_for_s 5 is svff_drift kind=numvfs-changed 1 ||
        fail "numvfs drift: svff_drift{kind=numvfs-changed} is $(value svff_drift kind=numvfs-changed), not 1"
expect svff_drift kind=assignment-without-vf 1 "assignment-without-vf drift"
expect svff_pf_vfs "owner=operator,pf=$PF" 0 "VFs after the change behind svffd's back"

note "svffd stopped: the file says so"
stop_svffd || fail "svffd exit status"
expect svff_up "version=$(ctl --version | awk '{print $NF}')" 0 "svff_up after the stop"
[ "$(value svff_pf_vfs "owner=operator,pf=$PF")" = none ] || fail "a stopped svffd still reports its PFs"
echo "PASS"
