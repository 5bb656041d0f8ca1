# The inside of bench/vm-reconf, sourced in the VM like a tests/vm
# scenario (tests/vm/lib.sh helpers; SVFF_VM_VFS = 8). Writes the figures
# to $SVFF_VM_RUNDIR/figures.txt.
#
# 1. Reconf cycles N -> 0 -> N with N = 1, 4, 8 assigned VFs, one per
#    OS-less nested domain: (a) a serial baseline doing what the SVFF
#    paper's scripts do with virsh; (b) svffd ('svffctl reconf'), with
#    svffd's CPU per VF, where the guest's CPU went in each cycle and
#    each domain's device downtime (libvirt's device-removed to device-added).
# 2. Binding 8 fresh VFs to vfio-pci: svffd ('svffctl init'), driverctl
#    set-override per VF, dpdk-devbind.py -b on all.
# 3. The CPU time of svff's store commit loop (bench-store), which
#    bench/vm-reconf also measures on the host: TCG's inflation.
# 4. The reprogram window with 4 assigned VFs (the NVMe PF stands in for
#    an FPGA, the flash hook only sleeps): svffd's 'svffctl reprogram'
#    beside a plain reconf cycle and beside the serial procedure of the
#    SVFF paper (detach all, numvfs 0, remove, flash, rescan, re-attach one
#    by one); the overhead beyond the hook, and remove + rescan + rebind.

[ "$SVFF_VM_VFS" -ge 8 ] || vm_fail "needs tests/vm/run --vfs 8"
for c in jq virsh driverctl dpdk-devbind.py; do
        command -v "$c" >/dev/null || vm_fail "no $c (scripts/setup-deps installs it)"
done
fig=$SVFF_VM_RUNDIR/figures.txt
: >"$fig"
. "$SVFF_VM_SRCDIR/bench/vm-lib.sh"

modprobe nvme
modprobe vfio-pci
pf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
P=/sys/bus/pci/devices/$pf
vm_wait 10 test -e "$P/driver" || vm_fail "PF $pf did not bind nvme"
# libvirtd serves 5 calls of one client at once unless told otherwise;
# svff.conf(5) says to raise it to svffd's libvirt_workers (16).
vm_libvirtd_start "max_client_requests = 16"
doms=""
for i in 1 2 3 4 5 6 7 8; do
        vm_domain_define "d$i"
        doms="$doms d$i"
done
vm_cleanup 'for d in $doms; do virsh -q destroy "$d" >/dev/null 2>&1; done'
vm_domains_start $doms

# vfs N: the addresses of VFs 0..N-1, which exist or will: routing ID
# PF + offset + i x stride (read once: they do not change with numvfs).
read -r offset <"$P/sriov_offset"
read -r stride <"$P/sriov_stride"
vfs() {
        IFS=:. read -r dom bus dev fn <<EOF
$pf
EOF
        rid=$((0x$bus * 256 + 0x$dev * 8 + 0x$fn + offset))
        i=0
        while [ "$i" -lt "$1" ]; do
                printf '%s:%02x:%02x.%x\n' "$dom" $((rid / 256)) $((rid / 8 % 32)) $((rid % 8))
                rid=$((rid + stride))
                i=$((i + 1))
        done
}
vf_check_layout() {
        i=0
        for v in $(vfs "$1"); do
                [ "$(basename "$(readlink "$P/virtfn$i")")" = "$v" ] || vm_fail "VF $i is not at $v"
                i=$((i + 1))
        done
}

# numvfs N, the plain way, with autoprobe off so that no host driver
# grabs the VFs (the baseline gets this favour too).
numvfs() {
        echo 0 >"$P/sriov_drivers_autoprobe"
        echo 0 >"$P/sriov_numvfs"
        [ "$1" = 0 ] || echo "$1" >"$P/sriov_numvfs"
}
on_vfio() {
        for v in "$@"; do
                [ "$(basename "$(readlink "/sys/bus/pci/devices/$v/driver")")" = vfio-pci ] || return 1
        done
}

# ---- the serial baseline (the SVFF paper's procedure, with virsh) ----

hostdev_xml() {
        echo "$1" | awk -F'[:.]' '{ printf "<hostdev mode=\"subsystem\" type=\"pci\" managed=\"no\"><driver name=\"vfio\"/><source><address domain=\"0x%s\" bus=\"0x%s\" slot=\"0x%s\" function=\"0x%s\"/></source></hostdev>\n", $1, $2, $3, $4 }' >"/run/hd-$1.xml"
}
serial_rebind() {
        for v in "$@"; do
                echo vfio-pci >"/sys/bus/pci/devices/$v/driver_override"
                echo "$v" >/sys/bus/pci/drivers_probe
        done
}
serial_attach() {
        i=1
        for v in "$@"; do
                virsh -q attach-device "d$i" "/run/hd-$v.xml" --live >/dev/null ||
                        vm_fail "virsh attach-device d$i $v failed"
                i=$((i + 1))
        done
}
no_hostdev() { [ -z "$(virsh -q dumpxml "$1" --xpath //hostdev 2>/dev/null)" ]; }
serial_detach() {
        i=1
        for v in "$@"; do
                virsh -q detach-device "d$i" "/run/hd-$v.xml" --live >/dev/null ||
                        vm_fail "virsh detach-device d$i $v failed"
                vm_wait 30 no_hostdev "d$i" || vm_fail "d$i did not release $v within 30 s"
                i=$((i + 1))
        done
}
# addresses VF...: each VF's place in its domain's query-pci, one line.
addresses() {
        i=1
        for v in "$@"; do
                printf '%s;' "$(vm_qpci_wait "d$i" "$v")"
                i=$((i + 1))
        done
}

# shell_sys_ms VAR: sets VAR to this shell's own system CPU time so far,
# in ms ('times' must run in this shell, not in a command substitution's
# child). Its 'echo >' writes are builtins: the kernel's work for them
# (creating and removing VFs, probing vfio-pci) is charged here, as it is
# to svffd's thread when svffd writes.
shell_sys_ms() {
        times >/run/bench-times
        eval "$1=$(awk 'NR == 1 { sub(/s$/, "", $2); split($2, a, "m"); printf "%.0f", (a[1] * 60 + a[2]) * 1000 }' /run/bench-times)"
}

# cpu_ms COMMAND...: COMMAND's user plus system CPU time in ms, its
# output dropped. Call it in a command substitution: 'times' then counts
# the children of that subshell, COMMAND alone. (bench/vm-reconf has
# the same on the host.)
cpu_ms() {
        "$@" >/dev/null || return
        times >/run/bench-cal-times
        awk 'NR == 2 { for (i = 1; i <= 2; i++) { sub(/s$/, "", $i); split($i, a, "m"); ms += (a[1] * 60 + a[2]) * 1000 }
                       printf "%.0f", ms }' /run/bench-cal-times
}
cal_commits=500

serial_cycle() {
        n=$1
        set -- $(vfs "$n")
        for v in "$@"; do hostdev_xml "$v"; done
        numvfs "$n"
        vf_check_layout "$n"
        serial_rebind "$@"
        serial_attach "$@"
        before=$(addresses "$@")
        case "$before" in *";;"*|";"*) vm_fail "baseline $n: a VF is missing from query-pci: $before" ;; esac

        t0=$(now)
        serial_detach "$@"
        t_detach=$(since "$t0")
        t1=$(now)
        shell_sys_ms k0
        numvfs "$n"
        t_numvfs=$(since "$t1")
        t1=$(now)
        serial_rebind "$@"
        shell_sys_ms k1
        on_vfio "$@" || vm_fail "baseline $n: rebind left a VF off vfio-pci"
        t_bind=$(since "$t1")
        t1=$(now)
        serial_attach "$@"
        t_attach=$(since "$t1")
        t_cycle=$(since "$t0")

        [ "$(addresses "$@")" = "$before" ] || vm_fail "baseline $n: guest addresses changed"
        say "  serial  $n VF(s): cycle $t_cycle s (detach $t_detach, numvfs $t_numvfs, bind $t_bind, attach $t_attach)"
        eval "serial_$n=$t_cycle kernel_$n=$(echo "$k0 $k1 $n" | awk '{ printf "%.1f", ($2 - $1) / $3 }')"
        serial_detach "$@"
        numvfs 0
}

# ---- svffd ----

# svffd_cpu: svffd's user and system CPU time so far in clock ticks, of
# every thread it ever ran (the process's own counters).
svffd_cpu() { awk '{ sub(/.*\) /, ""); print $12, $13 }' "/proc/$svffd_pid/stat"; }

# cpu_by_whom: CPU time so far in clock ticks of libvirtd, of the nested
# domains' QEMUs, and of the whole guest (every busy tick in /proc/stat).
cpu_by_whom() {
        for who in libvirtd qemu-system-x86_64; do
                # shellcheck disable=SC2046
                awk '{ sub(/.*\) /, ""); t += $12 + $13 } END { print t + 0 }' \
                        $(for p in $(pidof "$who"); do echo "/proc/$p/stat"; done) /dev/null
        done | tr '\n' ' '
        awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}
ticks=$(getconf CLK_TCK)

have_reconf() { svffctl reconf --help >/dev/null 2>&1; }

# downtimes FILE: each domain's device downtime in the cycle, from the
# libvirt events in FILE ('virsh event --timestamp' lines): from its
# hostdev's device-removed to its device-added, in seconds, one line per
# domain that lost its device. A domain paused in place (the device-pause
# command) loses nothing and has no line.
downtimes() {
        awk '{ split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3] }
             / event .device-removed. / { d = $0; sub(/.* for domain ./, "", d); sub(/.: .*/, "", d); gone[d] = s }
             / event .device-added. /   { d = $0; sub(/.* for domain ./, "", d); sub(/.: .*/, "", d)
                                          if (d in gone) { x = s - gone[d]; if (x < 0) x += 86400
                                                           printf "%.2f %s\n", x, d; delete gone[d] } }
             END { for (d in gone) printf "lost %s\n", d }' "$1"
}
# median_max FILE: "median M s, max X s" of the figures in FILE's first column.
median_max() {
        sort -g "$1" | awk '{ v[NR] = $1 } END { if (!NR) { print "n/a"; exit }
                m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                printf "median %.2f s, max %.2f s\n", m, v[NR] }'
}

# HOOK(reconf): one cycle N -> 0 -> N of svffd's reconf, keeping every
# assignment. Adjust here if 'svffctl reconf' spells it otherwise.
svffd_reconf() { svffctl reconf "$pf" "$1" >/dev/null; }

# svffd_measure N REP: one svffd reconf cycle with N assigned VFs. Writes
# $SVFF_VM_RUNDIR/cycle-N-REP: "SECONDS CPU OWN", then the lines to show
# of its CPU; its monitor stream to monitor-N-REP.json.
svffd_measure() {
        n=$1
        out=$SVFF_VM_RUNDIR/cycle-$n-$2
        mon=$SVFF_VM_RUNDIR/monitor-$n-$2.json
        # The binary itself, not the svffctl function: $! is then the
        # monitor, which the kill below ends.
        "$svffctl" --socket "$SVFF_SOCKET" monitor --json >"$mon" &
        mpid=$!
        ev=$SVFF_VM_RUNDIR/events-$n-$2.txt
        virsh -q event --all --loop --timestamp >"$ev" 2>/dev/null &
        epid=$!
        sleep 0.5
        c0=$(svffd_cpu)
        w0=$(cpu_by_whom)
        t0=$(now)
        svffd_reconf "$n" || vm_fail "svffctl reconf $pf $n failed"
        t_cycle=$(since "$t0")
        c1=$(svffd_cpu)
        w1=$(cpu_by_whom)
        sleep 0.2
        kill "$mpid" "$epid"
        wait "$mpid" 2>/dev/null || true
        wait "$epid" 2>/dev/null || true
        downtimes "$ev" >"$SVFF_VM_RUNDIR/downtime-$n-$2"
        grep '^lost' "$SVFF_VM_RUNDIR/downtime-$n-$2" && vm_fail "svffd $n: a domain did not get its device back"
        set -- $c0 $c1 "$n" "$ticks"
        cpu=$(echo "$@" | awk '{ printf "%.1f", ($3 + $4 - $1 - $2) * 1000 / $6 / $5 }')
        cpu_user=$(echo "$@" | awk '{ printf "%.1f", ($3 - $1) * 1000 / $6 / $5 }')
        cpu_sys=$(echo "$@" | awk '{ printf "%.1f", ($4 - $2) * 1000 / $6 / $5 }')
        [ "$(addresses $(vfs "$n"))" = "$before" ] || vm_fail "svffd $n: guest addresses changed"
        eval "k=\$kernel_$n"
        own=$(echo "$cpu $k" | awk '{ printf "%.1f", $1 - $2 }')
        {
                echo "$t_cycle $cpu $own"
                echo "                    svffd CPU $cpu ms per VF: user $cpu_user, system $cpu_sys;" \
                     "own (less the kernel's $k for the numvfs and bind writes) $own"
                # Where the guest's CPU went: the vCPUs' capacity bounds a cycle.
                echo "                    guest CPU in the cycle: $(echo "$w0 $w1 $c0 $c1 $t_cycle $ticks $(nproc)" | awk '{
                        printf "libvirtd %.2f s, nested QEMUs %.2f s, svffd %.2f s, all %.2f s of %d vCPUs x %.2f s (%.0f%% busy)",
                               ($4 - $1) / $12, ($5 - $2) / $12, ($9 + $10 - $7 - $8) / $12, ($6 - $3) / $12, $13, $11,
                               100 * ($6 - $3) / $12 / $13 / $11 }')"
        } >"$out"
}

# assign_all VF...: svffd inits the PF with that many VFs and gives the
# i-th to domain di.
assign_all() {
        svffctl init "$pf" "$#" >/dev/null || vm_fail "svffctl init $pf $# failed"
        i=1
        for v in "$@"; do
                svffctl attach "$v" "d$i" >/dev/null || vm_fail "svffctl attach $v d$i failed"
                i=$((i + 1))
        done
}

svffd_cycle() {
        n=$1
        set -- $(vfs "$n")
        assign_all "$@"
        before=$(addresses "$@")
        case "$before" in *";;"*|";"*) vm_fail "svffd $n: a VF is missing from query-pci: $before" ;; esac

        # The same cycle $reps times; the one with the median wall time is
        # shown, the others' times beside it.
        for rep in $(seq "$reps"); do svffd_measure "$n" "$rep"; done
        med=$(for rep in $(seq "$reps"); do echo "$(sed -n 1p "$SVFF_VM_RUNDIR/cycle-$n-$rep")" "$rep"; done |
                sort -g | sed -n "$(((reps + 1) / 2))p" | awk '{ print $NF }')
        set -- $(sed -n 1p "$SVFF_VM_RUNDIR/cycle-$n-$med")
        t_cycle=$1 cpu=$2 own=$3
        all=$(for rep in $(seq "$reps"); do sed -n 1p "$SVFF_VM_RUNDIR/cycle-$n-$rep" | cut -d' ' -f1; done |
                paste -sd/ - | sed 's|/| / |g')
        say "  svffd   $n VF(s): cycle $t_cycle s ($(phases "$SVFF_VM_RUNDIR/monitor-$n-$med.json")); cycles $all s"
        sed -n '2,$p' "$SVFF_VM_RUNDIR/cycle-$n-$med" | while IFS= read -r l; do say "$l"; done
        # Device downtime per domain over all $reps cycles of this N.
        cat $(for rep in $(seq "$reps"); do echo "$SVFF_VM_RUNDIR/downtime-$n-$rep"; done) >"$SVFF_VM_RUNDIR/downtime-$n"
        say "                    device downtime per domain ($(wc -l <"$SVFF_VM_RUNDIR/downtime-$n") removals in $reps cycles): $(median_max "$SVFF_VM_RUNDIR/downtime-$n")"
        eval "down_max_$n=$(sort -g "$SVFF_VM_RUNDIR/downtime-$n" | awk 'END { print $1 + 0 }')"
        eval "svffd_$n=$t_cycle cpu_$n=$cpu own_$n=$own prov_$n=$(provision_s "$SVFF_VM_RUNDIR/monitor-$n-$med.json")"
        set -- $(vfs "$n")
        for v in "$@"; do
                svffctl detach "$v" >/dev/null || vm_fail "svffctl detach $v failed"
        done
}

# ---- binding 8 fresh VFs ----

reps=3
bind_tool() {
        set -- $(vfs 8)
        times=""
        for r in $(seq "$reps"); do
                numvfs 0
                t0=$(now)
                numvfs 8
                case "$tool" in
                driverctl)
                        for v in "$@"; do driverctl --nosave set-override "$v" vfio-pci >&2; done ;;
                dpdk)
                        # It knows only DPDK's device classes (NICs,
                        # crypto, ...): an NVMe VF is "Unknown device".
                        dpdk-devbind.py -b vfio-pci "$@" >"$SVFF_VM_RUNDIR/dpdk.err" 2>&1 || {
                                echo refused
                                numvfs 0
                                return 0
                        } ;;
                esac
                t=$(since "$t0")
                on_vfio "$@" || vm_fail "$tool left a VF off vfio-pci"
                times="$times $t"
        done
        numvfs 0
        min $times
}

# $1 = reprogram (bench/vm-reconf BUILDDIR reprogram): only section 4.
if [ "${1:-}" != reprogram ]; then
say "Reconf cycles N -> 0 -> N, N assigned VFs, one per OS-less nested domain"
for n in 1 4 8; do serial_cycle "$n"; done

say ""
say "Binding 8 fresh VFs to vfio-pci (numvfs 0 -> 8 included; best of $reps)"
tool=driverctl; t_driverctl=$(bind_tool)
tool=dpdk; t_dpdk=$(bind_tool)

# The NVMe class active, as in production: init and every reconf
# provision each VF's secondary controller (2 VQ, 1 VI: what the PF's
# flexible pool gives each of 8 VFs) before vfio-pci.
vm_svffd_start "$(jq -n --arg pf "$pf" '{ policies: { bench: { match: { address: $pf },
        nvme: { vq: 2, vi: 1 } } } }')"
t_svffd=""
for r in $(seq "$reps"); do
        svffctl init "$pf" 0 >/dev/null || vm_fail "svffctl init $pf 0 failed"
        t0=$(now)
        svffctl init "$pf" 8 >/dev/null || vm_fail "svffctl init $pf 8 failed"
        t_svffd="$t_svffd $(since "$t0")"
        on_vfio $(vfs 8) || vm_fail "svffctl init left a VF off vfio-pci"
done
t_svffd=$(min $t_svffd)
say "  svffd (svffctl init PF 8):                 $t_svffd s  (NVMe class: each VF provisioned)"
say "  driverctl set-override, each VF:           $t_driverctl s  ($(ratio "$t_driverctl" "$t_svffd") x svffd)"
if [ "$t_dpdk" = refused ]; then
        say "  dpdk-devbind.py -b vfio-pci, all at once:  refused: $(tail -n1 "$SVFF_VM_RUNDIR/dpdk.err")"
else
        say "  dpdk-devbind.py -b vfio-pci, all at once:  $t_dpdk s  ($(ratio "$t_dpdk" "$t_svffd") x svffd)"
fi

say ""
if have_reconf; then
        say "Reconf cycles by svffd (each N: $reps cycles, the median shown)"
        for n in 1 4 8; do svffd_cycle "$n"; done
        say ""
        say "Ratios"
        say "  svffd  8 VFs / 1 VF:        $(ratio "$svffd_8" "$svffd_1")   (target <= 1.6)"
        say "  NVMe class (provision phase) share of the cycle: $(for n in 1 4 8; do
                eval "p=\$prov_$n c=\$svffd_$n"
                awk -v p="$p" -v c="$c" 'BEGIN { printf "%.0f%% (%.2f s)", (c > 0 ? 100 * p / c : 0), p }'
                [ "$n" = 8 ] || printf ' / '
        done) at 1 / 4 / 8 VFs (target at 8: <= 10%)"
        for n in 1 4 8; do
                eval "a=\$svffd_$n b=\$serial_$n"
                say "  svffd / serial at $n VF(s):  $(ratio "$a" "$b")   (target at 8: <= 0.3)"
        done
        say "  max device downtime at 4 / 8 VFs over 1 VF: $(ratio "$down_max_4" "$down_max_1") / $(ratio "$down_max_8" "$down_max_1")"
        say "  svffd CPU per VF per cycle: $cpu_1 / $cpu_4 / $cpu_8 ms at 1 / 4 / 8 VFs (target <= 5; TCG inflates it)"
        say "    less the kernel's work for the numvfs and bind writes: $own_1 / $own_4 / $own_8 ms"
        # The yardstick for TCG's inflation: svff's own store code, run
        # the same way on the host by bench/vm-reconf.
        cal=$(cpu_ms "$SVFF_VM_BUILDDIR/bench/bench-store" /run "$cal_commits") ||
                vm_fail "bench-store failed in the guest"
        echo "cal_guest=$cal cpu_1=$cpu_1 cpu_4=$cpu_4 cpu_8=$cpu_8" >"$SVFF_VM_RUNDIR/calibration"
else
        say "svffd reconf: not available in this build"
        say ""
        say "Ratios"
fi
say "  serial 8 VFs / 1 VF:        $(ratio "$serial_8" "$serial_1")   (the paper's serial procedure: 7.5 from 1 to 10 VFs)"
fi

# ---- the reprogram window ----

# rp_steps FILE: the reprogram's steps from svffd's monitor stream, each
# "ACTION +S" (seconds since the reprogram started, at the step's end).
rp_steps() {
        jq -r 'select(.timestamp_usec) | "\(.timestamp_usec) \(.event) \(.action // "-")"' "$1" |
                awk '$2 == "reconf-started" { t0 = $1 }
                     t0 && $2 == "reconf-step" && $3 != "-" { printf "%s +%.2f\n", $3, ($1 - t0) / 1e6 }'
}
# rp_at FILE ACTION: when (s since the start) the reprogram's ACTION step ended.
rp_at() { rp_steps "$1" | awk -v a="$2" '$1 == a { sub(/^\+/, "", $2); print $2; exit }'; }

hook_s=2
hook=/run/bench-flash-hook
images=/run/bench-images
mkdir -p "$images"
chmod 755 "$images"
echo image >"$images/a.bin"
printf '#!/bin/sh\ndate +%%s.%%N >>/run/bench-hook.times\nsleep %s\ndate +%%s.%%N >>/run/bench-hook.times\n' \
        "$hook_s" >"$hook"
chmod 755 "$hook"
hook_took() { awk 'NR == 1 { a = $1 } NR == 2 { printf "%.2f", $1 - a }' /run/bench-hook.times; }

say ""
[ -z "${svffd_pid:-}" ] || vm_svffd_stop
vm_svffd_start "$(jq -n --arg h "$hook" --arg d "$images" '{ flash_hook: $h, flash_image_dir: $d }')"
if svffctl reprogram --help >/dev/null 2>&1; then
        say "The reprogram window, 4 assigned VFs (the NVMe PF stands in for an FPGA; the hook sleeps $hook_s s)"
        set -- $(vfs 4)
        assign_all "$@"
        before=$(addresses "$@")
        t0=$(now)
        svffd_reconf 4 || vm_fail "svffctl reconf $pf 4 failed"
        t_plain=$(since "$t0")
        mon=$SVFF_VM_RUNDIR/monitor-reprogram.json
        "$svffctl" --socket "$SVFF_SOCKET" monitor --json >"$mon" &
        mpid=$!
        sleep 0.5
        rm -f /run/bench-hook.times
        t0=$(now)
        svffctl reprogram "$pf" "$images/a.bin" >"$SVFF_VM_RUNDIR/reprogram.out" 2>&1 ||
                { cat "$SVFF_VM_RUNDIR/reprogram.out"; vm_fail "svffctl reprogram $pf failed"; }
        t_rp=$(since "$t0")
        sleep 0.2
        kill "$mpid"
        wait "$mpid" 2>/dev/null || true
        [ "$(addresses "$@")" = "$before" ] || vm_fail "reprogram: guest addresses changed"
        h=$(hook_took)
        rp_steps "$mon" >"$SVFF_VM_RUNDIR/reprogram-steps.txt"
        # remove + rescan + rebind: from numvfs 0 to the PF off the bus,
        # and from the hook's end to the PF's driver bound again.
        t_remove=$(awk -v a="$(rp_at "$mon" remove_pf)" -v b="$(rp_at "$mon" numvfs)" 'BEGIN { printf "%.2f", a - b }')
        t_back=$(awk -v a="$(rp_at "$mon" bind_pf)" -v b="$(rp_at "$mon" flash)" 'BEGIN { printf "%.2f", a - b }')
        for v in "$@"; do svffctl detach "$v" >/dev/null || vm_fail "svffctl detach $v failed"; done
        svffctl init "$pf" 0 >/dev/null || vm_fail "svffctl init $pf 0 failed"
        # The serial procedure runs alone: svffd would put back the count
        # it recorded when the PF changes under it.
        vm_svffd_stop

        # The serial procedure, by hand, the same hook.
        for v in "$@"; do hostdev_xml "$v"; done
        numvfs 4
        serial_rebind "$@"
        serial_attach "$@"
        before=$(addresses "$@")
        rm -f /run/bench-hook.times
        t0=$(now)
        serial_detach "$@"
        numvfs 0
        echo 1 >"$P/remove"
        "$hook" "$pf" "$images/a.bin" 0
        echo 1 >/sys/bus/pci/rescan
        vm_wait 30 test -e "$P/driver" || vm_fail "serial: PF $pf did not come back on nvme"
        numvfs 4
        serial_rebind "$@"
        serial_attach "$@"
        t_serial=$(since "$t0")
        [ "$(addresses "$@")" = "$before" ] || vm_fail "serial reprogram: guest addresses changed"
        hs=$(hook_took)
        serial_detach "$@"
        numvfs 0

        say "  svffd   reprogram:   $t_rp s; beyond the hook ($h s): $(echo "$t_rp $h" | awk '{ printf "%.2f", $1 - $2 }') s"
        say "                       remove (numvfs 0 to the PF off the bus) $t_remove s, rescan + rebind (hook's end to PF driver bound) $t_back s"
        say "                       steps: $(tr '\n' ' ' <"$SVFF_VM_RUNDIR/reprogram-steps.txt")"
        say "  svffd   plain reconf cycle 4 -> 0 -> 4: $t_plain s; the window adds $(echo "$t_rp $h $t_plain" | awk '{ printf "%.2f", $1 - $2 - $3 }') s to it"
        say "  serial  reprogram:   $t_serial s; beyond the hook ($hs s): $(echo "$t_serial $hs" | awk '{ printf "%.2f", $1 - $2 }') s"
        say "  svffd / serial (beyond the hook): $(ratio "$(echo "$t_rp $h" | awk '{ print $1 - $2 }')" "$(echo "$t_serial $hs" | awk '{ print $1 - $2 }')")"
else
        say "svffd reprogram: not available in this build"
fi
