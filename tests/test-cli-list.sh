#!/bin/sh
# svffctl list on the mixed scenario: one table for every PF and VF, its
# columns aligned across PFs, the domain, guest address and state in
# their own columns, no MANAGED column (it read like libvirt's
# managed='no'), and -o picking columns by the names that --help and
# svffctl(8) list. On a terminal the table fits its width (80 and 120
# columns, read by TIOCGWINSZ) without wrapping a row, the least useful
# columns narrowed first; RECORDED, OWNER and IFACE show only when asked
# for (-o +COL adds a column); output to a pipe is not cut.
. "$(dirname "$0")/daemon-lib.sh"

MAN="$top_srcdir/man/svffctl.8"
start_pcisim mixed
start_svffd
ctl init 0000:01:00.0 4 >/dev/null || fail "init qdma"
ctl init 0000:03:00.0 7 >/dev/null || fail "init nic"
ctl init 0000:00:04.0 2 >/dev/null || fail "init nvme"

QDMA=0000:01:00.0
VF0=$(sys_vf $QDMA 0) VF1=$(sys_vf $QDMA 1) VF2=$(sys_vf $QDMA 2)
# Assignments recorded while svffd was stopped (a stand-in for attach: no
# libvirt here), so that the domain, guest and state cells are filled.
stop_svffd TERM || fail "svffd exit status"
# VF2's is in vm3's persistent definition only (attach --config).
python3 - "$STATE/store.json" "$VF0" "$VF1" "$VF2" <<'PY'
import json, sys
path, vfs = sys.argv[1], sys.argv[2:]
d = json.load(open(path))
for i, (vf, dom, ga) in enumerate(zip(vfs, ["vm1", "tenant-db-02", "vm3"],
                                      ["0000:03:00.0", "0000:05:00.0", "0000:06:00.0"])):
    d["assignments"][vf] = {"uuid": "c7a5fdbd-cdaf-9455-926a-d65c16db180%d" % i, "domain": dom,
                            "guest_address": ga, "alias": "ua-svff-%d" % i, "live": i < 2,
                            "config": True, "state": "attached", "pause_mode": None}
json.dump(d, open(path, "w"))
PY
start_svffd

ctl list > "$T/list.txt" || fail "list"
n_pfs=$(ctl list --json | jget 'len(d["pfs"])')
n_vfs=$(ctl list --json | jget 'sum(len(p["vfs"]) for p in d["pfs"])')
expect_eq "$(grep -c '^DEVICE ' "$T/list.txt")" 1 "header lines (one table for the whole list)"
expect_eq "$(grep -c . "$T/list.txt")" $((1 + n_pfs + n_vfs)) "rows: a header, then a row per PF and VF"
header=$(head -n 1 "$T/list.txt")
for col in DEVICE TYPE DRIVER VFS DOMAIN GUEST STATE; do
        echo "$header" | grep -qw "$col" || fail "no $col column: $header"
done
# Mostly '-': shown on demand only.
for col in RECORDED OWNER IFACE; do
        echo "$header" | grep -qw "$col" && fail "$col shown by default: $header"
done
echo "$header" | grep -q MANAGED && fail "a MANAGED column is back: $header"

# The NVMe and QDMA PFs' VFs have a device class: its state, in a few
# words, is the last column.
head -n 1 "$T/list.txt" | grep -q ' CLASS$' || fail "no CLASS column last: $(head -n 1 "$T/list.txt")"
grep "^$(sys_vf 0000:00:04.0 0) " "$T/list.txt" | grep -q ' online$' ||
        fail "NVMe VF row lacks its class state: $(cat "$T/list.txt")"
grep "^$(sys_vf $QDMA 2) " "$T/list.txt" | grep -q ' qmax 0$' ||
        fail "QDMA VF row lacks its class state: $(cat "$T/list.txt")"
grep -E "^$VF0 +VF0 +vfio-pci .* vm1 +03:00\.0 +attached( |$)" "$T/list.txt" >/dev/null ||
        fail "assigned VF row: $(cat "$T/list.txt")"
# Not what the guest has: STATE says defined, not attached.
grep -E "^$VF2 +VF2 +vfio-pci .* vm3 +06:00\.0 +defined( |$)" "$T/list.txt" >/dev/null ||
        fail "config-only VF row: $(cat "$T/list.txt")"

# Aligned: every row's cells start where the header's do (cells hold no
# blanks in the default columns but the last, the class's own line).
python3 - "$T/list.txt" <<'PY' || fail "columns not aligned: $(cat "$T/list.txt")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
for l in lines[1:]:
    got = [m.start() for m in re.finditer(r"\S+", l)]
    got = [g for g in got if g < starts[-1]] + [g for g in got if g >= starts[-1]][:1]
    assert got == starts, (l, got, starts)
PY

# on_tty COLS CMD...: what CMD writes to a terminal COLS columns wide (its
# size read with TIOCGWINSZ, as in a real one); its exit status.
on_tty() {
        python3 - "$@" <<'PY'
import fcntl, os, pty, struct, sys, termios
cols = int(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    os.execvp(sys.argv[2], sys.argv[2:])
out = b""
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode().replace("\r\n", "\n"))
sys.exit(os.waitstatus_to_exitcode(st))
PY
}
tty_list() { on_tty "$1" "$SVFFCTL" --socket "$SOCK" list; }

# 80 and 120 columns: no row wraps, every row is there, and a QDMA PF's
# rows keep their driver whole (the least useful columns give way first).
for cols in 80 120; do
        tty_list $cols > "$T/tty$cols.txt" || fail "list on a terminal of $cols columns"
        awk -v n=$cols 'length > n { bad = 1 } END { exit bad }' "$T/tty$cols.txt" ||
                fail "a row wraps at $cols columns: $(cat "$T/tty$cols.txt")"
        expect_eq "$(grep -c . "$T/tty$cols.txt")" $((1 + n_pfs + n_vfs)) "rows at $cols columns"
        expect_eq "$(head -n 1 "$T/tty$cols.txt")" "$header" "header at $cols columns"
        grep -E "^$QDMA +PF +qdma-pf " "$T/tty$cols.txt" >/dev/null ||
                fail "QDMA PF row at $cols columns: $(cat "$T/tty$cols.txt")"
        grep -E "^$VF0 +VF0 +vfio-pci .* vm1 +03:00\.0 +attached +qmax 0$" "$T/tty$cols.txt" >/dev/null ||
                fail "QDMA VF row at $cols columns: $(cat "$T/tty$cols.txt")"
        grep -E "^0000:01:0" "$T/tty$cols.txt" | grep -q '\.\.\.' &&
                fail "a QDMA row is cut at $cols columns: $(cat "$T/tty$cols.txt")"
done
# Narrower than the table: the class and the domain give way before the
# driver.
w=$(awk '{ if (length > w) w = length } END { print w }' "$T/list.txt")
narrow=$((w - 6))
tty_list $narrow > "$T/narrow.txt" || fail "list on a terminal of $narrow columns"
awk -v n=$narrow 'length > n { bad = 1 } END { exit bad }' "$T/narrow.txt" ||
        fail "a row wraps at $narrow columns: $(cat "$T/narrow.txt")"
grep -q '\.\.\.' "$T/narrow.txt" || fail "nothing cut at $narrow columns: $(cat "$T/narrow.txt")"
grep -q 'vfi\.\.\.' "$T/narrow.txt" && fail "the driver is cut first: $(cat "$T/narrow.txt")"
# A pipe is not cut (but to an explicit COLUMNS, as watch(1) sets it).
ctl list -o device,name > "$T/pipe.txt" || fail "list -o device,name to a pipe"
grep -q '\.\.\.' "$T/pipe.txt" && fail "a pipe is cut: $(cat "$T/pipe.txt")"
name_w=$(awk '{ if (length > w) w = length } END { print w }' "$T/pipe.txt")
COLUMNS=$((name_w - 4)) ctl list -o device,name > "$T/narrow.txt" || fail "list with COLUMNS"
awk -v n=$((name_w - 4)) 'length > n { bad = 1 } END { exit bad }' "$T/narrow.txt" ||
        fail "COLUMNS=$((name_w - 4)) not honoured: $(cat "$T/narrow.txt")"
expect_eq "$(grep -c . "$T/narrow.txt")" $((1 + n_pfs + n_vfs)) "rows with COLUMNS=$((name_w - 4))"

# -o +COL: the default columns and COL (before the class, which stays
# last); one already shown is not repeated.
ctl list -o +owner,recorded > "$T/plus.txt" || fail "list -o +owner,recorded"
expect_eq "$(head -n 1 "$T/plus.txt" | tr -s ' ')" "DEVICE TYPE DRIVER VFS DOMAIN GUEST STATE OWNER RECORDED CLASS" \
        "-o +owner,recorded header"
grep -qE "^$QDMA +PF .* operator +yes +-$" "$T/plus.txt" || fail "-o +owner,recorded QDMA PF row: $(cat "$T/plus.txt")"
ctl list -o +iface,+device | head -n 1 | tr -s ' ' > "$T/plus.txt"
expect_eq "$(cat "$T/plus.txt")" "DEVICE TYPE DRIVER VFS DOMAIN GUEST STATE IFACE CLASS" "-o +iface,+device header"
ctl list -o +iface | grep -q "^0000:03:00.0 *PF .* enp3s0f0 " || fail "NIC row lacks its interface: $(ctl list -o +iface)"
rc=0; ctl list -o device,+iface 2> "$T/err" >/dev/null || rc=$?
expect_eq "$rc" 2 "list -o with '+' after the first column only"
grep -q "+iface" "$T/err" || fail "-o device,+iface: $(cat "$T/err")"
rc=0; ctl list -o + 2> "$T/err" >/dev/null || rc=$?
expect_eq "$rc" 2 "list -o +"

# -o: the columns asked for, in order; an unknown one is a usage error.
ctl list -o device,iommu,numa,name > "$T/o.txt" || fail "list -o"
expect_eq "$(head -n 1 "$T/o.txt" | tr -s ' ')" "DEVICE IOMMU NUMA NAME" "-o header"
grep -q "^0000:01:00.0 .*Xilinx" "$T/o.txt" || fail "-o name: $(cat "$T/o.txt")"
ctl list --output=type,device | sed -n 2p | grep -q "^PF " || fail "--output order"
rc=0; ctl list -o device,bogus 2> "$T/err" >/dev/null || rc=$?
expect_eq "$rc" 2 "list -o with an unknown column"
grep -q "bogus" "$T/err" || fail "unknown column not named: $(cat "$T/err")"
rc=0; ctl status -o device 2>/dev/null || rc=$?
expect_eq "$rc" 2 "-o on status"

# Filters: PFs whole, VFs under their PF's row, a domain's VFs (by name
# or UUID), the same under --json; an address that is neither a PF nor a
# VF is refused by name.
NIC=0000:03:00.0
rows() { awk 'NR > 1 { print $1 }' | tr '\n' ' ' | sed 's/ $//'; }
expect_eq "$(ctl list $NIC | rows)" "$NIC $(for i in 0 1 2 3 4 5 6; do sys_vf $NIC $i; done | tr '\n' ' ' | sed 's/ $//')" \
        "list PF: the PF and all its VFs"
expect_eq "$(ctl list "$VF1" | rows)" "$QDMA $VF1" "list VF: the VF under its PF's row"
expect_eq "$(ctl list "$VF2" 0000:00:04.0 | rows)" \
        "0000:00:04.0 $(sys_vf 0000:00:04.0 0) $(sys_vf 0000:00:04.0 1) $QDMA $VF2" "list VF PF: both, in the host's order"
expect_eq "$(ctl list --domain tenant-db-02 | rows)" "$QDMA $VF1" "list --domain NAME"
expect_eq "$(ctl list --domain c7a5fdbd-cdaf-9455-926a-d65c16db1802 | rows)" "$QDMA $VF2" "list --domain UUID"
expect_eq "$(ctl list $QDMA --domain vm1 | rows)" "$QDMA $VF0" "list PF --domain: that PF's VFs in the domain"
expect_eq "$(ctl list $NIC --domain vm1)" "No VF of those named is assigned to domain 'vm1'." \
        "list PF --domain with none there"
expect_eq "$(ctl list --domain vm1 --json | jget '[(p["address"], [v["address"] for v in p["vfs"]]) for p in d["pfs"]]')" \
        "[('$QDMA', ['$VF0'])]" "list --domain --json"
rc=0; ctl list "$VF0" 0000:0a:00.0 >"$T/out" 2>"$T/err" || rc=$?
expect_eq "$rc" 1 "list of an address that is no PF or VF"
expect_eq "$(cat "$T/err")" "svffctl: No SR-IOV PF or VF 0000:0a:00.0; 'svffctl list' shows the devices there are." \
        "its message"
rc=0; ctl list --domain "" 2>/dev/null || rc=$?
expect_eq "$rc" 2 "list --domain with an empty name"
rc=0; ctl status --domain vm1 2>/dev/null || rc=$?
expect_eq "$rc" 2 "--domain on status"

# Every column is named in 'list --help' and in svffctl(8) COLUMNS.
cols=$(ctl list --help | sed -n '/^Columns for -o/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ "$(echo "$cols" | wc -w)" -ge 12 ] || fail "list --help lists too few columns: $cols"
man_cols=$(sed -n '/^\.SH COLUMNS/,/^\.SH /p' "$MAN" | awk '/^\.TP/ { getline; print $2 }')
expect_eq "$(echo "$man_cols" | sort | tr '\n' ' ')" "$(echo "$cols" | sort | tr '\n' ' ')" "columns in svffctl(8) and --help"
for c in $cols; do
        ctl list -o "$c" >/dev/null || fail "-o $c refused"
done

echo "PASS"
