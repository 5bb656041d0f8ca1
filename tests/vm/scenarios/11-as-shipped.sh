# svff as it ships: systemd is PID 1 (tests/vm/run --systemd), svff is
# installed with the README's "Installing on a real host" steps, run here
# line by line from the README itself, and svffd runs only as systemd
# starts it, from the installed svffd.socket and svffd.service, inside the
# unit's sandbox, beside systemd-udevd, journald and Debian's
# libvirtd.service. This scenario is itself a unit ordered after
# multi-user.target (tests/vm/init).
#
# vm-run: --systemd --nic --namespaces --timeout 1500
#
# Checked on the real kernel, with both PFs in one VM (QEMU 10: the
# emulated NVMe PF and the igb NIC):
# - socket activation: svffd is not running after the install; the first
#   'svffctl list' starts it, and READY=1 comes with the policies applied;
# - the policies under the unit's sandbox: the NVMe class brings every
#   secondary controller online with its namespace ('nvme list-secondary',
#   'nvme list-ctrl'); the NIC class sets MAC, VLAN, trust and spoof
#   checking ('ip link show');
# - 'journalctl -u svffd SVFF_PF=PF' returns that PF's lines and no other's,
#   and every line naming one of its devices carries the fields;
# - 'systemd-analyze security svffd.service' scores 2.5 or below;
# - 'systemctl reload svffd' applies a changed count;
# - a reprogram of the NVMe PF runs the flash hook in a transient unit of
#   its own: its output in 'journalctl -u svff-flash-...', its cgroup its
#   unit's, none of svffd's sandbox, a scratch directory; a hook owned by
#   uid 65534 is refused by path and owner before anything is touched; a
#   hook that hangs is killed by systemd at its deadline with its setsid()
#   child; 'systemctl stop svffd' during a flash leaves the unit running,
#   and the next start takes up its success: every VF back;
# - 'systemctl stop svffd' in the middle of a reconf of 4 VFs assigned to
#   4 running domains under libvirtd.service: a clean exit within
#   TimeoutStopSec with the journal kept, and after 'systemctl start'
#   every domain has its VF at the guest address it had;
# - the same reconf with svffd hung (SIGSTOP): the watchdog fires within
#   WatchdogSec, its restart resumes the journal, and every domain has
#   its VF again;
# - a second boot of the same VM (11-as-shipped.boot2): svffd, started at
#   boot, is READY before libvirtd autostarts the domains that use its
#   VFs, and each has its VF where it was, with its assignment's class
#   state.
# The class checks all run before the first failure is reported, so one
# boot shows each class that does not work under the sandbox.

[ "${SVFF_VM_SYSTEMD:-0}" = 1 ] || vm_fail "needs tests/vm/run --systemd: it never skips"
# The installed svffctl, not lib.sh's wrapper around the build tree's.
unset -f svffctl
[ "${SVFF_VM_NIC:-0}" = 1 ] || vm_fail "needs tests/vm/run --nic (QEMU 10's igb): it never skips"
[ "${SVFF_VM_NAMESPACES:-0}" -ge 4 ] || vm_fail "needs tests/vm/run --namespaces with 4 VFs"
for c in jq nvme ip systemctl journalctl systemd-analyze make; do
        command -v "$c" >/dev/null || vm_fail "no $c (scripts/setup-deps installs it)"
done
R=$SVFF_VM_RUNDIR
B=$SVFF_VM_SHIPPED_BUILDDIR
[ -f "$B/Makefile" ] || vm_fail "no operator's build in '$B' (tests/vm/run --systemd builds it)"

assert_eq "PID 1" systemd "$(cat /proc/1/comm)"
vm_log "booted to multi-user.target: $(systemctl show -P ActiveEnterTimestampMonotonic multi-user.target |
        awk '{ printf "%.1f", $1 / 1e6 }') s"
for u in systemd-journald.service systemd-udevd.service libvirtd.service; do
        assert_eq "$u under systemd" active "$(systemctl is-active "$u" || true)"
done

# libvirtd.service keeps its probed capabilities: hand them back.
vm_libvirt_used=1
vm_cleanup 'journalctl -b --no-pager -o short-monotonic >"$R/journal.txt" 2>&1'
vm_cleanup 'journalctl -b --no-pager -o json -u svffd.service >"$R/svffd-journal.json" 2>&1'

# ---- the PFs, on the drivers udev loaded for them ----
nvmepf=$(vm_nvme_pf) || vm_fail "no NVMe PF"
vm_wait 30 sh -c "ls /sys/bus/pci/devices/$nvmepf/nvme 2>/dev/null | grep -q '^nvme'" ||
        vm_fail "PF $nvmepf did not come up on nvme (udev loads the driver)"
ctrl=$(ls "/sys/bus/pci/devices/$nvmepf/nvme" | grep '^nvme' | head -n1)
dev=/dev/$ctrl
nicpf=$(vm_nic_pf) || vm_fail "no igb PF (8086:10c9)"
vm_wait 30 test -d "/sys/bus/pci/devices/$nicpf/net" || vm_fail "PF $nicpf did not come up on igb"
ifname=$(ls "/sys/bus/pci/devices/$nicpf/net" | head -n1)
ip link set "$ifname" up || true
vm_log "NVMe PF $nvmepf ($ctrl), NIC PF $nicpf ($ifname)"

# ---- the README's install, line by line ----
# Its first sh block: the section's later ones (the guests' recipes) are
# not install steps.
sed -n '/^## Installing on a real host/,/^## [^I]/p' "$SVFF_VM_SRCDIR/README.md" |
        awk '/^```sh$/ && !done { inb = 1; next } inb && /^```$/ { inb = 0; done = 1; next } inb' \
        >"$R/readme-install.sh"
[ -s "$R/readme-install.sh" ] || vm_fail "no sh block under README.md's 'Installing on a real host'"
config=$(jq -n --arg n "$nvmepf" --arg c "$nicpf" '{ policies: {
        nvme: { match: { address: $n }, numvfs: 4,
                nvme: { vq: 2, vi: 1, namespace: [1, 2, 3, 4] } },
        nic: { match: { address: $c }, numvfs: 4,
               nic: { mac_prefix: "02:53:00:00", vlan: 100, trust: true, spoofchk: false,
                      nic_strict: false } } } }')
while IFS= read -r line; do
        case "$line" in
        "scripts/setup-deps "*)
                # The host's packages are this root's: scripts/check ran it.
                vm_log "README: $line (done on the host)"; continue ;;
        "scripts/build build "*)
                vm_log "README: $line (done on the host, into $B)"; continue ;;
        esac
        # As root already; the README's build directory is $B here.
        cmd=$(printf '%s\n' "$line" | sed -e 's/sudo //g' -e 's/ -C build / -C "$B" /')
        vm_log "README: $line"
        t=$(vm_now)
        sh -c "B='$B'; $cmd" >"$R/readme-step.log" 2>&1 ||
                { tail -n 30 "$R/readme-step.log"; vm_fail "README step failed: $line"; }
        cat "$R/readme-step.log" >>"$R/readme-install.log"
        vm_log "  took $(echo "$t $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }') s"
        case "$line" in
        *"cp /etc/svff/svff.conf.example /etc/svff/svff.conf"*)
                # "then edit the policies"
                echo "$config" >/etc/svff/svff.conf ;;
        esac
done <"$R/readme-install.sh"
assert_exists /usr/sbin/svffd
assert_exists /lib/systemd/system/svffd.service
assert_eq "svffd.socket after the install" active "$(systemctl is-active svffd.socket || true)"
assert_eq "svffd.service enabled" enabled "$(systemctl is-enabled svffd.service || true)"

# ---- socket activation: the first svffctl call starts svffd ----
assert_eq "svffd.service before the first svffctl call" inactive "$(systemctl is-active svffd.service || true)"
t=$(vm_now)
svffctl list >"$R/list-first.txt" 2>&1 || { cat "$R/list-first.txt"; vm_fail "the first 'svffctl list' failed"; }
vm_log "the first svffctl list answered after $(echo "$t $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }') s"
ready() { [ "$(systemctl show -P ActiveState svffd.service)" = active ]; }
vm_wait 120 ready || vm_fail "svffd.service not active 120 s after the first call: $(systemctl status svffd.service)"
assert_eq "svffd.service started by its socket" "svffd.socket" \
        "$(systemctl show -P TriggeredBy svffd.service)"
assert_true "svffd runs in svffd.service's cgroup" \
        grep -q '/system.slice/svffd.service$' "/proc/$(systemctl show -P MainPID svffd.service)/cgroup"
started=$(systemctl show -P ExecMainStartTimestampMonotonic svffd.service)
readyat=$(systemctl show -P ActiveEnterTimestampMonotonic svffd.service)
vm_log "svffd: READY=1 $(echo "$started $readyat" | awk '{ printf "%.2f", ($2 - $1) / 1e6 }') s after its start, $(echo "$readyat" | awk '{ printf "%.1f", $1 / 1e6 }') s after boot"
echo "boot-to-READY: $(echo "$readyat" | awk '{ printf "%.1f", $1 / 1e6 }') s" >"$R/boot-to-ready"

# ---- the policies under the unit's sandbox ----
fails=0
# check WHAT EXPECTED ACTUAL: like assert_eq, but counted and reported at
# the end of the class checks, so both classes are seen in one boot.
check() {
        vm_checks=$((vm_checks + 1))
        if [ "$2" = "$3" ]; then
                echo "ok: $1 = '$3'"
        else
                echo "FAILED: $1: expected '$2', got '$3'"
                fails=$((fails + 1))
        fi
}
svffctl status --json >"$R/status.json" 2>&1 || true

N=/sys/bus/pci/devices/$nvmepf
check "NVMe PF sriov_numvfs" 4 "$(cat "$N/sriov_numvfs")"
for i in 0 1 2 3; do
        [ -e "$N/virtfn$i" ] || { check "NVMe VF $i exists" yes no; continue; }
        check "NVMe VF $i secondary state (1 = online)" 1 "$(vm_secondary "$i" secondary-controller-state)"
        check "NVMe VF $i VQ/VI" 2/1 "$(vm_secondary "$i" num-virtual-queues)/$(vm_secondary "$i" num-virtual-interrupts)"
        check "NVMe namespace $((i + 1)) attached to VF $i's secondary only" \
                "$(vm_secondary "$i" secondary-controller-identifier)" "$(vm_ctrls_of $((i + 1)))"
        check "NVMe VF $i driver" vfio-pci "$(basename "$(readlink "$N/virtfn$i/driver")")"
done

C=/sys/bus/pci/devices/$nicpf
check "NIC PF sriov_numvfs" 4 "$(cat "$C/sriov_numvfs")"
for i in 0 1 2 3; do
        l=$(vm_vfline "$i")
        check "NIC VF $i MAC (ip link show)" "02:53:00:00:00:0$i" \
                "$(echo "$l" | sed -n 's/^link\/ether \([0-9a-f:]*\).*/\1/p')"
        check "NIC VF $i VLAN" 100 "$(echo "$l" | sed -n 's/.*, vlan \([0-9]*\).*/\1/p')"
        check "NIC VF $i trust" on "$(echo "$l" | sed -n 's/.*trust \([a-z]*\).*/\1/p')"
        check "NIC VF $i spoof checking" off "$(echo "$l" | sed -n 's/.*spoof checking \([a-z]*\).*/\1/p')"
        [ ! -e "$C/virtfn$i" ] ||
                check "NIC VF $i driver" vfio-pci "$(basename "$(readlink "$C/virtfn$i/driver" 2>/dev/null)")"
done
cp "$R/iplink.txt" "$R/iplink-policy.txt"
if [ "$fails" != 0 ]; then
        echo "svffd's journal, errors and warnings:"
        journalctl -b --no-pager -u svffd.service -p warning | tail -n 40
        vm_fail "$fails class check(s) failed under svffd.service's sandbox"
fi

# ---- journal fields: one PF's history ----
journalctl -b --no-pager -u svffd.service -o json >"$R/svffd-journal.json"
nvmevfs=$(for i in 0 1 2 3; do basename "$(readlink "$N/virtfn$i")"; done | tr '\n' ' ')
nicvfs=$(for i in 0 1 2 3; do basename "$(readlink "$C/virtfn$i")"; done | tr '\n' ' ')
# names DEVICES...: a jq test whether MESSAGE names any of DEVICES.
names() { printf '%s\n' "$@" | jq -R . | jq -s -c 'map(select(length > 0))'; }
nvmenames=$(names "$nvmepf" $nvmevfs)
nicnames=$(names "$nicpf" $nicvfs)
journalctl -b --no-pager -u svffd.service "SVFF_PF=$nvmepf" -o json >"$R/journal-nvme-pf.json"
assert_true "journalctl -u svffd SVFF_PF=$nvmepf has lines" test -s "$R/journal-nvme-pf.json"
vm_log "journalctl -u svffd SVFF_PF=$nvmepf: $(wc -l <"$R/journal-nvme-pf.json") lines"
assert_eq "lines with SVFF_PF=$nvmepf that name the NIC's devices" 0 \
        "$(jq -s --argjson n "$nicnames" '[.[] | select(.MESSAGE as $m | $n | any(. as $d | $m | contains($d)))] | length' \
        "$R/journal-nvme-pf.json")"
assert_eq "lines naming the NVMe PF or its VFs without SVFF_PF=$nvmepf" 0 \
        "$(jq -s --argjson n "$nvmenames" --arg pf "$nvmepf" \
        '[.[] | select((.MESSAGE | type) == "string" and (.MESSAGE as $m | $n | any(. as $d | $m | contains($d))) and .SVFF_PF != $pf)] | length' \
        "$R/svffd-journal.json")"
assert_eq "lines naming the NIC PF or its VFs without SVFF_PF=$nicpf" 0 \
        "$(jq -s --argjson n "$nicnames" --arg pf "$nicpf" \
        '[.[] | select((.MESSAGE | type) == "string" and (.MESSAGE as $m | $n | any(. as $d | $m | contains($d))) and .SVFF_PF != $pf)] | length' \
        "$R/svffd-journal.json")"
assert_eq "lines with SVFF_PF=$nvmepf without SVFF_OPERATION=" 0 \
        "$(jq -s '[.[] | select(.SVFF_OPERATION == null)] | length' "$R/journal-nvme-pf.json")"
# A VF's own history: release NVMe VF 3 (its secondary goes offline).
nvmevf3=$(basename "$(readlink "$N/virtfn3")")
svffctl release "$nvmevf3" >"$R/release.out" 2>&1 || { cat "$R/release.out"; vm_fail "svffctl release $nvmevf3 failed"; }
journalctl -b --no-pager -u svffd.service "SVFF_VF=$nvmevf3" -o json >"$R/journal-vf.json"
vm_log "journalctl -u svffd SVFF_VF=$nvmevf3: $(jq -r '.MESSAGE' "$R/journal-vf.json" | tr '\n' '|')"
assert_true "journalctl -u svffd SVFF_VF=$nvmevf3 shows its release" \
        test "$(jq -s --arg pf "$nvmepf" '[.[] | select(.SVFF_PF == $pf and .SVFF_OPERATION == "release")] | length' \
        "$R/journal-vf.json")" -gt 0
assert_eq "lines with SVFF_VF=$nvmevf3 that name another VF" 0 \
        "$(jq -s --argjson n "$(names $nvmevfs $nicvfs | jq -c --arg v "$nvmevf3" 'map(select(. != $v))')" \
        '[.[] | select(.MESSAGE as $m | $n | any(. as $d | $m | contains($d)))] | length' "$R/journal-vf.json")"

# ---- the sandbox's score ----
systemd-analyze security svffd.service --no-pager >"$R/security.txt" 2>&1 ||
        true # it exits non-zero for a unit it finds exposed; the score decides
score=$(sed -n 's/.*Overall exposure level for svffd.service: \([0-9.]*\).*/\1/p' "$R/security.txt")
vm_log "systemd-analyze security svffd.service: $(grep 'Overall exposure' "$R/security.txt")"
assert_true "systemd-analyze security printed a score" test -n "$score"
assert_true "exposure $score is at most 2.5" awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }'

# ---- systemctl reload applies a changed count ----
echo "$config" | jq --arg c "$nicpf" '.policies.nic.numvfs = 3' >/etc/svff/svff.conf
systemctl reload svffd.service || vm_fail "systemctl reload svffd failed: $(systemctl status svffd.service)"
nic_vfs_are() { [ "$(cat "$C/sriov_numvfs")" = "$1" ]; }
vf2_bound() { [ "$(basename "$(readlink "$C/virtfn2/driver" 2>/dev/null)")" = vfio-pci ]; }
t=$(vm_now)
vm_wait 60 nic_vfs_are 3 ||
        vm_fail "the NIC PF has $(cat "$C/sriov_numvfs") VFs 60 s after the reload, the policy says 3"
vm_wait 30 vf2_bound || vm_fail "after reload: NIC VF 2 not on vfio-pci"
vm_log "the reload's count applied after $(echo "$t $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }') s"
assert_eq "after reload: NIC PF sriov_numvfs" 3 "$(cat "$C/sriov_numvfs")"
assert_eq "after reload: NIC VF 2 MAC" 02:53:00:00:00:02 \
        "$(vm_vfline 2 | sed -n 's/^link\/ether \([0-9a-f:]*\).*/\1/p')"
assert_eq "svffd.service after the reload" active "$(systemctl is-active svffd.service)"
assert_eq "svffd.service restarts" 0 "$(systemctl show -P NRestarts svffd.service)"

# ---- a PF that appears starts svffd through the udev rule ----
# As at boot (systemd-udev-trigger's coldplug) or a hot-add: an "add"
# uevent of an SR-IOV PF, with svffd stopped and no client on its socket.
systemctl stop svffd.service
assert_eq "svffd.service after a stop" inactive "$(systemctl is-active svffd.service || true)"
udevadm trigger --action=add --settle "/sys/bus/pci/devices/$nicpf"
vm_wait 60 ready || vm_fail "svffd.service not started 60 s after an add uevent of $nicpf: $(systemctl status svffd.service)"
assert_true "svffd.service wanted by the PF's device unit (udev rule)" \
        sh -c "systemctl show -P WantedBy svffd.service | grep -q 'sys-devices-pci.*${nicpf}.device'"

# ---- reprogram: the flash hook in a transient unit of its own ----
# The emulated NVMe PF stands in for an FPGA (as in 10-reprogram.sh): the
# hook logs what it sees and sleeps. Under systemd it runs in a unit
# svffd starts through systemd's D-Bus API: its output in that unit's
# journal, nothing of svffd's sandbox, a scratch directory; systemd kills
# it with every process in its cgroup at its deadline; a stop of svffd
# does not stop it, and the next start takes up its result. A hook owned
# by another user is refused before anything is touched.
F=/run/svff-flash-test
mkdir -p "$F/images"
chmod 755 "$F" "$F/images"
echo "an image" >"$F/images/a.bin"
hook=$F/flash-hook
# Markers in $F: "hang" hangs with a setsid() child, "slow" sleeps 8 s.
cat >"$hook" <<'HOOK'
#!/bin/sh
F=/run/svff-flash-test
echo "hook: $1 $2 deadline $3"
echo $$ >"$F/hook.pid"
cut -d: -f3- /proc/self/cgroup >"$F/hook.cgroup"
sed -n 's/^NoNewPrivs:[[:space:]]*//p' /proc/self/status >"$F/hook.nnp"
echo "hook: NoNewPrivs $(cat "$F/hook.nnp"), SVFF_PF=$SVFF_PF, scratch '$RUNTIME_DIRECTORY'"
touch "$RUNTIME_DIRECTORY/scratch" && echo "hook: scratch writable"
if [ -e "/sys/bus/pci/devices/$1" ]; then echo "hook: PF $1 still on the bus"; exit 3; fi
if [ -e "$F/hang" ]; then
        setsid sh -c "echo \$\$ >$F/child.pid; exec sleep 1000" &
        echo "hook: hanging, with a setsid() child"
        sleep 1000
fi
[ ! -e "$F/slow" ] || { touch "$F/slow.started"; sleep 8; }
sleep 1
echo "hook: flashed"
HOOK
chmod 755 "$hook"
timeout=15
echo "$config" | jq --arg c "$nicpf" --arg h "$hook" --arg d "$F/images" --argjson t "$timeout" \
        '.policies.nic.numvfs = 3 | .flash_hook = $h | .flash_image_dir = $d | .flash_timeout_sec = $t' \
        >/etc/svff/svff.conf
systemctl restart svffd.service || vm_fail "systemctl restart svffd failed: $(systemctl status svffd.service)"
vm_wait 60 ready || vm_fail "svffd.service not active after its restart"

# The PF's VFs as the policy wants them: 4, on vfio-pci, each secondary
# online.
nvme_kept() {
        assert_eq "$1: NVMe PF driver" nvme "$(basename "$(readlink "$N/driver")")"
        assert_eq "$1: NVMe PF sriov_numvfs" 4 "$(cat "$N/sriov_numvfs")"
        for i in 0 1 2 3; do
                assert_eq "$1: NVMe VF $i driver" vfio-pci "$(basename "$(readlink "$N/virtfn$i/driver")")"
                assert_eq "$1: NVMe VF $i secondary online" 1 "$(vm_secondary "$i" secondary-controller-state)"
        done
}
# The unit svffd ran the hook in, from svffd's journal (its last one).
flash_unit() {
        journalctl -b --no-pager -u svffd.service -o cat |
                sed -n "s/^Flash hook '.*' for PF $nvmepf with '.*' runs in unit '\(svff-flash-[^']*\)'.*/\1/p" |
                tail -n 1
}
# mono UNIT PATTERN: the monotonic time (s) of UNIT's first journal line
# matching PATTERN.
mono() {
        journalctl -b --no-pager -u "$1" -o json |
                jq -r --arg p "$2" 'select((.MESSAGE | type) == "string" and (.MESSAGE | test($p))) |
                        .__MONOTONIC_TIMESTAMP' | head -n 1 | awk '{ printf "%.3f", $1 / 1e6 }'
}
ctrl_back() { ls "$N/nvme" 2>/dev/null | grep -q '^nvme'; }

vm_log "reprogram $nvmepf through a flash unit"
t=$(vm_now)
svffctl reprogram "$nvmepf" "$F/images/a.bin" >"$R/reprogram.out" 2>&1 ||
        { cat "$R/reprogram.out"; vm_fail "svffctl reprogram $nvmepf failed"; }
vm_log "reprogram took $(echo "$t $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }') s"
unit=$(flash_unit)
assert_true "svffd's journal names the flash unit" test -n "$unit"
journalctl -b --no-pager -u "$unit" -o cat >"$R/flash-unit.txt"
vm_log "journalctl -u $unit: $(tr '\n' '|' <"$R/flash-unit.txt")"
assert_true "journalctl -u $unit has the hook's output" grep -q "^hook: flashed$" "$R/flash-unit.txt"
assert_true "the hook's output is not svffd's" \
        sh -c "! journalctl -b --no-pager -u svffd.service -o cat | grep -q 'hook: flashed'"
assert_eq "the hook ran in its unit's cgroup" "/system.slice/$unit" "$(cat "$F/hook.cgroup")"
assert_eq "the hook has none of svffd's sandbox (NoNewPrivs)" 0 "$(cat "$F/hook.nnp")"
assert_true "the hook's scratch directory was writable" grep -q "^hook: scratch writable$" "$R/flash-unit.txt"
assert_true "the hook had the PF in its environment" grep -q "SVFF_PF=$nvmepf," "$R/flash-unit.txt"
asked=$(journalctl -b --no-pager -u svffd.service -o json |
        jq -r --arg u "$unit" 'select((.MESSAGE | type) == "string" and (.MESSAGE | contains("runs in unit '\''" + $u))) |
                .__MONOTONIC_TIMESTAMP' | head -n 1 | awk '{ printf "%.3f", $1 / 1e6 }')
began=$(mono "$unit" "^hook: $nvmepf ")
vm_log "flash unit start latency: $(echo "$asked $began" | awk '{ printf "%.3f", $2 - $1 }') s (svffd's StartTransientUnit to the hook's first line)"
echo "flash unit start latency: $(echo "$asked $began" | awk '{ printf "%.3f", $2 - $1 }') s" >"$R/flash-figures"
assert_eq "the flash unit is gone once its result was taken up" inactive \
        "$(systemctl show -P ActiveState "$unit")"
vm_wait 30 ctrl_back || vm_fail "the NVMe PF's controller did not come back"
ctrl=$(ls "$N/nvme" | grep '^nvme' | head -n1)
dev=/dev/$ctrl
nvme_kept "after reprogram"

# ---- a hook owned by another user: refused by name, nothing touched ----
chown 65534 "$hook"
rc=0
svffctl reprogram "$nvmepf" "$F/images/a.bin" --dry-run >"$R/reprogram-nobody-dry.out" 2>&1 || rc=$?
assert_true "the dry run with a hook owned by uid 65534 fails (exit $rc)" test "$rc" != 0
rc=0
svffctl reprogram "$nvmepf" "$F/images/a.bin" >"$R/reprogram-nobody.out" 2>&1 || rc=$?
chown 0 "$hook"
cat "$R/reprogram-nobody.out"
assert_true "reprogram with a hook owned by uid 65534 fails (exit $rc)" test "$rc" != 0
assert_true "the refusal names the hook and its owner" \
        sh -c "grep -q \"'$hook' is owned by uid 65534, not root\" '$R/reprogram-nobody.out'"
assert_eq "no flash unit ran for the refused reprogram" "$unit" "$(flash_unit)"
nvme_kept "after the refused reprogram"

# ---- a hook that hangs: systemd kills it, setsid() child included ----
rm -f "$F/child.pid"
touch "$F/hang"
vm_log "reprogram $nvmepf with a hook that hangs (flash_timeout_sec $timeout)"
rc=0
svffctl reprogram "$nvmepf" "$F/images/a.bin" >"$R/reprogram-hang.out" 2>&1 || rc=$?
rm -f "$F/hang"
cat "$R/reprogram-hang.out"
assert_true "reprogram with a hanging hook fails (exit $rc)" test "$rc" != 0
assert_true "the failure says the reprogram is interrupted" grep -qi "interrupted" "$R/reprogram-hang.out"
hunit=$(flash_unit)
assert_true "the hanging hook ran in another unit" test -n "$hunit" -a "$hunit" != "$unit"
assert_true "the hook's setsid() child had started" test -s "$F/child.pid"
child=$(cat "$F/child.pid")
hpid=$(cat "$F/hook.pid")
assert_true "the hook (pid $hpid) is gone" sh -c "! kill -0 $hpid 2>/dev/null"
assert_true "its setsid() child (pid $child) is gone" sh -c "! kill -0 $child 2>/dev/null"
# sysmono UNIT PATTERN: the monotonic time (s) of systemd's first
# message about UNIT matching PATTERN.
sysmono() {
        journalctl -b --no-pager -o json _PID=1 UNIT="$1" |
                jq -r --arg p "$2" 'select((.MESSAGE | type) == "string" and (.MESSAGE | test($p))) |
                        .__MONOTONIC_TIMESTAMP' | head -n 1 | awk '{ printf "%.3f", $1 / 1e6 }'
}
starting=$(sysmono "$hunit" "^Starting ")
timedout=$(sysmono "$hunit" "start operation timed out")
failed=$(sysmono "$hunit" "Failed with result .timeout.")
assert_true "systemd timed $hunit out and failed it with result 'timeout'" test -n "$starting" -a -n "$timedout" -a -n "$failed"
deadline_at=$(echo "$starting $timedout" | awk '{ printf "%.3f", $2 - $1 }')
kill_after=$(echo "$timedout $failed" | awk '{ printf "%.3f", $2 - $1 }')
vm_log "systemd's deadline fired $deadline_at s after the unit's start (flash_timeout_sec $timeout); every process of the unit was dead $kill_after s later ('start operation timed out' to 'Failed with result timeout')"
echo "time to kill at the deadline: deadline fired $deadline_at s after the start (of $timeout s), all dead $kill_after s later" >>"$R/flash-figures"
assert_true "the deadline fired at flash_timeout_sec ($deadline_at s)" \
        awk -v d="$deadline_at" -v t="$timeout" 'BEGIN { exit !(d > t - 1 && d < t + 3) }'
assert_true "the unit was dead within 3 s of its deadline ($kill_after s)" \
        awk -v k="$kill_after" 'BEGIN { exit !(k < 3) }'
rc=0
svffctl status --json >"$R/status-hang.json" || rc=$?
assert_eq "status's exit status with the interrupted reprogram (5: drift)" 5 "$rc"
assert_eq "status: the PF's reprogram is interrupted" 1 \
        "$(jq --arg pf "$nvmepf" '[.drift[] | select(.device == $pf and .kind == "interrupted")] | length' \
        "$R/status-hang.json")"
vm_log "reprogram $nvmepf again"
svffctl reprogram "$nvmepf" "$F/images/a.bin" >"$R/reprogram-again.out" 2>&1 ||
        { cat "$R/reprogram-again.out"; vm_fail "reprogram after the hanging hook failed"; }
vm_wait 30 ctrl_back || vm_fail "the NVMe PF's controller did not come back"
ctrl=$(ls "$N/nvme" | grep '^nvme' | head -n1)
dev=/dev/$ctrl
nvme_kept "after reprogram again"

# ---- svffd stopped during a flash: the flash goes on, the next start
# takes up its result ----
rm -f "$F/slow.started"
touch "$F/slow"
vm_log "reprogram $nvmepf with a slow hook, and stop svffd during the flash"
svffctl reprogram "$nvmepf" "$F/images/a.bin" >"$R/reprogram-stop.out" 2>&1 &
vm_wait 60 test -e "$F/slow.started" || vm_fail "the slow hook did not start"
sunit=$(flash_unit)
t=$(vm_now)
systemctl stop svffd.service
vm_log "systemctl stop svffd took $(echo "$t $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }') s during the flash"
wait || true
rm -f "$F/slow"
assert_eq "svffd.service stopped" inactive "$(systemctl is-active svffd.service || true)"
assert_eq "the flash unit runs on without svffd" activating "$(systemctl show -P ActiveState "$sunit")"
assert_true "svffd journaled that the flash goes on" sh -c "journalctl -b --no-pager -u svffd.service -o cat |
        grep -q \"runs in unit '$sunit': the flash goes on\""
unit_done() { [ "$(systemctl show -P ActiveState "$sunit")" != activating ]; }
vm_wait 60 unit_done || vm_fail "flash unit $sunit did not finish"
assert_eq "the flash unit succeeded without svffd" "active success" \
        "$(systemctl show -P ActiveState "$sunit") $(systemctl show -P Result "$sunit")"
systemctl start svffd.service || vm_fail "systemctl start svffd failed: $(systemctl status svffd.service)"
# (exit 5: not busy any more, and drift, which the check below waits out)
rc=0
svffctl status --wait --timeout 120 >/dev/null || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 5 ] || vm_fail "svffd stayed busy after its start (status --wait exit $rc)"
assert_true "the start took up the flash unit's result" sh -c "journalctl -b --no-pager -u svffd.service -o cat |
        grep -q \"Taking up the result of flash unit '$sunit'\""
vm_wait 30 ctrl_back || vm_fail "the NVMe PF's controller did not come back"
ctrl=$(ls "$N/nvme" | grep '^nvme' | head -n1)
dev=/dev/$ctrl
nvme_kept "after the start that took up the flash"
# The file was the same as the PF left the bus (journaled with the
# flash) and as the result was taken up: the PF is recorded as holding it.
assert_eq "the image recorded after the flash was taken up" "$F/images/a.bin" \
        "$(svffctl list --json | jq -r --arg pf "$nvmepf" '.pfs[] | select(.address == $pf) | .image.path')"
# The snapshot of the recovered PF may lag the recovery by its
# list_max_age_msec: the drift must be gone within seconds.
# (status exits 0 only with no drift, 5 with some)
no_drift() { svffctl status --json >"$R/status-after-stop.json"; }
vm_wait 30 no_drift ||
        vm_fail "drift 30 s after the flash was taken up: $(jq -c '.drift' "$R/status-after-stop.json")"
assert_eq "status: no drift after the flash was taken up" 0 "$(jq '.drift | length' "$R/status-after-stop.json")"
assert_eq "the taken-up flash unit is gone" inactive "$(systemctl show -P ActiveState "$sunit")"

# ---- systemctl stop during a reconf of 4 assigned VFs, then start ----
# Four OS-less domains under libvirtd.service, each given one of the NVMe
# PF's VFs. A 'reconf PF 4 --cycle' is stopped by systemd once the first
# domain has lost its VF (read from libvirt, not svff): svffd reaches its
# next safe point and exits 0 within TimeoutStopSec, its journal kept in
# the store; the next start resumes it, and every domain has its VF again
# at the guest address it had, on vfio-pci, with its secondary online.
doms="d1 d2 d3 d4"
for d in $doms; do vm_domain_define "$d"; done
vm_cleanup 'for d in $doms; do virsh -q destroy "$d" >/dev/null 2>&1; done'
vm_domains_start $doms
vfs=""
i=0
for d in $doms; do
        v=$(basename "$(readlink "$N/virtfn$i")")
        svffctl attach "$v" "$d" >"$R/attach-$d.out" 2>&1 ||
                vm_fail "svffctl attach $v $d failed: $(cat "$R/attach-$d.out")"
        vfs="$vfs $v"
        i=$((i + 1))
done
before=$(vm_places)
echo "$before"
! echo "$before" | grep -q ' $' || vm_fail "a VF is missing from its domain's query-pci"
stopsec=$(systemctl show -P TimeoutStopUSec svffd.service)
vm_log "reconf $nvmepf 4 --cycle over 4 assigned VFs, stopped mid-way (TimeoutStopSec=$stopsec)"
svffctl reconf "$nvmepf" 4 --cycle >"$R/reconf-stop.out" 2>&1 &
d1_lost() { [ -z "$(vm_xml_addr d1)" ]; }
vm_wait 120 d1_lost || vm_fail "d1 still has its VF 120 s into the reconf: $(cat "$R/reconf-stop.out")"
t=$(vm_now)
systemctl stop svffd.service
took=$(echo "$t $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }')
vm_log "systemctl stop svffd took $took s during the reconf"
wait || true
cat "$R/reconf-stop.out"
assert_eq "svffd.service stopped during the reconf" inactive "$(systemctl is-active svffd.service || true)"
assert_eq "svffd's exit at the stop (a safe point, not a kill)" "success 0" \
        "$(systemctl show -P Result svffd.service) $(systemctl show -P ExecMainStatus svffd.service)"
assert_true "the stop ($took s) within TimeoutStopSec=$stopsec" \
        awk -v a="$took" -v s="$stopsec" 'BEGIN { sub(/s$/, "", s); if (s ~ /min/) { split(s, m, "min"); s = m[1] * 60 + m[2] }
                                                  exit !(a < s) }'
assert_eq "the reconf's journal kept over the stop" "$nvmepf" \
        "$(jq -r '.journal.pfs // {} | keys | join(" ")' /var/lib/svff/store.json)"
systemctl start svffd.service || vm_fail "systemctl start svffd failed: $(systemctl status svffd.service)"
rc=0
svffctl status --wait --timeout 240 >/dev/null || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 5 ] || vm_fail "svffd stayed busy after its start (status --wait exit $rc)"
assert_eq "no reconf left in the journal after the start" "" \
        "$(svffctl status --json | jq -r '.operations[] | select(.pf == "'"$nvmepf"'") | .op')"
vm_check_kept "after a stop mid-reconf and a start"
for i in 0 1 2 3; do
        assert_eq "after the start: NVMe VF $i secondary online" 1 "$(vm_secondary "$i" secondary-controller-state)"
done
for d in $doms; do
        assert_eq "after the start: $d's live XML holds one hostdev" 1 \
                "$(virsh -q dumpxml "$d" | grep -c '<hostdev ')"
done

# ---- the watchdog during a reconf: the restart resumes its journal ----
# The same reconf, and svffd hung (SIGSTOP) once d1 lost its VF: systemd's
# watchdog kills it, Restart= starts it again, and the new svffd finishes
# the reconf from its journal.
wd=$(sed -n 's/^WatchdogSec=\([0-9]*\)s$/\1/p' /lib/systemd/system/svffd.service)
[ -n "$wd" ] || vm_fail "no WatchdogSec=Ns in the installed svffd.service"
restarts=$(systemctl show -P NRestarts svffd.service)
# wdfired: the monotonic times (s) of systemd's "Watchdog timeout" lines.
wdfired() {
        journalctl -b --no-pager -u svffd.service -o json |
                jq -r 'select((.MESSAGE | type) == "string" and (.MESSAGE | test("Watchdog timeout"))) |
                        .__MONOTONIC_TIMESTAMP' | awk '{ printf "%.3f\n", $1 / 1e6 }'
}
wdbefore=$(wdfired | wc -l)
pid=$(systemctl show -P MainPID svffd.service)
vm_log "reconf $nvmepf 4 --cycle over 4 assigned VFs, svffd (pid $pid) hung mid-way"
svffctl reconf "$nvmepf" 4 --cycle >"$R/reconf-watchdog.out" 2>&1 &
vm_wait 120 d1_lost || vm_fail "d1 still has its VF 120 s into the reconf: $(cat "$R/reconf-watchdog.out")"
t=$(vm_now)
kill -STOP "$pid"
restarted_again() {
        [ "$(systemctl show -P NRestarts svffd.service)" -gt "$restarts" ] &&
        [ "$(systemctl show -P ActiveState svffd.service)" = active ]
}
vm_wait 120 restarted_again || vm_fail "svffd not restarted 120 s after SIGSTOP mid-reconf: $(systemctl status svffd.service)"
vm_log "svffd restarted $(echo "$t $(vm_now)" | awk '{ printf "%.1f", $2 - $1 }') s after SIGSTOP mid-reconf"
wait || true
newpid=$(systemctl show -P MainPID svffd.service)
assert_true "the restart's new svffd" test "$newpid" != "$pid"
assert_eq "the watchdog killed the hung svffd (its lines in the journal)" $((wdbefore + 1)) "$(wdfired | wc -l)"
# When systemd saw the watchdog expire, from the SIGSTOP (both on the
# monotonic clock).
after=$(wdfired | tail -n 1 | awk -v t="$t" '{ printf "%.1f", $1 - t }')
vm_log "the watchdog fired $after s after SIGSTOP"
assert_true "the watchdog fired within WatchdogSec=${wd}s ($after s)" \
        awk -v a="$after" -v w="$wd" 'BEGIN { exit !(a > 0 && a <= w) }'
rc=0
svffctl status --wait --timeout 240 >/dev/null || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 5 ] || vm_fail "svffd stayed busy after the watchdog restart (status --wait exit $rc)"
assert_true "the new svffd resumed the reconf's journal" sh -c "journalctl -b --no-pager _PID=$newpid -o cat |
        grep -q 'Recovering the interrupted reconf of PF $nvmepf'"
assert_eq "no reconf left in the journal after the watchdog restart" "" \
        "$(svffctl status --json | jq -r '.operations[] | select(.pf == "'"$nvmepf"'") | .op')"
vm_check_kept "after a watchdog restart mid-reconf"
for i in 0 1 2 3; do
        assert_eq "after the watchdog restart: NVMe VF $i secondary online" 1 \
                "$(vm_secondary "$i" secondary-controller-state)"
done

# ---- before a second boot: domains that autostart with svff's VFs ----
# d1 and d2 keep their NVMe VFs in their definitions (svffctl attach put
# them there) and are marked autostart; d3 and d4 are not. n1 is given
# NIC VF 0 with a MAC and a VLAN of its own assignment, not the policy's,
# and autostarts too. The VM is then booted again (vm_reboot), and
# 11-as-shipped.boot2 checks that svffd, started by systemd at boot, made
# every VF with its assignment's class state and was READY before
# libvirtd started these domains, each with its VF where it was.
vm_domain_define n1
vm_cleanup 'virsh -q destroy n1 >/dev/null 2>&1'
vm_domains_start n1
nicvf0=$(basename "$(readlink "$C/virtfn0")")
svffctl attach "$nicvf0" n1 --mac 52:54:00:5a:00:01 --vlan 300 >"$R/attach-n1.out" 2>&1 ||
        vm_fail "svffctl attach $nicvf0 n1 failed: $(cat "$R/attach-n1.out")"
assert_eq "n1's VF $nicvf0: MAC and VLAN of the assignment (ip link show)" "52:54:00:5a:00:01 300" \
        "$(vm_vfline 0 | sed -n 's/^link\/ether \([0-9a-f:]*\).*, vlan \([0-9]*\).*/\1 \2/p')"
for d in d1 d2 n1; do
        virsh -q autostart "$d" >/dev/null || vm_fail "virsh autostart $d failed"
done
set -- $vfs
{
        echo "d1 $1 $(vm_qpci_wait d1 "$1")"
        echo "d2 $2 $(vm_qpci_wait d2 "$2")"
        echo "n1 $nicvf0 $(vm_qpci_wait n1 "$nicvf0")"
} >"$R/autostart.txt"
cat "$R/autostart.txt"
! grep -q ' $' "$R/autostart.txt" || vm_fail "an autostart domain's VF is missing from its query-pci"
# def_source DOM: the host address of the one VF in DOM's definition
# (what libvirt starts it with at the next boot).
def_source() {
        virsh -q dumpxml --inactive "$1" --xpath '//hostdev/source/address' 2>/dev/null |
                sed -n "s/.*domain=.0x\([0-9a-f]*\). bus=.0x\([0-9a-f]*\). slot=.0x\([0-9a-f]*\). function=.0x\([0-9a-f]*\).*/\1 \2 \3 \4/p" |
                { read -r dm b s f && printf '%04x:%02x:%02x.%x\n' "0x$dm" "0x$b" "0x$s" "0x$f"; }
}
while read -r d vf addr; do
        assert_eq "$d's definition holds its VF" 1 "$(virsh -q dumpxml --inactive "$d" | grep -c '<hostdev ')"
        assert_eq "$d's definition holds VF $vf, the one it runs with" "$vf" "$(def_source "$d")"
done <"$R/autostart.txt"
# node_exporter's textfile directory, as its package makes it: the next
# boot's svffd.service may write there only if it exists as svffd starts.
mkdir -p /var/lib/prometheus/node-exporter
vm_reboot
