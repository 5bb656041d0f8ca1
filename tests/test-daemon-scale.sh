#!/bin/sh
# A host with more VFs than the 4 x 252 scale scenario: 8 PFs x 252 VFs
# make a List reply of ~340 KiB, over the cap on calls. svffd must send it
# and svffctl must read it, in JSON and as a table.
. "$(dirname "$0")/daemon-lib.sh"

N_PF=8
python3 - "$N_PF" > "$T/big.json" <<'PY'
import json, sys
n = int(sys.argv[1])
devs = [{"address": "0000:00:00.0", "vendor": "0x8086", "device": "0x29c0", "class": "0x060000", "pcie": False}]
for i in range(n):
    devs.append({"address": "0000:%02x:00.0" % (0x10 * (i + 1)), "vendor": "0x10ee", "device": "0x903f",
                 "class": "0x120000", "driver": "qdma-pf", "vf_driver": "qdma-vf", "totalvfs": 252,
                 "offset": 4, "stride": 1, "vf_device": "0xa03f", "iommu": "per-vf", "kind": "qdma"})
json.dump({"devices": devs}, sys.stdout)
PY
start_pcisim "$T/big.json"
i=1
while [ $i -le $N_PF ]; do
        echo 252 > "$SYS/bus/pci/devices/0000:${i}0:00.0/sriov_numvfs"
        i=$((i + 1))
done
start_svffd

ctl list --json > "$T/list.json" || fail "svffctl list --json failed on $((N_PF * 252)) VFs"
size=$(wc -c < "$T/list.json")
note "list --json: $size bytes"
[ "$size" -gt 262144 ] || fail "the reply ($size bytes) is not over the call cap: the test proves nothing"
expect_eq "$(jget 'sum(len(p["vfs"]) for p in d["pfs"])' < "$T/list.json")" $((N_PF * 252)) "VFs listed"
expect_eq "$(ctl list | grep -c ' qdma-vf')" $((N_PF * 252)) "VF rows in the table"
echo "PASS: svffctl lists $((N_PF * 252)) VFs"
