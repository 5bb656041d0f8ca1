#!/bin/sh
# svffctl prints the text svffd passes on (here a driver's name, which a
# device's sysfs gives and pcisim lets be anything) with its control
# characters escaped: ESC, BEL, U+202E and a newline reach the terminal
# as \xNN and \uNNNN, so they neither act on it nor break a table's rows;
# --json carries the text as it is. (Messages: test-reprogram.sh, a
# flash hook's last line; 'config check': test-config-check.sh.)
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
DRIVER=$(printf 'qdma\033[31m\007\342\200\256\npf')
sed -e 's/"driver": "qdma-pf"/"driver": "qdma\\u001b[31m\\u0007\\u202e\\npf"/' \
        "$PCISIM_SCENARIOS/qdma.json" > "$T/scenario.json"
start_pcisim "$T/scenario.json"
[ "$(basename "$(readlink "$SYS/bus/pci/devices/$PF/driver")")" = "$DRIVER" ] || fail "pcisim did not take the name"
start_svffd

ctl list > "$T/list.txt" || fail "list"
grep -qF 'qdma\x1b[31m\x07\u202e\x0apf' "$T/list.txt" || fail "the driver not escaped: $(cat -v "$T/list.txt")"
grep -q "$(printf '[\033\007]')" "$T/list.txt" && fail "list printed a control character: $(cat -v "$T/list.txt")"
expect_eq "$(grep -c . "$T/list.txt")" 2 "rows: the header and the PF"
ctl list --json | jget '[p for p in d["pfs"] if p["address"] == "'$PF'"][0]["driver"] == "qdma\x1b[31m\x07\u202e\npf"' |
        grep -qx True || fail "--json does not carry the name as it is: $(ctl list --json)"

echo "PASS"
