#!/bin/sh
# Store faults: a truncated, corrupt, wrongly typed or newer-schema store
# makes svffd refuse to start with a message naming the file, and the file
# stays byte for byte as it was. A full disk on commit fails the call
# cleanly (StoreError, sysfs untouched) and the store stays readable; so
# does a release, which is recorded before the VF is unbound.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
start_pcisim qdma
start_svffd
ctl init $PF 2 >/dev/null || fail "init"
stop_svffd TERM || fail "svffd exit status"
[ -f "$STATE/store.json" ] || fail "no store written"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$STATE/store.json" || fail "store is not JSON"
cp "$STATE/store.json" "$T/good.json"

# refuse NAME: svffd must exit non-zero, name the file, leave it intact.
refuse() {
        what="$1"
        cp "$STATE/store.json" "$T/before"
        [ -f "$STATE/store.json.prev" ] && cp "$STATE/store.json.prev" "$T/before.prev"
        rc=0
        timeout 20 "$SVFFD" --socket "$SOCK" --state-dir "$STATE" --sysfs-root "$SYS" \
                --config "$T/svff.conf" > "$T/refuse.log" 2>&1 || rc=$?
        [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "$what: svffd started anyway (exit $rc)"
        grep -q "$STATE/store.json" "$T/refuse.log" || fail "$what: message does not name the file: $(cat "$T/refuse.log")"
        cmp -s "$T/before" "$STATE/store.json" || fail "$what: store.json was modified"
        if [ -f "$T/before.prev" ]; then
                cmp -s "$T/before.prev" "$STATE/store.json.prev" || fail "$what: store.json.prev was modified"
        fi
        [ ! -e "$SOCK" ] || [ "$(ctl status 2>/dev/null)" = "" ] || fail "$what: svffd is serving"
        note "$what: $(head -n 1 "$T/refuse.log")"
}

size=$(stat -c %s "$T/good.json")
head -c $((size / 2)) "$T/good.json" > "$STATE/store.json"
refuse "truncated store"

printf '{"schema":1,"generation":3,"pfs":{"0000:01:00.0":\x01garbage' > "$STATE/store.json"
refuse "corrupt store"

python3 - "$T/good.json" "$STATE/store.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["schema"] = 99
json.dump(d, open(sys.argv[2], "w"))
PY
refuse "newer-schema store"
grep -qi "schema" "$T/refuse.log" || fail "newer schema not explained: $(cat "$T/refuse.log")"

python3 - "$T/good.json" "$STATE/store.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["generation"] = "seven"
json.dump(d, open(sys.argv[2], "w"))
PY
refuse "wrongly typed store"

: > "$STATE/store.json"
refuse "empty store"

# Back to the good store: svffd starts and reports what it recorded.
cp "$T/good.json" "$STATE/store.json"
start_svffd
ctl list --json | jget 'd["pfs"][0]["desired"]["numvfs"]' | grep -qx 2 || fail "restored store not used"

# A second svffd on the same state directory (its own socket) would
# overwrite the first one's commits: it refuses, naming the directory and
# the pid of the one running, and touches neither the store nor the socket.
cp "$STATE/store.json" "$T/before"
rc=0
timeout 20 "$SVFFD" --socket "$T/second.sock" --state-dir "$STATE" --sysfs-root "$SYS" \
        --config "$T/svff.conf" > "$T/second.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "a second svffd started on the same state directory (exit $rc)"
grep -q "'$STATE'" "$T/second.log" || fail "second svffd: directory not named: $(cat "$T/second.log")"
grep -q "pid $SVFFD_PID" "$T/second.log" || fail "second svffd: pid not named: $(cat "$T/second.log")"
[ ! -e "$T/second.sock" ] || fail "second svffd created its socket"
cmp -s "$T/before" "$STATE/store.json" || fail "second svffd modified the store"
ctl_status >/dev/null || fail "the first svffd stopped serving"
note "second svffd: $(head -n 1 "$T/second.log")"

# Nor may one with its own state directory take the running one's socket.
rc=0
timeout 20 "$SVFFD" --socket "$SOCK" --state-dir "$T/second-state" --sysfs-root "$SYS" \
        --config "$T/svff.conf" > "$T/second.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "a second svffd took over the socket (exit $rc)"
grep -q "'$SOCK' is in use" "$T/second.log" || fail "second svffd: socket not named: $(cat "$T/second.log")"
ctl_status >/dev/null || fail "the first svffd lost its socket"
note "second svffd: $(head -n 1 "$T/second.log")"

# A clean stop removes the socket svffd made (the refused second one
# above left it alone).
stop_svffd TERM || fail "svffd exit status"
[ ! -e "$SOCK" ] || fail "svffd left its socket '$SOCK' behind after a clean stop"
start_svffd

# An svffd that is not root says that it must be, not only which
# directory it could not create.
# (Its config and sysfs root where uid 65534 may read them; its state
# directory under a directory only root may write, as /var/lib is.)
pub=$(mktemp -d)
chmod 755 "$pub"
cp "$T/svff.conf" "$pub/svff.conf"
rc=0
timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups "$SVFFD" --socket "$pub/svffd.sock" \
        --state-dir "$pub/state" --sysfs-root /sys --config "$pub/svff.conf" > "$T/nobody.log" 2>&1 || rc=$?
rm -rf "$pub"
expect_eq "$rc" 1 "svffd's exit status as uid 65534"
grep -q "svffd must run as root: .* uid 65534 .*'$pub/state'" "$T/nobody.log" ||
        fail "svffd as uid 65534: $(cat "$T/nobody.log")"

# Disk full on commit: on a small tmpfs state directory.
stop_svffd TERM
if mkdir -p "$T/small" && mount -t tmpfs -o size=64k tmpfs "$T/small" 2>/dev/null; then
        cp "$STATE/store.json" "$T/small/store.json"
        STATE="$T/small"
        start_svffd
        gen=$(ctl status --json | jget 'd["store"]["generation"]')
        dd if=/dev/zero of="$T/small/filler" bs=4k 2>/dev/null || true
        rc=0; ctl init $PF 200 2> "$T/err" || rc=$?
        expect_eq "$rc" 1 "init on a full disk"
        grep -qi "store\|space" "$T/err" || fail "full-disk error: $(cat "$T/err")"
        expect_eq "$(sys_numvfs $PF)" 2 "sysfs untouched when the journal cannot be written"
        python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['generation']==$gen, d['generation']" \
                "$T/small/store.json" || fail "store not intact after a failed commit"
        ls "$T/small" | grep -q tmp && fail "temporary file left behind: $(ls "$T/small")"
        rm -f "$T/small/filler"
        ctl init $PF 3 >/dev/null || fail "init after space was freed"
        expect_eq "$(sys_numvfs $PF)" 3 "numvfs after space was freed"
        # A release that cannot be recorded is refused before the VF is
        # touched: it stays on vfio-pci, as pcisim's sysfs shows, and svff
        # keeps its record.
        VF=$(sys_vf $PF 0)
        gen=$(jget 'd["generation"]' < "$T/small/store.json")
        dd if=/dev/zero of="$T/small/filler" bs=4k 2>/dev/null || true
        rc=0; ctl release "$VF" > "$T/out" 2> "$T/err" || rc=$?
        expect_eq "$rc" 1 "release on a full disk"
        expect_eq "$(sys_driver "$VF")" vfio-pci "driver of VF $VF after the refused release"
        expect_eq "$(cat "$SYS/bus/pci/devices/$VF/driver_override")" vfio-pci \
                "driver_override of VF $VF after the refused release"
        grep -q "VF $VF was not released: recording the release in '$T/small/store.json' failed" "$T/err" ||
                fail "release refusal: $(cat "$T/err")"
        expect_eq "$(jget 'd["generation"]' < "$T/small/store.json")" "$gen" "store after the refused release"
        expect_eq "$(ctl list --json | jget '[v["managed"] for v in d["pfs"][0]["vfs"] if v["address"] == "'"$VF"'"]')" \
                "[True]" "VF $VF recorded after the refused release"
        rm -f "$T/small/filler"
        ctl release "$VF" > "$T/out" || fail "release after space was freed: $(cat "$T/out")"
        [ "$(sys_driver "$VF")" != vfio-pci ] || fail "VF $VF still on vfio-pci after its release"
        stop_svffd TERM
        umount "$T/small"
        STATE="$T/state"
else
        note "cannot mount a tmpfs here: disk-full case not run"
fi

echo "PASS"
