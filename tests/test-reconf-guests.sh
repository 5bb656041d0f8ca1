#!/bin/sh
# How each running domain's guest will see a reconf, on the embedded
# libvirt (or a private libvirtd under a sanitizer build) with running
# TCG domains: the dry run's guests say ACPI hotplug for a q35 domain with
# ACPI, native PCIe hotplug (>= 6 s per unplug, in the prediction) for one
# that turns ACPI hotplug of bridges off, the NVMe head and what its guest
# needs for an NVMe VF, and the reconf's detach deadline; a VF at a guest
# address on a port whose hotplug is off refuses the reconf and its dry
# run with NoHotplug naming the domain and the port, with nothing changed
# (sysfs numvfs, the store, the domain's live XML).
# No live attach works without VFIO: the assignments are attached to the
# persistent definitions, then recorded live while svffd is stopped, as a
# live attach would have left them.
. "$(dirname "$0")/reconf-lib.sh"

# domain NAME [native]: a running q35 domain with ACPI, two root ports
# (index 2's hotplug off), nothing else on them; native: ACPI hotplug of bridges off, as
# QEMU's global sets it.
domain() {
        cmdline=""
        [ "${2:-}" = native ] && cmdline="<qemu:commandline><qemu:arg value='-global'/>
    <qemu:arg value='ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off'/></qemu:commandline>"
        cat > "$T/$1.xml" <<XML
<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$1</name>
  <memory unit='MiB'>64</memory>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <features><acpi/></features>
  <devices>
    <emulator>$QEMU</emulator>
    <controller type='pci' index='0' model='pcie-root'/>
    <controller type='pci' index='1' model='pcie-root-port'/>
    <controller type='pci' index='2' model='pcie-root-port'><target hotplug='off'/></controller>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
  $cmdline
</domain>
XML
        # A define whose virsh crashed after libvirt took it (virsh_ runs
        # it once more) leaves the domain defined: that is a define.
        virsh_ define "$T/$1.xml" >/dev/null 2>"$T/define.err" || virsh_ domuuid "$1" >/dev/null ||
                fail "virsh define $1: $(cat "$T/define.err")"
        virsh_ start "$1" >/dev/null || fail "virsh start $1"
}
domain vmacpi
domain vmnative native
domain vmnvme

start_pcisim mixed
NVME=0000:00:04.0
QDMA=0000:01:00.0
svff_conf ", \"policies\": { \"disks\": { \"match\": { \"address\": \"$NVME\" },
        \"nvme\": { \"vq\": 2, \"vi\": 1 } } }"
start_connected
ctl init $QDMA 4 >/dev/null || fail "init $QDMA"
ctl init $NVME 2 >"$T/out" 2>&1 || fail "init $NVME: $(cat "$T/out")"
Q0=$(sys_vf $QDMA 0); Q1=$(sys_vf $QDMA 1); Q2=$(sys_vf $QDMA 2); N0=$(sys_vf $NVME 0)
ctl attach "$Q0" vmacpi --config --guest-address 01:00.0 >/dev/null || fail "attach $Q0"
ctl attach "$Q1" vmnative --config --guest-address 01:00.0 >/dev/null || fail "attach $Q1"
ctl attach "$N0" vmnvme --config --guest-address 01:00.0 >"$T/out" 2>&1 || fail "attach $N0: $(cat "$T/out")"

# live_records VF...: the VFs' assignments recorded live, svffd restarted.
live_records() {
        stop_svffd || fail "svffd exit status"
        python3 - "$STATE/store.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
for vf in sys.argv[2:]:
    d["assignments"][vf]["live"] = True
json.dump(d, open(p, "w"))
PY
        start_connected
}
live_records "$Q0" "$Q1" "$N0"

note "the dry run: ACPI and native hotplug, the prediction and the deadline"
ctl reconf $QDMA 5 --dry-run --json > "$T/plan.json" || fail "dry run: $(cat "$T/plan.json")"
guest() { jget "[g for g in d['guests'] if g['vf'] == '$1'][0]['$2']" < "$T/plan.json"; }
expect_eq "$(guest "$Q0" hotplug)" acpi "vmacpi's hotplug"
expect_eq "$(guest "$Q0" port)" "pcie-root-port index 1" "vmacpi's port"
expect_eq "$(guest "$Q1" hotplug)" native "vmnative's hotplug"
expect_eq "$(guest "$Q1" nvme_head)" False "a QDMA VF's NVMe head"
# Both wait for vmnative's unplug (6 s), then 1.5 s of numvfs and bind,
# then 0.5 s to put their one device back.
expect_eq "$(guest "$Q1" predicted_msec)" 8000 "vmnative's predicted downtime"
expect_eq "$(guest "$Q0" predicted_msec)" 8000 "vmacpi's predicted downtime (it waits for vmnative's unplug)"
# No reconf of the PF has run since svffd started: the model's figures.
expect_eq "$(guest "$Q0" predicted_from)" model "what vmacpi's prediction is made from"
expect_eq "$(jget "d['deadlines']['detach_msec']" < "$T/plan.json")" 5000 "the reconf's detach deadline (svff_conf's reconf_detach_timeout_sec)"
ctl reconf $QDMA 5 --dry-run > "$T/plan.txt" || fail "human dry run: $(cat "$T/plan.txt")"
grep -q "each unplug may take 5 s: reconf_detach_timeout_sec" "$T/plan.txt" || fail "human plan: $(cat "$T/plan.txt")"
grep -q "VF $Q1  domain 'vmnative' at 01:00.0: native PCIe hotplug (>= 6 s per unplug) on pcie-root-port index 1; device off for about 8.0 s" \
        "$T/plan.txt" || fail "human plan, native: $(cat "$T/plan.txt")"
grep -q "VF $Q0  domain 'vmacpi' at 01:00.0: ACPI hotplug on pcie-root-port index 1" "$T/plan.txt" ||
        fail "human plan, ACPI: $(cat "$T/plan.txt")"

note "an NVMe VF: the head kept, what the guest needs"
ctl reconf $NVME 3 --dry-run --json > "$T/plan.json" || fail "NVMe dry run: $(cat "$T/plan.json")"
expect_eq "$(guest "$N0" hotplug)" acpi "vmnvme's hotplug"
expect_eq "$(guest "$N0" nvme_head)" True "the NVMe head"
expect_eq "$(guest "$N0" predicted_msec)" 3000 "vmnvme's predicted downtime"
expect_eq "$(guest "$N0" guest_needs)" \
        "Linux >= 6.16 with NVMe multipath and delayed_removal_secs >= 3 on the namespace's head" "the guest's needs"
ctl reconf $NVME 3 --dry-run > "$T/plan.txt" || fail "human NVMe dry run: $(cat "$T/plan.txt")"
grep -q "domain 'vmnvme' at 01:00.0: NVMe head kept, ACPI hotplug" "$T/plan.txt" || fail "human plan: $(cat "$T/plan.txt")"
grep -q "the guest needs Linux >= 6.16 with NVMe multipath and delayed_removal_secs >= 3" "$T/plan.txt" ||
        fail "human plan: $(cat "$T/plan.txt")"

note "a VF on a port without hotplug: refused, dry run or not, nothing changed"
ctl attach "$Q2" vmacpi --config --guest-address 02:00.0 >/dev/null || fail "attach $Q2"
live_records "$Q2"
# The domain's live XML as libvirt keeps it (an embedding svffd holds the
# root: from its file; a private libvirtd answers virsh).
live_xml() {
        if [ "$SVFF_LIBVIRT" = daemon ]; then virsh_ dumpxml vmacpi; else cat "$ROOT/run/qemu/vmacpi.xml"; fi
}
live_xml > "$T/live.before"
gen() { ctl status --json | jget 'd["store"]["generation"]'; }
g=$(gen)
for how in --dry-run ""; do
        # shellcheck disable=SC2086
        varlink_call io.svff.Reconf "{\"pf\": \"$QDMA\", \"numvfs\": 5$( [ -n "$how" ] && echo ', "dry_run": true')}" > "$T/vl"
        grep -q '"error":"io.svff.NoHotplug"' "$T/vl" || fail "reconf $how over varlink: $(cat "$T/vl")"
        grep -q '"domain":"vmacpi"' "$T/vl" || fail "the refusal's domain: $(cat "$T/vl")"
        grep -q '"port":"pcie-root-port index 2"' "$T/vl" || fail "the refusal's port: $(cat "$T/vl")"
        rc=0
        # shellcheck disable=SC2086
        ctl reconf $QDMA 5 $how > "$T/out" 2> "$T/err" || rc=$?
        expect_eq "$rc" 1 "reconf $how on a port without hotplug: exit status"
        grep -q "domain 'vmacpi' is at guest address 02:00.0 on pcie-root-port index 2, which has no hotplug" "$T/err" ||
                fail "reconf $how refusal: $(cat "$T/err")"
done
expect_eq "$(sys_numvfs $QDMA)" 4 "numvfs after the refusals"
expect_eq "$(gen)" "$g" "store generation after the refusals"
expect_eq "$(journal)" None "journal after the refusals"
live_xml > "$T/live.after"
cmp -s "$T/live.before" "$T/live.after" || fail "vmacpi's live XML changed: $(diff "$T/live.before" "$T/live.after")"
stop_svffd || fail "svffd exit status"
echo "PASS"
