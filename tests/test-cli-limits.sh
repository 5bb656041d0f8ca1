#!/bin/sh
# status shows each PF's VF limit and what sets it, not only the number:
#   - sriov_totalvfs below the SR-IOV capability's TotalVFs (the driver
#     or the firmware's setting lowers it);
#   - the same as TotalVFs;
#   - the MSI-X vectors its VFs share, where sysfs shows them
#     (sriov_vf_total_msix);
# and a count refused for want of vectors (ENOSPC) names them too.
. "$(dirname "$0")/daemon-lib.sh"

NIC=0000:03:00.0
FPGA=0000:05:00.0
cat > "$T/scenario.json" <<'JSON'
{
  "devices": [
    { "address": "0000:00:00.0", "vendor": "0x8086", "device": "0x29c0", "class": "0x060000", "pcie": false },
    { "address": "0000:03:00.0", "vendor": "0x8086", "device": "0x1521", "class": "0x020000",
      "driver": "igb", "vf_driver": "igbvf", "totalvfs": 7, "cap_totalvfs": 8, "vf_total_msix": 64,
      "offset": "0x80", "stride": 4, "vf_device": "0x1520", "iommu": "per-vf", "kind": "nic",
      "ifname": "enp3s0f0", "mac": "a0:36:9f:00:00:01" },
    { "address": "0000:05:00.0", "vendor": "0x10ee", "device": "0x903f", "class": "0x120000",
      "driver": "qdma-pf", "vf_driver": "qdma-vf", "totalvfs": 252, "offset": 4, "stride": 1,
      "vf_device": "0xa03f", "iommu": "per-vf", "kind": "qdma" }
  ]
}
JSON
start_pcisim "$T/scenario.json"
echo '{}' > "$T/svff.conf"
start_svffd

ctl status > "$T/status" || fail "status: $(cat "$T/status")"
grep -qE "^  PF +VFS +OWNER +POLICY +LIMIT$" "$T/status" || fail "no LIMIT column: $(cat "$T/status")"
grep -qE "^  $NIC +0 +- +- +7$" "$T/status" || fail "no LIMIT 7 for the NIC: $(cat "$T/status")"
grep -q "^  $NIC: limit: the PF driver allows 7 VFs (sriov_totalvfs) of the 8 the device's SR-IOV capability offers (TotalVFs): the driver or the firmware's setting lowers it; its VFs share 64 MSI-X vectors (sriov_vf_total_msix)$" "$T/status" ||
        fail "the NIC's limit and its cause: $(cat "$T/status")"
# The FPGA's limit is its device's own: the LIMIT column says it all,
# and the sentence only comes with -v. Nor does status count its own
# connection.
grep -q "^  $FPGA: limit:" "$T/status" && fail "the FPGA's limit repeated: $(cat "$T/status")"
grep -q "^Connections:" "$T/status" && fail "status counts its own connection: $(cat "$T/status")"
ctl status -v > "$T/status" || fail "status -v: $(cat "$T/status")"
grep -q "^  $FPGA: limit: the PF allows 252 VFs (sriov_totalvfs, as the SR-IOV capability's TotalVFs)$" "$T/status" ||
        fail "the FPGA's limit with -v: $(cat "$T/status")"
ctl status --json > "$T/status.json"
expect_eq "$(jget '[(o["totalvfs"], o["cap_totalvfs"], o["vf_total_msix"]) for o in d["owners"] if o["pf"] == "'$NIC'"][0]' < "$T/status.json")" \
        "(7, 8, 64)" "the NIC's limits in JSON"
expect_eq "$(jget '[o["vf_total_msix"] for o in d["owners"] if o["pf"] == "'$FPGA'"][0]' < "$T/status.json")" \
        None "vf_total_msix where sysfs shows none"

note "a count refused for want of vectors names the limits"
pcisim_ctl fail $NIC sriov_numvfs ENOSPC 1
rc=0; ctl init $NIC 4 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "init refused with ENOSPC"
grep -q "MSI-X" "$T/err" || fail "ENOSPC without its cause: $(cat "$T/err")"
grep -q "its VFs share 64 MSI-X vectors" "$T/err" || fail "ENOSPC without the vectors: $(cat "$T/err")"
echo PASS
