#!/bin/sh
# svffctl list on the mixed scenario: one table for every PF and VF, its
# columns aligned across PFs, within 80 columns, the interface, domain,
# guest address and state in their own columns, no MANAGED column (it
# read like libvirt's managed='no'), and -o picking columns by the names
# that --help and svffctl(8) list.
. "$(dirname "$0")/daemon-lib.sh"

MAN="$top_srcdir/man/svffctl.8"
start_pcisim mixed
start_svffd
ctl init 0000:01:00.0 4 >/dev/null || fail "init qdma"
ctl init 0000:03:00.0 7 >/dev/null || fail "init nic"
ctl init 0000:00:04.0 2 >/dev/null || fail "init nvme"

ctl list > "$T/list.txt" || fail "list"
n_pfs=$(ctl list --json | jget 'len(d["pfs"])')
n_vfs=$(ctl list --json | jget 'sum(len(p["vfs"]) for p in d["pfs"])')
expect_eq "$(grep -c '^DEVICE ' "$T/list.txt")" 1 "header lines (one table for the whole list)"
expect_eq "$(grep -c . "$T/list.txt")" $((1 + n_pfs + n_vfs)) "rows: a header, then a row per PF and VF"
header=$(head -n 1 "$T/list.txt")
for col in DEVICE TYPE DRIVER VFS IFACE RECORDED DOMAIN GUEST STATE; do
        echo "$header" | grep -qw "$col" || fail "no $col column: $header"
done
echo "$header" | grep -q MANAGED && fail "a MANAGED column is back: $header"

# The NVMe PF's VFs have a device class: its state is the last column.
head -n 1 "$T/list.txt" | grep -q ' CLASS$' || fail "no CLASS column last: $(head -n 1 "$T/list.txt")"
grep "^$(sys_vf 0000:00:04.0 0) " "$T/list.txt" | grep -q ' nvme: online' ||
        fail "NVMe VF row lacks its class state: $(cat "$T/list.txt")"

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
# The interface name of the NIC's PF is in its own column.
grep -q "^0000:03:00.0 *PF .* enp3s0f0 " "$T/list.txt" || fail "NIC row lacks its interface: $(cat "$T/list.txt")"
grep -q "^$(sys_vf 0000:03:00.0 6) *VF6 *igbvf\|^$(sys_vf 0000:03:00.0 6) *VF6 *vfio-pci" "$T/list.txt" ||
        fail "VF6 row: $(cat "$T/list.txt")"

# 80 columns: as it is (but the class column, which a terminal of 80
# columns cuts), and cut to fit a narrower terminal.
class_at=$(head -n 1 "$T/list.txt" | awk '{ print index($0, " CLASS") }')
cut -c "1-$class_at" "$T/list.txt" | awk 'length > 80 { bad = 1 } END { exit bad }' ||
        fail "list is wider than 80 columns: $(cat "$T/list.txt")"
COLUMNS=80 ctl list | awk 'length > 80 { bad = 1 } END { exit bad }' || fail "COLUMNS=80 not honoured"
w=$(awk '{ if (length > w) w = length } END { print w }' "$T/list.txt")
narrow=$((w - 4))
COLUMNS=$narrow ctl list > "$T/narrow.txt" || fail "list with COLUMNS=$narrow"
awk -v n=$narrow 'length > n { bad = 1 } END { exit bad }' "$T/narrow.txt" ||
        fail "COLUMNS=$narrow not honoured: $(cat "$T/narrow.txt")"
grep -q '\.\.\.' "$T/narrow.txt" || fail "nothing cut at $narrow columns: $(cat "$T/narrow.txt")"
expect_eq "$(grep -c . "$T/narrow.txt")" $((1 + n_pfs + n_vfs)) "rows at $narrow columns"

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

# Every column is named in 'list --help' and in svffctl(8) COLUMNS.
cols=$(ctl list --help | sed -n '/^Columns for -o/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ "$(echo "$cols" | wc -w)" -ge 12 ] || fail "list --help lists too few columns: $cols"
man_cols=$(sed -n '/^\.SH COLUMNS/,/^\.SH /p' "$MAN" | awk '/^\.TP/ { getline; print $2 }')
expect_eq "$(echo "$man_cols" | sort | tr '\n' ' ')" "$(echo "$cols" | sort | tr '\n' ' ')" "columns in svffctl(8) and --help"
for c in $cols; do
        ctl list -o "$c" >/dev/null || fail "-o $c refused"
done

# An owner of the count, when svffd reports one, is shown by default.
if ctl list --json | jget 'any("owner" in p for p in d["pfs"])' | grep -qx True; then
        head -n 1 "$T/list.txt" | grep -qw OWNER || fail "svffd reports an owner, the table does not show it"
fi
echo "PASS"
