#!/bin/sh
# A reconf after which the PF's VFs are at other host addresses (a device
# whose First VF Offset depends on NumVFs; pcisim's "layout"), on the NVMe
# PF with the stand-in for its admin queue: each assignment's record
# follows its VF by index, with its class settings (the namespace it
# asked for, read from the stand-in's model of the device, not from the
# store), and the domain's definition carries the new host address.
# Then, with no assignment, a move that gives VF 1 the address VF 0 had:
# each VF gets its own index's policy settings, not those recorded for
# the VF that was at its new address before.
. "$(dirname "$0")/reconf-lib.sh"

DOMAINS="vm1 vm2"
define $DOMAINS
PF=0000:00:04.0
DUMP="$T/standin"
mkdir -p "$DUMP"
SVFF_TEST_NVME_STANDIN_DUMP=$DUMP
export SVFF_TEST_NVME_STANDIN_DUMP
start_pcisim nvme
svff_conf ", \"policies\": { \"disks\": { \"match\": { \"address\": \"$PF\" },
        \"nvme\": { \"vq\": 2, \"vi\": 1, \"namespace\": [1, null] } } }"
start_connected
ctl init $PF 2 >"$T/out" 2>&1 || fail "init: $(cat "$T/out")"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1)
ctl attach "$VF0" vm1 --namespace 2 --guest-address 05:00.0 >"$T/out" 2>&1 || fail "attach VF0: $(cat "$T/out")"
ctl attach "$VF1" vm2 --guest-address 06:00.0 >"$T/out" 2>&1 || fail "attach VF1: $(cat "$T/out")"
vf0="[v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == 0][0]"
# ns_of VF_INDEX: the namespaces the stand-in has attached to the VF's
# secondary controller (SCID = VF index + 1), as "1 3" or "".
ns_of() {
        awk -v c="$(($1 + 1))" '$1 == "ns" { for (i = 3; i <= NF; i++) if ($i == c) { sub(":", "", $2); printf "%s%s", s, $2; s = " " } }' \
                "$DUMP/$PF"
}
expect_eq "$(ns_of 0) / $(ns_of 1)" "2 / " "the VFs' namespaces on the device before the reconf"

note "reconf: the VFs come back at offset 8, stride 2"
pcisim_ctl layout $PF offset=8 stride=2
ctl reconf $PF 2 --cycle >"$T/out" 2>&1 || fail "reconf: $(cat "$T/out")"
NEW0=$(sys_vf $PF 0); NEW1=$(sys_vf $PF 1)
expect_eq "$NEW0 $NEW1" "0000:00:05.0 0000:00:05.2" "VF addresses after the reconf"
expect_eq "$(store_py 'print(" ".join("%s=%s:%s" % (a["domain"], v, a["state"]) for v, a in sorted(d["assignments"].items(), key=lambda x: x[1]["domain"])))')" \
        "vm1=$NEW0:attached vm2=$NEW1:attached" "records after the reconf"
expect_eq "$(ns_of 0) / $(ns_of 1)" "2 / " "the VFs' namespaces on the device after the reconf"
ctl list --json >"$T/list.json"
expect_eq "$(jget "$vf0['assigned_to']['class']['settings']['namespace']" <"$T/list.json")" 2 \
        "VF 0's assignment's class settings after the reconf"
expect_eq "$(jget "$vf0['class']['state']['namespaces']" <"$T/list.json")" "[2]" "VF 0's namespaces after the reconf"
check_vfio $PF
stop_svffd
check_xml

note "no assignment; reconf: VF 1 comes back at VF 0's address"
start_connected
ctl detach "$NEW0" >"$T/out" 2>&1 || fail "detach VF0: $(cat "$T/out")"
ctl detach "$NEW1" >"$T/out" 2>&1 || fail "detach VF1: $(cat "$T/out")"
expect_eq "$(ns_of 0) / $(ns_of 1)" "1 / " "the VFs' namespaces on the device by the policy"
pcisim_ctl layout $PF offset=6 stride=2
ctl reconf $PF 2 --cycle >"$T/out" 2>&1 || fail "reconf: $(cat "$T/out")"
expect_eq "$(sys_vf $PF 0) $(sys_vf $PF 1)" "0000:00:04.6 $NEW0" "VF addresses after the second reconf"
expect_eq "$(ns_of 0) / $(ns_of 1)" "1 / " "the VFs' namespaces on the device after VF 1 took VF 0's address"
check_vfio $PF
stop_svffd
