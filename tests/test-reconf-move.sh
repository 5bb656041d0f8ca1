#!/bin/sh
# A reconf after which the PF's VFs are at other host addresses (a device
# whose First VF Offset depends on NumVFs; pcisim's "layout"), on the NVMe
# PF with the stand-in for its admin queue: each assignment's record
# follows its VF by index, with its class settings (the namespace it
# asked for), and the domain's definition carries the new host address.
. "$(dirname "$0")/reconf-lib.sh"

DOMAINS="vm1 vm2"
define $DOMAINS
PF=0000:00:04.0
start_pcisim nvme
svff_conf ", \"policies\": { \"disks\": { \"match\": { \"address\": \"$PF\" },
        \"nvme\": { \"vq\": 2, \"vi\": 1, \"namespace\": [1, null] } } }"
start_connected
ctl init $PF 2 >"$T/out" 2>&1 || fail "init: $(cat "$T/out")"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1)
ctl attach "$VF0" vm1 --namespace 2 --guest-address 05:00.0 >"$T/out" 2>&1 || fail "attach VF0: $(cat "$T/out")"
ctl attach "$VF1" vm2 --guest-address 06:00.0 >"$T/out" 2>&1 || fail "attach VF1: $(cat "$T/out")"
vf0="[v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == 0][0]"

note "reconf: the VFs come back at offset 8, stride 2"
pcisim_ctl layout $PF offset=8 stride=2
ctl reconf $PF 2 --cycle >"$T/out" 2>&1 || fail "reconf: $(cat "$T/out")"
NEW0=$(sys_vf $PF 0); NEW1=$(sys_vf $PF 1)
expect_eq "$NEW0 $NEW1" "0000:00:05.0 0000:00:05.2" "VF addresses after the reconf"
expect_eq "$(store_py 'print(" ".join("%s=%s:%s" % (a["domain"], v, a["state"]) for v, a in sorted(d["assignments"].items(), key=lambda x: x[1]["domain"])))')" \
        "vm1=$NEW0:attached vm2=$NEW1:attached" "records after the reconf"
ctl list --json >"$T/list.json"
expect_eq "$(jget "$vf0['assigned_to']['class']['settings']['namespace']" <"$T/list.json")" 2 \
        "VF 0's assignment's class settings after the reconf"
expect_eq "$(jget "$vf0['class']['state']['namespaces']" <"$T/list.json")" "[2]" "VF 0's namespaces after the reconf"
check_vfio $PF
stop_svffd
check_xml
