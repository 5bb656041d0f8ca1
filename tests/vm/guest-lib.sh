# The VM tier's nested Linux guest, g1, for the scenarios that run one
# (tests/vm/run --guest): sourced after tests/vm/lib.sh.
#
#   guest_define CMDLINE [DEVICES]   defines g1: direct kernel boot of
#       SVFF_VM_GUEST_KERNEL and SVFF_VM_GUEST_INITRD with CMDLINE (after
#       the tier's own options), q35 with ACPI, 256 MiB, 1 vCPU, three
#       root ports, its console in /run/guest-console.log, its commands
#       on its second serial port (tests/vm/guest-init), QEMU's guest
#       agent channel, and DEVICES (XML) besides;
#   guest_start                      boots it, once more if nested TCG
#       lost its kernel (a skip if twice), and logs the boot time;
#   guest_run COMMAND, guest COMMAND run COMMAND in its shell;
#   field, probe_line                read tests/vm/guest-probe's lines;
#   probe_finish CASE                stops the probe, reads its end line;
#   host_events FILE, host_events_stop, device_off FILE
#                                    libvirt's view of g1's hotplugs.
#
# GLOG is everything the guest sent over its second serial port.

# The tier's guest kernel options: quiet, no timers that nested TCG's
# slowness would trip. No crypto self-tests (4.5 s of the boot under
# nested TCG, initcall_debug measured; the guests use no crypto), and no
# DAMON statistics, on by default, whose kdamond samples the guest's
# memory all along on its one vCPU. (Leaving out more of the boot's
# work, with initcall_blacklist, saved 40 s more; the guests it ran
# died of the emulation's faults in two runs of three with it (none
# in the runs before it), and it was taken back.)
guest_cmdline_base="console=ttyS0 quiet nokaslr mitigations=off tsc=reliable nowatchdog nosoftlockup"
guest_cmdline_base="$guest_cmdline_base rcupdate.rcu_cpu_stall_suppress=1 panic=-1"
guest_cmdline_base="$guest_cmdline_base cryptomgr.notests damon_stat.enabled=N"
GLOG=/run/guest-serial.log
gpipe=/run/g1

guest_define() {
        command -v virsh >/dev/null || vm_fail "no virsh (package libvirt-clients)"
        [ -r "${SVFF_VM_GUEST_KERNEL:-}" ] && [ -r "${SVFF_VM_GUEST_INITRD:-}" ] ||
                vm_fail "no guest kernel or initramfs: run this with tests/vm/run --guest"
        img=/var/lib/libvirt/images
        mkdir -p "$img"
        cp "$SVFF_VM_GUEST_KERNEL" "$img/svff-guest-vmlinuz"
        cp "$SVFF_VM_GUEST_INITRD" "$img/svff-guest-initrd.img"
        mkfifo "$gpipe.in" "$gpipe.out"
        : >"$GLOG"
        # Opened read-write: a reader alone would see the end of the pipe
        # when libvirt opens and closes it while starting the domain, and
        # stop.
        cat <>"$gpipe.out" >>"$GLOG" &
        catpid=$!
        vm_cleanup 'kill "$catpid" 2>/dev/null; cp /run/guest-serial.log /run/guest-console.log "$SVFF_VM_RUNDIR/" 2>/dev/null'
        cat >/run/g1.xml <<XML
<domain type='qemu'>
  <name>g1</name>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>$img/svff-guest-vmlinuz</kernel>
    <initrd>$img/svff-guest-initrd.img</initrd>
    <cmdline>$guest_cmdline_base $1</cmdline>
  </os>
  <features><acpi/><apic/></features>
  <on_reboot>destroy</on_reboot>
  <devices>
    <controller type='pci' index='0' model='pcie-root'/>
    <controller type='pci' index='1' model='pcie-root-port'/>
    <controller type='pci' index='2' model='pcie-root-port'/>
    <controller type='pci' index='3' model='pcie-root-port'/>
    <controller type='usb' model='none'/>
    <serial type='file'><source path='/run/guest-console.log'/><target port='0'/></serial>
    <serial type='pipe'><source path='$gpipe'/><target port='1'/></serial>
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
    <memballoon model='none'/>
    ${2:-}
  </devices>
</domain>
XML
        virsh -q define /run/g1.xml >/dev/null || vm_fail "virsh define g1 failed"
        vm_cleanup 'virsh -q destroy g1 >/dev/null 2>&1'
}

# guest_run COMMAND: runs COMMAND in the guest's shell (tests/vm/guest-init)
# and waits for it, up to gtimeout s (60); its status in grc, its output
# (the probe's lines left out) in gout; output must end with a newline.
# guest COMMAND: the same, and fails the scenario unless COMMAND succeeds.
gseq=0
guest_done() { grep -q "^guest: done $gseq " "$GLOG"; }
guest_run() {
        gseq=$((gseq + 1))
        # Opened read-write, the pipe's open never waits for a reader: a
        # guest whose QEMU is gone fails below, instead of hanging here.
        printf '%s %s\n' "$gseq" "$*" 1<>"$gpipe.in"
        if ! vm_wait "${gtimeout:-60}" guest_done; then
                # A kernel panic of the nested guest (a double fault of
                # nested TCG, seen rarely), or its kernel gone without one
                # (the domain no longer runs: panic=-1, on_reboot
                # destroy), tells tests/vm/run to run the scenario once
                # more.
                gstate=$(virsh -q domstate g1 2>&1) || gstate="unknown: $gstate"
                if grep -q "Kernel panic" /run/guest-console.log 2>/dev/null || [ "$gstate" != running ]; then
                        : >"$SVFF_VM_RUNDIR/guest-panicked"
                        vm_fail "the nested guest died during '$*' (g1 $gstate; guest-console.log)"
                fi
                vm_fail "the guest did not finish '$*' within ${gtimeout:-60} s (guest-serial.log, guest-console.log)"
        fi
        grc=$(sed -n "s/^guest: done $gseq rc=\([0-9]*\).*/\1/p" "$GLOG")
        gout=$(sed -n "/^guest: cmd $gseq\$/,/^guest: done $gseq /p" "$GLOG" | sed '1d;$d' | grep -v '^probe ' || true)
}
guest() {
        guest_run "$@"
        [ "$grc" = 0 ] || vm_fail "in the guest, '$*' exited $grc: $gout"
}
# field NAME LINE: NAME's value in a probe line ("... NAME=VALUE ...").
field() { echo "$2" | sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
# probe_line KIND: the last probe line of KIND (status, end) in the log.
probe_line() { grep "^probe t=[0-9.]* $1 " "$GLOG" | tail -n1; }

# guest_boot: starts g1 and waits for its /init, up to 600 s; returns 1
# if the domain ended first (its kernel died: panic=-1 and on_reboot
# destroy), 2 if it did not come up in time (its kernel hung: a double
# fault loops without a panic). About 3 minutes under nested TCG.
guest_boot() {
        virsh -q start g1 >"$SVFF_VM_RUNDIR/start-g1.log" 2>&1 ||
                vm_fail "virsh start g1 failed: $(cat "$SVFF_VM_RUNDIR/start-g1.log")"
        deadline=$(awk '{ print $1 + 600 }' /proc/uptime)
        until grep -q '^guest: ready' "$GLOG"; do
                [ "$(virsh -q domstate g1 2>/dev/null)" = running ] || return 1
                if awk -v d="$deadline" '{ exit !($1 > d) }' /proc/uptime; then
                        virsh -q destroy g1 >/dev/null 2>&1
                        return 2
                fi
                sleep 2
        done
}
# why_not_up: the first line of the guest kernel's report, if any.
why_not_up() {
        grep -m1 -E 'panic|Oops|BUG|fault' /run/guest-console.log 2>/dev/null || echo "no kernel report on its console"
}
guest_start() {
        vm_log "starting the guest (Linux $(basename "$SVFF_VM_GUEST_KERNEL" | sed 's/^vmlinuz-//'), 256 MiB, 1 vCPU)"
        gt=$(vm_now)
        rc=0
        guest_boot || rc=$?
        if [ "$rc" != 0 ]; then
                # Seen under nested TCG on a loaded machine: a general
                # protection fault in the guest kernel's early text
                # patching, a double fault in its first allocations. The
                # emulation, not svff: once more.
                cp /run/guest-console.log "$SVFF_VM_RUNDIR/guest-console.died.log" 2>/dev/null || true
                vm_log "the guest's kernel $([ "$rc" = 1 ] && echo died || echo hung) while booting ($(why_not_up));" \
                       "booting it once more (guest-console.died.log)"
                : >/run/guest-console.log
                gt=$(vm_now)
                rc=0
                guest_boot || rc=$?
                # Twice: nested TCG cannot run this guest kernel here, so
                # nothing of svff was tried; a skip, counted and
                # explained, not a pass.
                [ "$rc" = 0 ] ||
                        vm_skip "the nested Linux guest's kernel $([ "$rc" = 1 ] && echo died || echo hung) while booting," \
                                "twice, under nested TCG ($(why_not_up)); svff's guest-side checks could not run"
        fi
        vm_log "FIGURE guest boot: $(echo "$gt $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }') s from 'virsh start'" \
               "to its /init reading commands ($(sed -n 's/^guest: ready t=//p' "$GLOG") s of guest uptime)"
}

# probe_finish CASE: stops the guest's probe ($p in the guest's shell)
# and waits for it; its end line in end (the scenario fails without
# one), and libvirt's device-off times from CASE's events
# (host_events "$SVFF_VM_RUNDIR/events-CASE.log") in off.
probe_finish() {
        guest 'kill $p; wait $p'
        end=$(probe_line end)
        [ -n "$end" ] || vm_fail "$1: the probe printed no end line"
        vm_log "$1: the probe: $end"
        off=$(device_off "$SVFF_VM_RUNDIR/events-$1.log" | tr '\n' ' ')
}

# host_events FILE: libvirt's device-removed and device-added events for
# g1, with times, from now until host_events_stop.
host_events() {
        virsh -q event g1 --all --loop --timestamp >"$1" 2>&1 &
        evpid=$!
        sleep 1
}
host_events_stop() { kill "$evpid" 2>/dev/null; wait "$evpid" 2>/dev/null || true; }
# device_off FILE: the seconds between each device-removed and the next
# device-added in FILE, one a line: how long the guest had no device.
device_off() {
        sed -n "s/^\([0-9-]* [0-9:.]*\)[+0-9]*: event '\(device-removed\|device-added\)'.*/\1 \2/p" "$1" |
                while read -r d tm kind; do echo "$(date -u -d "$d $tm" +%s.%N) $kind"; done |
                awk '$2 == "device-removed" { r = $1 } $2 == "device-added" && r { printf "%.2f\n", $1 - r; r = 0 }'
}
