#!/bin/sh
# The svff.sriov Ansible collection (contrib/ansible_collections) driven by
# Debian's real ansible-playbook against three "hosts" of one inventory,
# each its own svffd on its own pcisim mount with its own socket and its
# own libvirt (embedded, or under a sanitizer build domains of their own
# on one private libvirtd): facts; check mode, whose plan is printed and
# which changes neither sysfs nor the store; an apply, then the same
# apply with changed=0 and nothing touched; bad input (an unknown PF, a
# count above totalvfs, a domain that does not exist, a reconf without
# keep_assignments), each failing with svffd's own message and nothing
# changed; and the rolling-reconf playbook, once with host 2's numvfs
# write refused (a fault point): host 2 rolls back, host 3 is never
# touched, every domain keeps its VF; then through on all three; and a
# reprogram through a flash hook on host 1: check mode's plan, the
# flash with every assignment kept, the same image again a no-op, the
# image rewritten in place a change, an image outside flash_image_dir
# refused with svffd's message.
. "$(dirname "$0")/libvirt-embed-lib.sh"

command -v ansible-playbook >/dev/null ||
        skip "ansible-playbook is not installed (Debian's ansible-core: apt-get install ansible-core)"
"$SVFFD" --version | grep -q '+FAULT-POINTS' ||
        skip "svffd was built without --enable-fault-points (the rolling playbook's failing host needs one)"

COLLECTIONS="$top_srcdir/contrib"
# By its path: a collection's playbook is found by name only when the
# name is an identifier.
ROLLING="$COLLECTIONS/ansible_collections/svff/sriov/playbooks/rolling-reconf.yml"
PF=0000:01:00.0
HOSTS="1 2 3"

# Ansible's own files (temp, facts cache) under the test's directory.
export HOME="$T/home" ANSIBLE_HOME="$T/home/.ansible" ANSIBLE_LOCAL_TEMP="$T/home/tmp"
export ANSIBLE_REMOTE_TEMP="$T/home/remote-tmp" ANSIBLE_COLLECTIONS_PATH="$COLLECTIONS"
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_HOST_KEY_CHECKING=0
export ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 ANSIBLE_DEPRECATION_WARNINGS=0
mkdir -p "$HOME"

# --- the docs -----------------------------------------------------------

for m in svff_info svff_pf svff_assignment svff_reprogram; do
        ansible-doc "svff.sriov.$m" > "$T/doc-$m" 2>&1 || fail "ansible-doc svff.sriov.$m: $(cat "$T/doc-$m")"
        grep -q "^> SVFF.SRIOV.$(echo "$m" | tr '[:lower:]' '[:upper:]')" "$T/doc-$m" && grep -q "^OPTIONS" "$T/doc-$m" &&
                grep -q "^EXAMPLES:" "$T/doc-$m" && grep -q "^RETURN VALUES:" "$T/doc-$m" && grep -q "^- socket$" "$T/doc-$m" ||
                fail "ansible-doc svff.sriov.$m lacks its options, examples or return values: $(cat "$T/doc-$m")"
done

# --- three hosts ------------------------------------------------------

h() { echo "$T/h$1"; }
sys_vf_of() { basename "$(readlink "$(h "$1")/sys/bus/pci/devices/$PF/virtfn$2")"; }
hctl() { _h=$1; shift; "$SVFFCTL" --socket "$(h "$_h")/svffd.sock" "$@"; }
host_fail() { sed 's/^/  svffd h'"$1"'| /' "$(h "$1")/svffd.log" | tail -n 30 >&2; fail "$2"; }

# host_start N [ENV=VALUE...]: svffd of host N up and connected to its libvirt.
host_start() {
        _n=$1; shift
        _d=$(h "$_n")
        # Counted before svffd starts, which may connect at once.
        _c=$(grep -c "Connected to libvirt" "$_d/svffd.log" 2>/dev/null || true)
        env "$@" "$SVFFD" --socket "$_d/svffd.sock" --state-dir "$_d/state" --sysfs-root "$_d/sys" \
                --config "$_d/svff.conf" --log-level debug >>"$_d/svffd.log" 2>&1 &
        eval "HOST_PID_$_n=$!"
        _want=$((_c + 1))
        wait_for_s 30 sh -c "[ \$(grep -c 'Connected to libvirt' '$_d/svffd.log') -ge $_want ]" ||
                host_fail "$_n" "svffd of host $_n did not come up connected to libvirt"
}
host_stop() {
        eval "_p=\${HOST_PID_$1:-}"
        [ -n "$_p" ] || return 0
        kill "$_p" 2>/dev/null
        _rc=0
        wait "$_p" || _rc=$?
        eval "HOST_PID_$1="
        [ "$_rc" = 0 ] || host_fail "$1" "svffd of host $1 exited with $_rc"
}
hosts_cleanup() {
        set +e
        # A VF held open blocks svffd's numvfs write, and so its stop.
        [ -n "${HELD:-}" ] && printf 'release %s' "$HELD" > "$(h 3)/sys/.pcisim/ctl" 2>/dev/null
        for n in $HOSTS; do
                eval "_p=\${HOST_PID_$n:-}"
                [ -n "$_p" ] && kill "$_p" 2>/dev/null && wait "$_p" 2>/dev/null
                eval "_p=\${VC_PID_$n:-}"
                [ -n "$_p" ] && kill "$_p" 2>/dev/null && wait "$_p" 2>/dev/null
                mountpoint -q "$(h "$n")/sys" 2>/dev/null &&
                        { fusermount3 -u "$(h "$n")/sys" 2>/dev/null || umount -l "$(h "$n")/sys"; }
        done
        # An embedded root's QEMU outlives svffd; none is started here,
        # but stop any all the same.
        for p in $(pgrep -f "$T/h[123]/libvirt/lib/qemu" 2>/dev/null); do kill "$p" 2>/dev/null; done
}
trap 'hosts_cleanup; cleanup_svffd_first' EXIT

for n in $HOSTS; do
        hd=$(h "$n")
        mkdir -p "$hd/sys" "$hd/state"
        rc=0
        "$PCISIM" --scenario "$PCISIM_SCENARIOS/qdma.json" "$hd/sys" >"$hd/pcisim.log" 2>&1 || rc=$?
        [ "$rc" = 77 ] && skip "pcisim cannot mount FUSE here: $(cat "$hd/pcisim.log")"
        [ "$rc" = 0 ] || fail "pcisim of host $n failed ($rc): $(cat "$hd/pcisim.log")"
        if [ "$SVFF_LIBVIRT" = embed ]; then
                uri="qemu:///embed?root=$hd/libvirt"
                mkdir -p "$hd/libvirt/etc"
                printf 'stdio_handler = "file"\nuser = "root"\ngroup = "root"\n' > "$hd/libvirt/etc/qemu.conf"
        else
                uri=$URI
        fi
        # Each host's domains are its own (under a shared libvirtd too).
        # define() loops with d.
        URI=$uri define "h$n-vm1" "h$n-vm2"
        printf '{"libvirt_uri": "%s", "detach_timeout_sec": 5, "reconf_detach_timeout_sec": 5}\n' "$uri" > "$hd/svff.conf"
        host_start "$n"
done
note "three hosts: svffd on pcisim with its own socket and libvirt ($SVFF_LIBVIRT)"

# Where tests/varlink-check was built (it needs Go), each host's tasks
# reach svffd through it: every reply and error svffd sends the modules
# is checked against the interface description svffd serves.
VC="$top_builddir/tests/varlink-check/varlink-check"
for n in $HOSTS; do
        hd=$(h "$n")
        if [ -x "$VC" ]; then
                "$VC" -upstream "$hd/svffd.sock" -listen "$hd/check.sock" -violations "$hd/violations" \
                        2>>"$hd/varlink-check.log" &
                eval "VC_PID_$n=$!"
                wait_for test -S "$hd/check.sock" || fail "varlink-check of host $n did not start: $(cat "$hd/varlink-check.log")"
                echo "$hd/check.sock" > "$hd/socket"
        else
                echo "$hd/svffd.sock" > "$hd/socket"
        fi
done
[ -x "$VC" ] && note "the modules' replies checked against the served interface (varlink-check)"
cat > "$T/inventory" <<EOF
[svff]
host1 svff_socket=$(cat "$T/h1/socket")
host2 svff_socket=$(cat "$T/h2/socket")
host3 svff_socket=$(cat "$T/h3/socket")

[svff:vars]
ansible_connection=local
EOF

# snapshot: what check mode and a repeated apply must leave as it is, on
# every host: the PF's count, each VF's driver, the store file.
snapshot() {
        for n in $HOSTS; do
                d=$(h "$n")/sys/bus/pci/devices/$PF
                printf 'host %s numvfs %s\n' "$n" "$(cat "$d/sriov_numvfs")"
                for v in "$d"/virtfn*; do
                        [ -e "$v" ] || continue
                        printf 'host %s %s %s\n' "$n" "$(basename "$(readlink "$v")")" \
                                "$(basename "$(readlink "$v/driver" 2>/dev/null || echo none)")"
                done
                s=$(h "$n")/state/store.json
                if [ -f "$s" ]; then
                        printf 'host %s store %s\n' "$n" "$(sha256sum < "$s" | cut -d' ' -f1)"
                else
                        printf 'host %s store none\n' "$n"
                fi
        done
}

# play NAME|PATH [ansible-playbook options]: runs $T/NAME.yml (or the
# playbook at PATH) on all three hosts; output in $T/NAME.out (NAME: the
# file's name without .yml), each host's result of the play's one task in
# $T/NAME.json when JSON=1.
play() {
        _pb=$1; shift
        case $_pb in
        */*) _name=$(basename "$_pb" .yml) ;;
        *) _name=$_pb; _pb=$T/$_pb.yml ;;
        esac
        _rc=0
        if [ "${JSON:-0}" = 1 ]; then
                # ansible-core's own tree callback, a file per host with its
                # result (the json one is ansible.posix's, which Debian's
                # ansible-core lacks), gathered as the json callback would
                # put a one-task play: plays[0].tasks[0].hosts, each marked
                # failed as the play's recap counts it.
                rm -rf "$T/$_name.tree"
                ANSIBLE_CALLBACKS_ENABLED=ansible.builtin.tree ANSIBLE_CALLBACK_TREE_DIR="$T/$_name.tree" \
                        ansible-playbook -i "$T/inventory" "$@" "$_pb" >"$T/$_name.out" 2>"$T/$_name.err" || _rc=$?
                python3 - "$T/$_name.tree" "$T/$_name.out" >"$T/$_name.json" <<'PY'
import json, os, re, sys
d, out = sys.argv[1], open(sys.argv[2]).read()
hosts = {h: json.load(open(os.path.join(d, h))) for h in sorted(os.listdir(d))} if os.path.isdir(d) else {}
for h, r in hosts.items():
    m = re.search(r"^%s\s*:.*\bfailed=(\d+)" % re.escape(h), out, re.M)
    if m and int(m.group(1)) > 0:
        r["failed"] = True
json.dump({"plays": [{"tasks": [{"hosts": hosts}]}]}, sys.stdout)
PY
        else
                ansible-playbook -i "$T/inventory" "$@" "$_pb" >"$T/$_name.out" 2>&1 || _rc=$?
        fi
        return $_rc
}
# recap NAME HOST: the PLAY RECAP line of HOST.
recap() { grep "^$2 *:" "$T/$1.out" | tail -n 1; }

# --- facts ------------------------------------------------------------

cat > "$T/facts.yml" <<'EOF'
- hosts: svff
  gather_facts: false
  tasks:
    - svff.sriov.svff_info:
        socket: "{{ svff_socket }}"
      register: svff
    - ansible.builtin.copy:
        content: "{{ svff | to_json }}"
        dest: "{{ facts_dir }}/facts-{{ inventory_hostname }}.json"
EOF
play facts -e "facts_dir=$T" || fail "facts playbook: $(cat "$T/facts.out")"
for n in $HOSTS; do
        f=$T/facts-host$n.json
        expect_eq "$(jget "[p['numvfs'] for p in d['pfs'] if p['address'] == '$PF']" < "$f")" "[0]" "host $n: facts, numvfs"
        expect_eq "$(jget "(len(d['operations']), len(d['drift']), d['status']['sysfs_root'])" < "$f")" \
                "(0, 0, '$(h "$n")/sys')" "host $n: facts, operations, drift and sysfs root"
done

# --- check mode, apply, apply again --------------------------------------

cat > "$T/apply.yml" <<EOF
- hosts: svff
  gather_facts: false
  tasks:
    - name: four VFs on vfio-pci
      svff.sriov.svff_pf:
        pf: "$PF"
        numvfs: 4
        socket: "{{ svff_socket }}"
    - name: a VF of the pool for each domain
      svff.sriov.svff_assignment:
        pf: "$PF"
        domain: "{{ inventory_hostname | replace('host', 'h') }}-{{ item }}"
        socket: "{{ svff_socket }}"
      loop: [vm1, vm2]
EOF
snapshot > "$T/before"
play apply --check --diff || fail "apply in check mode: $(cat "$T/apply.out")"
snapshot > "$T/after"
diff -u "$T/before" "$T/after" >&2 || fail "check mode changed the hosts (above)"
# The plan is svffd's dry run: 0 -> 4, its steps, printed by --diff.
for n in $HOSTS; do
        grep -q "^host$n *: ok=2 *changed=2 .*failed=0" "$T/apply.out" ||
                fail "check mode's recap of host$n: $(recap apply "host$n")"
done
grep -q "PF $PF: 0 -> 4 VFs on vfio-pci" "$T/apply.out" || fail "check mode printed no plan: $(cat "$T/apply.out")"
grep -q "step [0-9]*: numvfs (numvfs 4)" "$T/apply.out" || fail "the plan has no numvfs step: $(cat "$T/apply.out")"
grep -q "step [0-9]*: bind (numvfs 4, driver vfio-pci)" "$T/apply.out" || fail "the plan has no bind step: $(cat "$T/apply.out")"
grep -q 'io.svff.Attach {"domain": "h2-vm1", "pf": "'"$PF"'"}' "$T/apply.out" ||
        fail "check mode does not show the attach: $(cat "$T/apply.out")"

play apply || fail "apply: $(cat "$T/apply.out")"
for n in $HOSTS; do
        grep -q "^host$n *: ok=2 *changed=2 .*failed=0" "$T/apply.out" || fail "apply's recap of host$n: $(recap apply "host$n")"
        expect_eq "$(cat "$(h "$n")/sys/bus/pci/devices/$PF/sriov_numvfs")" 4 "host $n: numvfs after apply"
        expect_eq "$(hctl "$n" list --json | jget "sorted(v['assigned_to']['domain'] for v in d['pfs'][0]['vfs'] if v['assigned_to'])")" \
                "['h$n-vm1', 'h$n-vm2']" "host $n: assignments after apply"
done
snapshot > "$T/before"
play apply || fail "apply again: $(cat "$T/apply.out")"
snapshot > "$T/after"
for n in $HOSTS; do
        grep -q "^host$n *: ok=2 *changed=0 .*failed=0" "$T/apply.out" ||
                fail "the second apply's recap of host$n: $(recap apply "host$n")"
done
diff -u "$T/before" "$T/after" >&2 || fail "the second apply touched the hosts (above)"

# Facts again: the assignments, flattened.
play facts -e "facts_dir=$T" || fail "facts playbook: $(cat "$T/facts.out")"
expect_eq "$(jget "sorted((a['pf'], a['domain'], a['state'], a['config']) for a in d['assignments'])" < "$T/facts-host3.json")" \
        "[('$PF', 'h3-vm1', 'attached', True), ('$PF', 'h3-vm2', 'attached', True)]" "host 3: facts, assignments"

# --- bad input ------------------------------------------------------------

# bad NAME TASK-YAML: the task fails on every host, with the message
# svffd gives (EXPECT, a varlink call's error message on host 1, or
# the module's own refusal), and nothing changes.
bad() {
        _name=$1
        cat > "$T/$_name.yml" <<EOF
- hosts: svff
  gather_facts: false
  tasks:
$2
EOF
        snapshot > "$T/before"
        _rc=0
        JSON=1 play "$_name" || _rc=$?
        [ "$_rc" != 0 ] || fail "$_name: the playbook succeeded: $(cat "$T/$_name.json")"
        snapshot > "$T/after"
        diff -u "$T/before" "$T/after" >&2 || fail "$_name changed the hosts (above)"
        python3 - "$T/$_name.json" "$3" <<'PY' || fail "$_name: $(cat "$T/$_name.json" "$T/$_name.err")"
import json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2]
hosts = d["plays"][0]["tasks"][0]["hosts"]
assert sorted(hosts) == ["host1", "host2", "host3"], sorted(hosts)
for h, r in hosts.items():
    msg = r.get("msg", "")
    assert r.get("failed") and not r.get("changed"), (h, r)
    assert msg == want.replace("{h}", h[-1]), "%s: msg %r, wanted %r" % (h, msg, want)
    assert "Traceback" not in json.dumps(r) and "exception" not in r, (h, r)
PY
}
# svff_message METHOD PARAMS: svffd's message for that call on host 1, as
# bad's EXPECT (host 1's paths and domains made each host's).
svff_message() {
        varlink_call "$1" "$2" | jget 'd["parameters"]["message"]' | sed "s|$T/h1/|$T/h{h}/|g; s|h1-vm|h{h}-vm|g"
}

# varlink_call (daemon-lib.sh) calls $SOCK: host 1.
SOCK=$(h 1)/svffd.sock
msg=$(svff_message io.svff.List '{"pf": "0000:09:00.0"}')
case $msg in *0000:09:00.0*) ;; *) fail "svffd's message for an unknown PF: '$msg'" ;; esac
bad unknown-pf '    - svff.sriov.svff_pf: {pf: "0000:09:00.0", numvfs: 2, socket: "{{ svff_socket }}"}' "$msg"

msg=$(svff_message io.svff.Reconf "{\"pf\": \"$PF\", \"numvfs\": 300, \"dry_run\": true}")
case $msg in *300*) ;; *) fail "svffd's message for 300 VFs: '$msg'" ;; esac
bad too-many "    - svff.sriov.svff_pf: {pf: \"$PF\", numvfs: 300, keep_assignments: true, socket: \"{{ svff_socket }}\"}" "$msg"

msg=$(svff_message io.svff.Attach "{\"pf\": \"$PF\", \"domain\": \"no-such-vm\"}")
case $msg in *no-such-vm*) ;; *) fail "svffd's message for an unknown domain: '$msg'" ;; esac
bad unknown-domain "    - svff.sriov.svff_assignment: {pf: \"$PF\", domain: no-such-vm, socket: \"{{ svff_socket }}\"}" "$msg"

# A count change over assigned VFs is a reconf: refused without
# keep_assignments, before svffd is asked to change anything.
bad reconf-refused "    - svff.sriov.svff_pf: {pf: \"$PF\", numvfs: 6, socket: \"{{ svff_socket }}\"}" \
        "PF $PF has 2 VF(s) assigned ($(sys_vf_of 1 0) in h{h}-vm1, $(sys_vf_of 1 1) in h{h}-vm2): changing its count from 4 to 6 is a reconf; set keep_assignments: true to keep every domain's VF through it"

# --- the rolling reconf ---------------------------------------------------

# assignments_of N: host N's assignments of the PF (VF, domain, state).
assignments_of() {
        hctl "$1" list --json | jget "sorted((v['address'], v['assigned_to']['domain'], v['assigned_to']['state'])
                                            for p in d['pfs'] for v in p['vfs'] if v['assigned_to'])"
}
numvfs_of() { cat "$(h "$1")/sys/bus/pci/devices/$PF/sriov_numvfs"; }
for n in $HOSTS; do assignments_of "$n" > "$T/assignments-$n"; done

# Host 2's write of the new count is refused (a fault point): its reconf
# rolls back, and serial: 1 with max_fail_percentage: 0 stop the rollout
# there. Host 3 is never touched.
host_stop 2
host_start 2 SVFF_FAULT=fail-numvfs-N
snapshot | grep '^host 3 ' > "$T/before"
rc=0
play "$ROLLING" -e "svff_pf=$PF" -e svff_numvfs=6 -e svff_settle_delay=1 || rc=$?
[ "$rc" != 0 ] || fail "the rolling reconf succeeded with host 2's numvfs write refused: $(cat "$T/rolling-reconf.out")"
out=$T/rolling-reconf.out
snapshot | grep '^host 3 ' > "$T/after"
diff -u "$T/before" "$T/after" >&2 || fail "the rolling reconf touched host 3 after host 2 failed (above)"
grep -q '^host3 ' "$out" && fail "host 3 ran tasks after host 2 failed: $(cat "$out")"
grep -q "^host1 *: ok=5 *changed=2 .*failed=0" "$out" || fail "the rolling reconf's recap of host1: $(cat "$out")"
grep -q "^host2 *: ok=2 *changed=1 .*failed=1" "$out" || fail "the rolling reconf's recap of host2: $(recap rolling-reconf host2)"
# The plan, printed by the plan task's diff: both domains keep their VF.
grep -q "domain h1-vm1 ([-0-9a-f]*) keeps its VF: VF $(sys_vf_of 1 0) (index 0)" "$out" ||
        fail "the rolling reconf printed no plan for host 1: $(cat "$out")"
# Host 2 fails with svffd's message for the failed reconf.
grep -q "fatal: \[host2\]: FAILED! => .*\"msg\": \"Reconf of PF $PF to 6 VFs failed" "$out" ||
        fail "host 2's failure is not svffd's message: $(grep -A3 'host2' "$out")"
expect_eq "$(numvfs_of 1)" 6 "host 1: numvfs after the rolling reconf"
expect_eq "$(numvfs_of 2)" 4 "host 2: numvfs after its reconf rolled back"
expect_eq "$(numvfs_of 3)" 4 "host 3: numvfs (untouched)"
for n in $HOSTS; do
        expect_eq "$(assignments_of "$n")" "$(cat "$T/assignments-$n")" "host $n: assignments after the rolling reconf"
done

# With host 2 mended, the same playbook goes through all three hosts: the
# time of a three-host rolling reconf (host 1 is at 8 too after it).
host_stop 2
host_start 2
start=$(date +%s%N)
play "$ROLLING" -e "svff_pf=$PF" -e svff_numvfs=8 -e svff_settle_delay=1 ||
        fail "the rolling reconf to 8: $(cat "$T/rolling-reconf.out")"
end=$(date +%s%N)
note "three-host rolling reconf playbook (4 or 6 -> 8 VFs, 2 domains each): $(( (end - start) / 1000000 )) ms wall time"
for n in $HOSTS; do
        grep -q "^host$n *: ok=5 *changed=2 .*failed=0" "$T/rolling-reconf.out" ||
                fail "the second rolling reconf's recap of host$n: $(recap rolling-reconf "host$n")"
        expect_eq "$(numvfs_of "$n")" 8 "host $n: numvfs after the second rolling reconf"
        expect_eq "$(assignments_of "$n")" "$(cat "$T/assignments-$n")" "host $n: assignments after the second rolling reconf"
done
# --- a call past its timeout -----------------------------------------------

# One of host 3's VFs is held open (pcisim: as QEMU holds a vfio device),
# so the write of 0 to its PF's sriov_numvfs blocks until it is released:
# the reconf to 10 VFs outlasts the task's 3 s timeout. The task fails
# naming the reconf svffd still runs; svffd carries it through once the
# VF is let go, every assignment kept.
HELD=$(sys_vf_of 3 7)
printf 'hold %s' "$HELD" > "$(h 3)/sys/.pcisim/ctl"
cat > "$T/timeout.yml" <<EOF
- hosts: host3
  gather_facts: false
  tasks:
    - svff.sriov.svff_pf: {pf: "$PF", numvfs: 10, keep_assignments: true, timeout: 3, socket: "{{ svff_socket }}"}
EOF
rc=0
JSON=1 play timeout || rc=$?
[ "$rc" != 0 ] || fail "a reconf blocked in its numvfs write passed a 3 s timeout: $(cat "$T/timeout.json")"
jget 'd["plays"][0]["tasks"][0]["hosts"]["host3"]["msg"]' < "$T/timeout.json" > "$T/timeout.msg"
# (pcisim serves one request at a time: while the write blocks, svffd's
# Status, which reads sysfs, cannot answer which phase the reconf is in.)
grep -q "^Reconf of $PF to 10 VFs: no answer from svffd within 3 s (timeout); the operation goes on in svffd" "$T/timeout.msg" ||
        fail "the timeout's message: $(cat "$T/timeout.msg" "$T/timeout.err")"
note "the task past its timeout: $(cat "$T/timeout.msg")"
printf 'release %s' "$HELD" > "$(h 3)/sys/.pcisim/ctl"
idle() { [ "$(hctl "$1" status --json | jget 'len(d["operations"])')" = 0 ]; }
wait_for_s 60 idle 3 || fail "host 3's reconf did not end after the timeout"
expect_eq "$(numvfs_of 3)" 10 "host 3: numvfs after the reconf that outlasted the timeout"
expect_eq "$(assignments_of 3)" "$(cat "$T/assignments-3")" "host 3: assignments after the reconf that outlasted the timeout"

# --- a pause, by either spelling of its state ------------------------------

# state: held pauses h3-vm1's VF; state: paused, the old spelling of
# held, finds it so and changes nothing; state: attached unpauses it.
cat > "$T/held.yml" <<EOF
- hosts: host3
  gather_facts: false
  tasks:
    - svff.sriov.svff_assignment: {pf: "$PF", domain: h3-vm1, state: held, socket: "{{ svff_socket }}"}
    - svff.sriov.svff_assignment: {pf: "$PF", domain: h3-vm1, state: paused, socket: "{{ svff_socket }}"}
EOF
play held || fail "pause by state: held: $(cat "$T/held.out")"
grep -q "^host3 *: ok=2 *changed=1 .*failed=0" "$T/held.out" || fail "the pause's recap: $(recap held host3)"
expect_eq "$(assignments_of 3 | grep -c "'h3-vm1', 'held'")" 1 "host 3: h3-vm1's assignment after state: held"
sed -i 's/state: held/state: attached/; /state: paused/d' "$T/held.yml"
play held || fail "unpause by state: attached: $(cat "$T/held.out")"
grep -q "^host3 *: ok=1 *changed=1 .*failed=0" "$T/held.out" || fail "the unpause's recap: $(recap held host3)"
expect_eq "$(assignments_of 3)" "$(cat "$T/assignments-3")" "host 3: assignments after the unpause"

# --- a reprogram -----------------------------------------------------------

# Host 1 gets a flash hook: a stand-in for a vendor's flash tool (no FPGA
# here) that has pcisim bring the PF back as 10ee:913f with 8 VFs.
host_stop 1
IMAGES=$T/images
mkdir -p "$IMAGES"
chmod 755 "$IMAGES"
echo "913f 8" > "$IMAGES/shell.bit"
cat > "$T/hook" <<EOF
#!/bin/sh
# flash hook stand-in: PF IMAGE DEADLINE
echo "hook \$1 \$2" >> '$T/hook.log'
printf 'reprogram %s 913f 8 qdma-pf' "\$1" > '$(h 1)/sys/.pcisim/ctl'
EOF
chmod 755 "$T/hook"
: > "$T/hook.log"
python3 - "$(h 1)/svff.conf" "$T/hook" "$IMAGES" "$PF" <<'PY'
import json, sys
f, hook, images, pf = sys.argv[1:]
c = json.load(open(f))
c.update(flash_hook=hook, flash_image_dir=images,
         policies={"fpga": {"match": {"address": pf}, "reprogram_ids": ["10ee:913f"]}})
json.dump(c, open(f, "w"))
PY
host_start 1
cat > "$T/reprogram.yml" <<EOF
- hosts: host1
  gather_facts: false
  tasks:
    - svff.sriov.svff_reprogram: {pf: "$PF", image: "$IMAGES/shell.bit", socket: "{{ svff_socket }}"}
EOF
pf_id() { cat "$(h 1)/sys/bus/pci/devices/$PF/device"; }
hook_runs() { wc -l < "$T/hook.log"; }
assignments_of 1 > "$T/assignments-1"
snapshot > "$T/before"
play reprogram --check --diff || fail "reprogram in check mode: $(cat "$T/reprogram.out")"
snapshot > "$T/after"
diff -u "$T/before" "$T/after" >&2 || fail "the reprogram's check mode changed the hosts (above)"
grep -q "^host1 *: ok=1 *changed=1 .*failed=0" "$T/reprogram.out" || fail "check mode's recap: $(recap reprogram host1)"
grep -q "image $IMAGES/shell.bit, flashed off the bus; the PF may come back as 10ee:903f, 10ee:913f" "$T/reprogram.out" ||
        fail "the reprogram's check mode printed no plan: $(cat "$T/reprogram.out")"
expect_eq "$(hook_runs)" 0 "hook runs after check mode"
play reprogram || fail "reprogram: $(cat "$T/reprogram.out")"
grep -q "^host1 *: ok=1 *changed=1 .*failed=0" "$T/reprogram.out" || fail "the reprogram's recap: $(recap reprogram host1)"
expect_eq "$(pf_id)" 0x913f "host 1: PF device id after the reprogram"
expect_eq "$(hook_runs)" 1 "hook runs after the reprogram"
expect_eq "$(assignments_of 1)" "$(cat "$T/assignments-1")" "host 1: assignments after the reprogram"
# svffd's records say the PF holds this very file: nothing to do.
snapshot > "$T/before"
play reprogram || fail "reprogram again: $(cat "$T/reprogram.out")"
grep -q "^host1 *: ok=1 *changed=0 .*failed=0" "$T/reprogram.out" || fail "the second reprogram's recap: $(recap reprogram host1)"
snapshot > "$T/after"
diff -u "$T/before" "$T/after" >&2 || fail "the second reprogram touched the hosts (above)"
expect_eq "$(hook_runs)" 1 "hook runs after the second reprogram"
# The same path, rewritten in place: another image, so a flash again.
echo "913f 8" > "$IMAGES/shell.bit"
play reprogram --check || fail "reprogram of a rewritten image in check mode: $(cat "$T/reprogram.out")"
grep -q "^host1 *: ok=1 *changed=1 .*failed=0" "$T/reprogram.out" ||
        fail "check mode's recap with the image rewritten: $(recap reprogram host1)"
# An image outside flash_image_dir: svffd's own refusal, nothing touched.
echo "913f 8" > "$T/outside.bit"
msg=$(varlink_call io.svff.Reprogram "{\"pf\": \"$PF\", \"image\": \"$T/outside.bit\", \"dry_run\": true}" |
        jget 'd["parameters"]["message"]')
case $msg in *outside.bit*) ;; *) fail "svffd's message for an image outside the directory: '$msg'" ;; esac
cat > "$T/bad-image.yml" <<EOF
- hosts: host1
  gather_facts: false
  tasks:
    - svff.sriov.svff_reprogram: {pf: "$PF", image: "$T/outside.bit", socket: "{{ svff_socket }}"}
EOF
snapshot > "$T/before"
rc=0
JSON=1 play bad-image || rc=$?
[ "$rc" != 0 ] || fail "a reprogram of an image outside flash_image_dir succeeded"
expect_eq "$(jget 'd["plays"][0]["tasks"][0]["hosts"]["host1"]["msg"]' < "$T/bad-image.json")" "$msg" \
        "the task's message for an image outside flash_image_dir"
snapshot > "$T/after"
diff -u "$T/before" "$T/after" >&2 || fail "a refused reprogram touched the hosts (above)"
expect_eq "$(hook_runs)" 1 "hook runs after a refused image"

for n in $HOSTS; do
        host_stop "$n"
        if [ -s "$(h "$n")/violations" ]; then
                fail "svffd's replies to host $n's tasks break its interface: $(cat "$(h "$n")/violations")"
        fi
done
echo "PASS: svff.sriov facts, check mode, idempotent apply, bad input, rolling reconf on three hosts, a timeout, a reprogram"
