#!/bin/sh
# svffctl reprogram with an image whose VFs come back at other host
# addresses (another First VF Offset and VF Stride): the records follow
# their VFs by index, and the domains' definitions carry the new host
# addresses:
#   - vm1 and vm2, defined, with VF 0 and VF 1 attached;
#   - vm3, defined, with VF 2 paused (detached with its reservation)
#     across the reprogram, then unpaused: back at VF 2's new address;
#   - vm4, running, with VF 3 in its persistent definition: the
#     persistent definition (dumpxml --inactive) names the new address.
# No VFIO here for a live hostdev: a running domain's live device and a
# native pause (QEMU's device-pause command) are not covered.
. "$(dirname "$0")/reconf-lib.sh"

DOMAINS="vm1 vm2 vm3 vm4"
define $DOMAINS
virsh_ start vm4 >/dev/null || fail "starting vm4 (TCG)"
start_pcisim qdma
PF=0000:01:00.0
flash_hook_standin
# back as 10ee:913f with 8 VFs at offset 8, stride 2
echo "913f 8 offset=8 stride=2" > "$IMAGES/moved.bit"
svff_conf ", \"flash_hook\": \"$T/hook\", \"flash_image_dir\": \"$IMAGES\", \"flash_timeout_sec\": 3,
 \"policies\": { \"fpga\": { \"match\": { \"address\": \"$PF\" }, \"reprogram_ids\": [\"10ee:913f\"],
 \"qdma\": { \"qmax\": 256, \"vf_qmax\": 8 } } }"
start_connected

ctl init $PF 4 >/dev/null || fail "init"
VF0=$(sys_vf $PF 0); VF1=$(sys_vf $PF 1)
ctl attach "$VF0" vm1 --guest-address 05:00.0 >/dev/null || fail "attach VF0"
ctl attach "$VF1" vm2 --guest-address 06:00.0 >/dev/null || fail "attach VF1"
VF2=$(sys_vf $PF 2); VF3=$(sys_vf $PF 3)
ctl attach "$VF2" vm3 --guest-address 07:00.0 >/dev/null || fail "attach VF2"
ctl pause "$VF2" >"$T/out" 2>&1 || fail "pause VF2: $(cat "$T/out")"
ctl attach "$VF3" vm4 --config --guest-address 08:00.0 >"$T/out" 2>&1 || fail "attach VF3 to running vm4: $(cat "$T/out")"
# persistent_vfs DOMAIN: the host addresses of its persistent definition's hostdevs.
persistent_vfs() {
        virsh_ dumpxml --inactive "$1" | python3 -c 'import sys, xml.etree.ElementTree as ET
for s in ET.parse(sys.stdin).findall("./devices/hostdev/source/address"):
    print("%04x:%02x:%02x.%x" % tuple(int(s.get(k), 16) for k in ("domain", "bus", "slot", "function")))'
}

note "reprogram: the VFs come back at offset 8, stride 2"
ctl reprogram $PF "$IMAGES/moved.bit" --json > "$T/out.json" 2> "$T/err" || fail "reprogram: $(cat "$T/err")"
NEW0=$(sys_vf $PF 0); NEW1=$(sys_vf $PF 1); NEW2=$(sys_vf $PF 2); NEW3=$(sys_vf $PF 3)
expect_eq "$NEW0 $NEW1 $NEW2 $NEW3" "0000:01:01.0 0000:01:01.2 0000:01:01.4 0000:01:01.6" "VF addresses after the reprogram"
check_vfio $PF
expect_eq "$(store_py 'print(" ".join("%s=%s" % (a["domain"], v) for v, a in sorted(d["assignments"].items(), key=lambda x: x[1]["domain"])))')" \
        "vm1=$NEW0 vm2=$NEW1 vm3=$NEW2 vm4=$NEW3" "records after the reprogram"
expect_eq "$(store_py 'print(" ".join(a["state"] for v, a in sorted(d["assignments"].items(), key=lambda x: x[1]["domain"])))')" \
        "attached attached held attached" "assignment states after the reprogram"

note "unpause: VF 2 back in vm3 at its new address"
ctl unpause "$NEW2" >"$T/out" 2>&1 || fail "unpause VF2 at $NEW2: $(cat "$T/out")"
check_vfs "after the unpause"
# The definitions, read once svffd let go of libvirt (an embedded root
# takes one process at a time).
stop_svffd
expect_eq "$(virsh_ domstate vm4)" running "vm4's state after the reprogram"
expect_eq "$(persistent_vfs vm4)" "$NEW3" "running vm4's persistent definition after the reprogram"
expect_eq "$(persistent_vfs vm3)" "$NEW2" "vm3's persistent definition after the unpause"
check_xml
