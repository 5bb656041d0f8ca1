# The NVMe part of tests/vm/scenarios/12-guests.sh, sourced there once the
# guest g1 runs: a real Linux guest keeps its NVMe namespace through a
# reconf. The emulated NVMe PF ($nvme_pf) with 4 VFs, one namespace each
# (an svff policy); VF 1 attached to g1 live, its namespace seen by the
# guest as the multipath head nvme0n1; the guest's own workload,
# tests/vm/guest-probe, doing direct I/O on the head and verifying every
# block past the ext4 filesystem the namespace also holds (made before
# svffd gives the namespace to VF 1), which the guest mounts and writes a
# file to. Then, each with a fresh probe:
#   (a) delayed_removal_secs 60 on the head: 'svffctl reconf PF 3' and
#       back to 4 give 0 I/O errors, the head kept, every block verified,
#       the filesystem still mounted and writable, the file's checksum
#       the same; the guest's longest stall is printed beside the host's
#       figures;
#   (c) the same, with svffd SIGKILLed mid-reconf (a fault point, after
#       numvfs 0) and restarted: its journal brings VF 1 back, and the
#       guest again sees 0 I/O errors, the head kept, every block verified;
#   (b) delayed_removal_secs 0, the guest's default: the same reconfs give
#       I/O errors and the head lost. This is what makes (a) the guest
#       setup's doing, and not the reconf's.
# The guest runs QEMU's guest agent (Debian's qemu-ga, on its virtio-serial
# channel): each dry run reads the head's delayed_removal_secs through it,
# and says "guest ready" in (a) and "guest NOT ready" in (b).
# The guest's kernel command line and the write to delayed_removal_secs
# are the recipe in README.md and svffctl(8).

pf=$nvme_pf
P=/sys/bus/pci/devices/$pf
probe_args="-o 3072 -b 256 -s 1000"
vf1=$(basename "$(readlink "$P/virtfn1")")

# ---- VF 1 attached live: the guest sees its namespace as a multipath head ----
vm_log "svffctl attach $vf1 g1"
svffctl attach "$vf1" g1 >"$R/attach.out" 2>&1 || { cat "$R/attach.out"; vm_fail "svffctl attach $vf1 g1 failed"; }
gtimeout=300 guest 'i=0; while [ ! -b /dev/nvme0n1 ] && [ $i -lt 2400 ]; do sleep 0.1; i=$((i + 1)); done; test -b /dev/nvme0n1'
guest 'echo $(ls /sys/block)'
vm_log "the guest's block devices: $gout"
guest 'cat /sys/module/nvme_core/parameters/multipath'
assert_eq "guest: nvme_core.multipath" Y "$gout"
guest 'cat /sys/module/nvme_core/parameters/multipath_always_on'
assert_eq "guest: nvme_core.multipath_always_on, from its command line" Y "$gout"
guest 'ls -d /sys/block/nvme0c*n1 | wc -l'
assert_eq "guest: nvme0n1 is a multipath head with one path" 1 "$gout"
guest 'test -e /sys/block/nvme0n1/delayed_removal_secs'
guest 'cat /sys/block/nvme0n1/delayed_removal_secs'
assert_eq "guest: delayed_removal_secs by default" 0 "$gout"
# What svff recorded of the VF's identity is what the guest's head goes
# by: the subsystem NQN and the NSID (QEMU's NGUID and EUI64 are all
# zero, which the guest's kernel ignores as bogus).
identity() {
        svffctl list --json | jq -r --arg a "$vf1" \
                '.pfs[].vfs[] | select(.address == $a) | .class.state | "\(.subnqn) \(.namespaces[0]) \(.scid) \(.ids | tojson)"'
}
guest_identity='echo $(cat /sys/class/nvme-subsystem/nvme-subsys*/subsysnqn) $(cat /sys/block/nvme0n1/nsid)'
id_before=$(identity)
vm_log "svff's record of VF $vf1's identity: $id_before"
case $id_before in
nqn.*) ;;
*) vm_fail "svff recorded no subsystem NQN for VF $vf1: '$id_before'" ;;
esac
guest "$guest_identity"
assert_eq "guest: the head's subsystem NQN and NSID are those svff recorded" \
        "$(echo "$id_before" | cut -d' ' -f1,2)" "$gout"
guest 'pidof qemu-ga'
vm_log "guest: qemu-ga runs (pid $gout)"
agent_up() { virsh -q dumpxml g1 | grep -q "name='org.qemu.guest_agent.0' state='connected'"; }
vm_wait 60 agent_up || vm_fail "g1's guest agent channel is not connected: $(virsh -q dumpxml g1 | grep -A3 '<channel')"

# predict CASE N: the dry run of 'reconf PF N'; its plan's prediction
# of g1's device-off time, the hotplug it read, and what it is made from
# (the model's figures, or svffd's own from its last reconf of the PF)
# go to $R/predicted-CASE.
predict() {
        svffctl reconf "$pf" "$2" --dry-run --json >"$R/plan-$1-$2.json" ||
                { cat "$R/plan-$1-$2.json"; vm_fail "$1: svffctl reconf $pf $2 --dry-run failed"; }
        jq -r '.guests[] | select(.domain == "g1") | "\(.predicted_msec / 1000) \(.hotplug) \(.predicted_from)"' \
                "$R/plan-$1-$2.json" >>"$R/predicted-$1" ||
                { cat "$R/plan-$1-$2.json"; vm_fail "$1: the dry run's plan has no guests"; }
        # what g1's guest agent said of its heads
        jq -r '.guests[] | select(.domain == "g1") |
                "\(.agent) \(.agent_head) \(.agent_delayed_removal_sec) \(.guest_ready) \(.agent_error)"' \
                "$R/plan-$1-$2.json" >>"$R/agent-$1"
        # the namespace g1's head was matched by, where the agent answered
        jq -r '.guests[] | select(.domain == "g1" and .agent == "read") | "\(.agent_subnqn) \(.agent_nsid)"' \
                "$R/plan-$1-$2.json" >>"$R/agentns-$1"
}
# reconf_to CASE N: 'svffctl reconf PF N', timed, after its prediction.
reconf_to() {
        predict "$1" "$2"
        t=$(vm_now)
        svffctl reconf "$pf" "$2" >"$R/reconf-$1-$2.out" 2>&1 ||
                { cat "$R/reconf-$1-$2.out"; vm_fail "$1: svffctl reconf $pf $2 failed"; }
        vm_log "FIGURE $1: host: svffctl reconf $pf $2 took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
        svffd_off "$1" "$R/reconf-$1-$2.out"
}
# svffd_off CASE OUT: g1's device-off time as the reconf's result gives
# it (svffd's own measure, from the unplug's request to the re-attach's
# return: what the plan predicts), "-" when it gives none, to
# $R/svffd-off-CASE.
svffd_off() {
        o=$(sed -n "s/.* domain 'g1' at .*(device off for \([0-9.]*\) s).*/\1/p" "$2")
        echo "${o:--}" >>"$R/svffd-off-$1"
}
# reconfs CASE: reconf PF 3 and back to 4.
reconfs() { reconf_to "$1" 3; reconf_to "$1" 4; }

# reconf_cycle CASE [HOST]: the probe on the head, HOST (reconfs: PF 3
# and back to 4) on the host, the probe stopped once I/O went on (or the
# device came back); leaves the probe's end line in end and logs the
# figures.
reconf_cycle() {
        # At the lowest priority: g1 has one vCPU, which the probe's I/O
        # loop would take from the guest agent the dry runs ask.
        guest "guest-probe $probe_args /dev/nvme0n1 & p=\$!; renice -n 19 -p \$p >/dev/null"
        guest 'sleep 2; kill -USR1 $p; sleep 1'
        s=$(probe_line status)
        # Its first I/O may take longer on a busy host (nested TCG, the
        # probe at the lowest priority): up to 10 s more.
        for _ in $(seq 5); do
                [ "$(field ios "$s")" -gt 0 ] 2>/dev/null && break
                guest 'sleep 1; kill -USR1 $p; sleep 1'
                s=$(probe_line status)
        done
        [ "$(field ios "$s")" -gt 0 ] 2>/dev/null || vm_fail "$1: the probe did no I/O before the reconf: '$s'"
        host_events "$R/events-$1.log"
        "${2:-reconfs}" "$1"
        # I/O goes on once the guest has probed the new controller: the
        # probe's count moves again.
        guest 'kill -USR1 $p; sleep 1'
        before=$(field ios "$(probe_line status)")
        moved=0
        for _ in $(seq 60); do
                guest 'sleep 1; kill -USR1 $p; sleep 1'
                [ "$(field ios "$(probe_line status)")" -le "$before" ] || { moved=1; break; }
        done
        [ "$moved" = 1 ] || vm_log "$1: the probe's I/O did not resume within 120 s"
        host_events_stop
        probe_finish "$1"
        vm_log "FIGURE $1: guest: longest stall $(field max_stall "$end") s," \
               "I/O errors $(field errors "$end"), head vanished $(field vanished "$end") time(s);" \
               "host: device off (libvirt device-removed to device-added) ${off:-?}s"
        if [ -s "$R/predicted-$1" ]; then
                # The plan's figure beside the measured one, reconf by reconf.
                [ "$(wc -l <"$R/predicted-$1")" = 2 ] ||
                        vm_fail "$1: the dry runs named g1 $(wc -l <"$R/predicted-$1") time(s), not once each"
                [ "$(wc -l <"$R/svffd-off-$1")" = 2 ] ||
                        vm_fail "$1: the reconfs' results gave g1 $(wc -l <"$R/svffd-off-$1") device-off time(s)"
                # svffd's measure is the one the plan predicts; libvirt's
                # starts once the guest let go.
                vm_log "FIGURE $1: plan: device off predicted $(echo "$off" |
                        awk -v f="$R/predicted-$1" -v g="$R/svffd-off-$1" '{
                                for (i = 1; i <= 2; i++) {
                                        getline line < f; split(line, p, " ")
                                        s = "-"; getline s < g
                                        printf("%s%.2f s (%s hotplug, %s) against svffd'"'"'s %s s",
                                               (i > 1 ? "; " : ""), p[1], p[2], p[3], s)
                                        if (s != "-" && p[1] > 0)
                                                printf(" (%.2f x)", s / p[1])
                                        if ($i != "")
                                                printf(" and libvirt'"'"'s %s s (%.2f x)", $i,
                                                       (p[1] > 0 ? $i / p[1] : 0))
                                } }')"
        fi
        grep "^probe t=[0-9.]* \(stall\|gone\|back\|error\)" "$GLOG" |
                awk -v t0="$(field t "$(grep "^probe t=[0-9.]* start" "$GLOG" | tail -n1)")" \
                        '{ sub(/^probe t=/, ""); if ($1 + 0 >= t0 + 0) print "  guest: " $0 }' | head -n 40
}

# ---- the filesystem: mounted in the guest, a file written ----
guest 'mount -t ext4 /dev/nvme0n1 /mnt && dd if=/dev/urandom of=/mnt/data bs=64k count=16 2>/dev/null && sync'
guest 'md5sum /mnt/data | cut -d" " -f1'
sum=$gout
vm_log "guest: ext4 on nvme0n1 mounted, /mnt/data md5 $sum"

# ---- (a) delayed removal: the guest does not notice ----
vm_log "(a) delayed_removal_secs 60 on the guest's head"
guest 'echo 60 > /sys/block/nvme0n1/delayed_removal_secs'
guest 'cat /sys/block/nvme0n1/delayed_removal_secs'
assert_eq "guest: delayed_removal_secs set" 60 "$gout"
# printed_plan FILE REGEX: 'svffctl reconf PF 3 --dry-run' into FILE,
# whose plan must have a line matching REGEX; asked up to three times
# while it says the guest agent did not answer in time (its guest-exec
# took over 5 s under nested TCG on a loaded machine): svffd then prints
# the readiness as unknown with the agent's reason, which is right, and
# the next dry run asks again. Each try's time is logged.
printed_plan() {
        for try in 1 2 3; do
                t=$(vm_now)
                svffctl reconf "$pf" 3 --dry-run >"$1" 2>&1 || { cat "$1"; vm_fail "dry run ($1)"; }
                vm_log "FIGURE the dry run with g1's guest agent read: $(echo "$t $(vm_now)" |
                        awk '{ printf "%.2f", $2 - $1 }') s ($(basename "$1"), try $try)"
                grep -E "$2" "$1" && return 0
                grep -q "^    guest readiness unknown: its guest agent did not answer" "$1" || break
                vm_log "g1's guest agent did not answer the dry run in time: $(grep 'guest readiness unknown' "$1")"
        done
        cat "$1"
        return 1
}
# The printed plan says so, as the guest's agent reads it.
printed_plan "$R/plan-delayed.txt" \
        "^    guest ready: delayed removal 60 s \(nvme0n1\) >= window [0-9]+ s, as its guest agent reads it$" ||
        vm_fail "(a) the printed plan does not say the guest is ready"
# agent_reads CASE WANT [N]: each of the case's first N dry runs (all),
# made while the probe hammers the disk, either read WANT through g1's
# agent or says why the agent did not answer ("unanswered" with
# libvirt's reason: an agent too slow to answer within svffd's 5 s, or
# libvirt's sync in time, seen under nested TCG with the probe running;
# the readiness is then unknown, as svffctl prints it). None reads
# anything else. That the agent is read at all, printed_plan proved.
agent_reads() {
        n=$(head -n "${3:-1000}" "$R/agent-$1" |
                awk -v want="$2" '$0 == want { read++; next }
                        $1 == "unanswered" && $2 == "null" && $3 == "null" && $4 == "null" && NF > 5 { next }
                        { bad = 1 } END { print read + 0 " of " NR; exit bad }') || return 1
        vm_log "FIGURE $1: the dry runs that read g1's guest agent: $n"
}
reconf_cycle delayed
assert_true "(a) g1's guest agent at both dry runs read 'read nvme0n1 60 true null' (or did not answer, saying why): $(tr '\n' '|' <"$R/agent-delayed")" \
        agent_reads delayed "read nvme0n1 60 true null"
assert_eq "(a) the dry runs that asked g1's guest agent" 2 "$(wc -l <"$R/agent-delayed")"
if [ -s "$R/agentns-delayed" ]; then
        assert_eq "(a) the namespace the dry runs found g1's head by (the NQN and NSID svff recorded)" \
                "$(echo "$id_before" | cut -d' ' -f1,2)" "$(sort -u "$R/agentns-delayed")"
else
        vm_log "(a) no dry run during the reconfs read g1's agent: no namespace to compare"
fi
assert_eq "(a) guest: I/O errors" 0 "$(field errors "$end")"
assert_eq "(a) guest: read-backs that differed" 0 "$(field mismatches "$end")"
assert_eq "(a) guest: times the head vanished" 0 "$(field vanished "$end")"
assert_eq "(a) guest: blocks that did not verify" 0 "$(field bad "$end")"
assert_true "(a) guest: blocks verified" test "$(field verified "$end")" -gt 0
# The reconf back to 4 was planned from what the reconf to 3 measured:
# g1's unplug and re-attach, and the host part between them.
assert_eq "(a) the second dry run's prediction is made from" recent "$(sed -n 2p "$R/predicted-delayed" | cut -d' ' -f3)"
assert_eq "(a) the first dry run's prediction is made from" model "$(sed -n 1p "$R/predicted-delayed" | cut -d' ' -f3)"
guest 'echo $(ls -d /sys/block/nvme0c*n1)'
vm_log "(a) the head's paths after the reconfs: $gout"
stall_a=$(field max_stall "$end")
assert_eq "(a) VF $vf1 attached to g1 again" "attached g1" "$(vm_state "$vf1")"
assert_eq "(a) svff's record of VF $vf1's identity after the reconfs (NQN, NSID, SCID, NGUID/EUI64)" \
        "$id_before" "$(identity)"
guest "$guest_identity"
assert_eq "(a) guest: the head's subsystem NQN and NSID after the reconfs" \
        "$(echo "$id_before" | cut -d' ' -f1,2)" "$gout"
guest 'grep -c "^/dev/nvme0n1 /mnt ext4 rw" /proc/mounts'
assert_eq "(a) guest: ext4 still mounted read-write" 1 "$gout"
guest 'sync; echo 3 > /proc/sys/vm/drop_caches; md5sum /mnt/data | cut -d" " -f1'
assert_eq "(a) guest: /mnt/data's checksum, read from the device again" "$sum" "$gout"
guest_run 'dd if=/dev/urandom of=/mnt/after bs=64k count=4 conv=fsync 2>&1'
assert_eq "(a) guest: a file written after the reconfs (dd: $gout)" 0 "$grc"
guest 'umount /mnt'

# ---- (c) svffd killed mid-reconf: the guest does not notice either ----
# Delayed removal still 60 s. svffd SIGKILLs itself once numvfs 0 is
# written (fault point after-numvfs-0), with VF 1 out of g1 and every VF
# gone; the next svffd finishes the reconf from its journal, VF 1 back in
# g1, and a reconf takes the PF back to 4.
crash_reconfs() {
        vm_svffd_start_faulted after-numvfs-0 "$config"
        predict "$1" 3
        t=$(vm_now)
        crc=0
        svffctl reconf "$pf" 3 >"$R/reconf-$1-3.out" 2>&1 || crc=$?
        svffd_off "$1" "$R/reconf-$1-3.out"
        assert_true "(c) svffctl reconf $pf 3 fails as svffd dies (exit $crc)" test "$crc" -ne 0
        vm_svffd_killed after-numvfs-0
        vm_svffd_start "$config"
        vf1_back() { [ "$(vm_state "$vf1")" = "attached g1" ]; }
        vm_wait 120 vf1_back || vm_fail "(c) VF $vf1 not attached to g1 120 s after the restart: $(vm_state "$vf1")"
        vm_log "FIGURE $1: host: reconf, SIGKILL, restart and recovery: $(echo "$t $(vm_now)" |
                awk '{ printf "%.2f", $2 - $1 }') s, PF at $(cat "$P/sriov_numvfs") VFs"
        reconf_to "$1" 4
}
if vm_have_fault_points; then
        vm_log "(c) svffd killed mid-reconf, delayed_removal_secs 60"
        reconf_cycle crashed crash_reconfs
        vm_log "(c): its first device-off figure holds svffd's kill, restart and recovery, which no plan predicts"
        assert_eq "(c) guest: I/O errors" 0 "$(field errors "$end")"
        assert_eq "(c) guest: read-backs that differed" 0 "$(field mismatches "$end")"
        assert_eq "(c) guest: times the head vanished" 0 "$(field vanished "$end")"
        assert_eq "(c) guest: blocks that did not verify" 0 "$(field bad "$end")"
        assert_true "(c) guest: blocks verified" test "$(field verified "$end")" -gt 0
        assert_eq "(c) VF $vf1 attached to g1 again" "attached g1" "$(vm_state "$vf1")"
        stall_c=$(field max_stall "$end")
else
        # Counted: scripts/check's build has them; a hand build may not.
        vm_log "SKIP (c): svffd is built without fault points (configure --enable-fault-points)"
        stall_c="-"
fi

# ---- (b) the guest's defaults: the same reconfs lose the device ----
vm_log "(b) delayed_removal_secs 0 (the default)"
guest 'echo 0 > /sys/block/nvme0n1/delayed_removal_secs'
printed_plan "$R/plan-default.txt" \
        "^    guest NOT ready: delayed removal 0 s \(nvme0n1\) < window [0-9]+ s, as its guest agent reads it; it loses its disk in the reconf$" ||
        vm_fail "(b) the printed plan does not say the guest is not ready"
reconf_cycle default
# (the second comes after the head was lost; the printed plan above was
# a read)
assert_true "(b) g1's guest agent at the first dry run read 'read nvme0n1 0 false null' (or did not answer, saying why): $(tr '\n' '|' <"$R/agent-default")" \
        agent_reads default "read nvme0n1 0 false null" 1
assert_true "(b) guest: I/O errors without delayed removal ($(field errors "$end"))" \
        test "$(field errors "$end")" -gt 0
assert_true "(b) guest: the head vanished without delayed removal ($(field vanished "$end") times)" \
        test "$(field vanished "$end")" -gt 0
vm_log "FIGURE longest guest stall: (a) delayed removal ${stall_a} s, (c) with svffd killed mid-reconf ${stall_c} s," \
       "(b) defaults $(field max_stall "$end") s"
