#!/bin/sh
# One vocabulary on svffctl's side: svffctl(8) has a glossary; "release"
# is only the command (--force drops an assignment), "mode" only the
# reconf mode (a pause is native or detach), in --help and in monitor's
# event lines; guest addresses are written BB:SS.F as they are typed;
# in JSON, List names a PF's vendor and device in vendor_name and
# device_name, as device is an address everywhere else (the old keys
# are kept, deprecated, for one release).
. "$(dirname "$0")/daemon-lib.sh"

MAN="$top_srcdir/man/svffctl.8"
glossary=$(sed -n '/^\.SH GLOSSARY/,/^\.SH /p' "$MAN")
[ -n "$glossary" ] || fail "svffctl(8) has no GLOSSARY"
for term in "release" "drop" "recorded" "original driver" "guest address" "native pause, detach pause" "reconf mode" "owner"; do
        echo "$glossary" | grep -q "^\.B $term\$" || fail "the glossary lacks '$term'"
done

# Each command that changes the host says who may run it, in its own
# entry of svffctl(8) (an entry runs from one .TP to the next).
sed -n '/^\.SH COMMANDS/,/^\.SH [^C]/p' "$MAN" | awk '
        /^\.TP/ { if (cmd != "") print cmd, has; getline; cmd = $2; gsub(/"/, "", cmd); has = 0; next }
        /Needs root or the admin group/ { has = 1 }
        END { if (cmd != "") print cmd, has }' > "$T/man-entries"
for c in init reconf reprogram release attach detach pause; do
        grep -q "^$c " "$T/man-entries" || fail "svffctl(8) has no entry for $c"
        grep -q "^$c 0" "$T/man-entries" && fail "svffctl(8)'s entry for $c does not say it needs root or the admin group"
done

# --help: release is the command's word only, mode reconf's only.
"$SVFFCTL" --help > "$T/help"
for c in list status init release monitor attach detach pause unpause reconf config; do
        "$SVFFCTL" $c --help > "$T/help.$c" || fail "$c --help"
done
# (the command may be named; no other thing "releases" or "is released")
grep -iE "releas(es|ed|ing)|release (it|them)" "$T/help" "$T"/help.* > "$T/bad" &&
        fail "release with another meaning in --help: $(cat "$T/bad")"
for c in pause unpause attach; do
        grep -qi "mode" "$T/help.$c" && fail "$c --help speaks of a mode: $(grep -i mode "$T/help.$c")"
done
grep -q "native pause" "$T/help.pause" || fail "pause --help does not name the native pause"
grep -q "BB:SS.F" "$T/help.attach" || fail "attach --help lacks the guest address form"

# Monitor: a reconf's mode is reconf-mode=, never a bare mode=.
PF=0000:01:00.0
start_pcisim qdma
start_svffd
ctl init $PF 2 >/dev/null 2>&1 || fail "init"
"$SVFFCTL" --socket "$SOCK" monitor > "$T/mon.out" &
BG_PIDS=$!
wait_for grep -q subscribed "$T/mon.out" || fail "monitor did not subscribe"
ctl reconf $PF 3 >/dev/null 2>&1 || fail "reconf"
wait_for grep -q reconf-done "$T/mon.out" || fail "no reconf-done: $(cat "$T/mon.out")"
grep -q "reconf-started .*reconf-mode=pause" "$T/mon.out" || fail "reconf-started line: $(cat "$T/mon.out")"
grep -q " mode=" "$T/mon.out" && fail "a bare mode= in monitor: $(grep ' mode=' "$T/mon.out")"
kill $BG_PIDS; BG_PIDS=""

# Plurals: "1 VF", "0 VFs", in init's line and in its progress.
ctl init $PF 1 > "$T/out" 2> "$T/err" || fail "init 1: $(cat "$T/err")"
grep -qx "PF $PF: 1 VF on vfio-pci." "$T/out" || fail "init 1: $(cat "$T/out")"
grep -q "1 VFs" "$T/out" "$T/err" && fail "'1 VFs': $(cat "$T/out" "$T/err")"
ctl init $PF 0 > "$T/out" 2> "$T/err" || fail "init 0: $(cat "$T/err")"
grep -qx "PF $PF: 0 VFs on vfio-pci." "$T/out" || fail "init 0: $(cat "$T/out")"

# JSON: a VF's 'recorded' is the RECORDED column's word, in List and in
# Init's reply ('managed', its old name, is kept for one release).
ctl init $PF 2 --json > "$T/init.json" 2>/dev/null || fail "init 2 --json"
expect_eq "$(tail -n 1 "$T/init.json" | jget '[(v["recorded"], v["managed"]) for v in d["vfs"]]')" \
        "[(True, True), (True, True)]" "Init's VFs recorded"
ctl list $PF --json > "$T/list.json" || fail "list --json"
expect_eq "$(jget '[(v["recorded"], v["managed"]) for v in d["pfs"][0]["vfs"]]' < "$T/list.json")" \
        "[(True, True), (True, True)]" "List's VFs recorded"
ctl list $PF -o device,recorded | grep -q "^$(sys_vf $PF 0) *yes$" || fail "RECORDED: $(ctl list $PF -o device,recorded)"

# JSON: the names under *_name; events' device is the address.
ctl list $PF --json > "$T/list.json" || fail "list --json"
jget 'd["pfs"][0].get("device_name")' < "$T/list.json" | grep -qv '^None$' || fail "no device_name in List: $(cat "$T/list.json")"
expect_eq "$(jget 'd["pfs"][0]["device_name"] == d["pfs"][0]["device"]' < "$T/list.json")" True \
        "the deprecated device key"
jget '"vendor_name" in d["pfs"][0]' < "$T/list.json" | grep -q True || fail "no vendor_name in List"
# class is a VF's device class; a PF's PCI class code is pci_class (its
# old key class kept for one release).
expect_eq "$(jget 'd["pfs"][0]["pci_class"], d["pfs"][0]["class"]' < "$T/list.json")" "120000 120000" \
        "a PF's PCI class code"
echo "PASS"
