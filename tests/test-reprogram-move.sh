#!/bin/sh
# svffctl reprogram with an image whose VFs come back at other host
# addresses (another First VF Offset and VF Stride): the records of the
# two assigned domains follow their VFs by index, and both domains'
# persistent definitions carry the new host addresses. The domains are
# defined, not running (no VFIO here for a live hostdev): a running
# domain's live and persistent definitions, a native unpause and the
# class state of a moved record are not covered yet.
. "$(dirname "$0")/reconf-lib.sh"

DOMAINS="vm1 vm2"
define $DOMAINS
start_pcisim qdma
PF=0000:01:00.0
IMAGES="$T/images"
mkdir -p "$IMAGES"
chmod 755 "$IMAGES"
# back as 10ee:913f with 8 VFs at offset 8, stride 2
echo "913f 8 offset=8 stride=2" > "$IMAGES/moved.bit"
flash_hook_standin
svff_conf ", \"flash_hook\": \"$T/hook\", \"flash_image_dir\": \"$IMAGES\", \"flash_timeout_sec\": 3,
 \"policies\": { \"fpga\": { \"match\": { \"address\": \"$PF\" }, \"reprogram_ids\": [\"10ee:913f\"],
 \"qdma\": { \"qmax\": 256, \"vf_qmax\": 8 } } }"
start_connected

ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1)
ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach VF0"
ctl attach "$VF1" vm2 --guest-address 06:00.0 >/dev/null || fail "attach VF1"

note "reprogram: the VFs come back at offset 8, stride 2"
ctl reprogram $PF "$IMAGES/moved.bit" --json > "$T/out.json" 2> "$T/err" || fail "reprogram: $(cat "$T/err")"
NEW0=$(sys_vf $PF 0); NEW1=$(sys_vf $PF 1)
expect_eq "$NEW0 $NEW1" "0000:01:01.0 0000:01:01.2" "VF addresses after the reprogram"
check_vfio $PF
expect_eq "$(store_py 'print(" ".join("%s=%s" % (a["domain"], v) for v, a in sorted(d["assignments"].items(), key=lambda x: x[1]["domain"])))')" \
        "vm1=$NEW0 vm2=$NEW1" "records after the reprogram"
expect_eq "$(store_py 'print(" ".join(sorted(a["state"] for a in d["assignments"].values())))')" \
        "attached attached" "assignment states after the reprogram"
stop_svffd
check_xml
