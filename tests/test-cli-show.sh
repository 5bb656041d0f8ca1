#!/bin/sh
# svffctl show PF: a PF's device class and what it can still give its
# VFs, read from the device now, not from svffd's records. On pcisim's
# mixed host with the NVMe stand-in (daemon-lib.sh; its model, as
# QEMU's emulated controller: 8 flexible VQ and 4 VI resources, 4
# namespaces), whose state the test reads from the model's own dump:
#   - NVMe: the free VQ and VI resources follow the secondaries' grants,
#     through an init and a release; the namespaces are listed;
#   - QDMA: the PF's queue count as qdma/qmax reads now (changed behind
#     svffd's back), and the budget left;
#   - a bare PCI function has no class; --json follows the interface;
#   - refusals say why: no such PF, not a PF address (usage), a PF an
#     init holds (DeviceBusy, never waits), a malformed parameter
#     (InvalidParameter).
. "$(dirname "$0")/daemon-lib.sh"

NVME=0000:00:04.0
QDMA=0000:01:00.0
BARE=0000:05:00.0
SVFF_TEST_NVME_STANDIN_DUMP="$T/standin"
mkdir -p "$SVFF_TEST_NVME_STANDIN_DUMP"
export SVFF_TEST_NVME_STANDIN_DUMP
start_pcisim mixed
printf '{ "policies": { "disks": { "match": { "address": "%s" }, "nvme": { "vq": 2, "vi": 1, "namespace": [1, 2] } } } }\n' \
        "$NVME" >"$T/svff.conf"
start_svffd

# model_sum N: the sum of field N (4: VQ, 5: VI) of the stand-in's
# online secondaries, as the model holds them.
model_sum() {
        awk -v f="$1" '$1 == "sc" && $3 == "online" { s += $f } END { print s + 0 }' \
                "$SVFF_TEST_NVME_STANDIN_DUMP/$NVME"
}

# model_ns attached|free: the NSIDs the model has attached to a
# controller, or to none, as show lists them ("1, 2").
model_ns() {
        awk -v want="$1" '$1 == "ns" { id = $2; sub(":", "", id); on = NF > 2
                if ((want == "attached") == on) l = l (l == "" ? "" : ", ") id }
                END { print (l == "" ? "none" : l) }' "$SVFF_TEST_NVME_STANDIN_DUMP/$NVME"
}

# check_nvme WHEN: show's VQ and VI lines against the model.
check_nvme() {
        ctl show "$NVME" >"$T/show.out" 2>&1 || fail "show $NVME ($1): $(cat "$T/show.out")"
        vq=$(model_sum 4)
        vi=$(model_sum 5)
        grep -q "^  device class: nvme$" "$T/show.out" || fail "no nvme class ($1): $(cat "$T/show.out")"
        grep -q "flexible VQ (queue) resources: $((8 - vq)) free of 8 (primary controller 0, secondaries $vq;" \
                "$T/show.out" || fail "the VQ line is not the model's ($vq granted, $1): $(cat "$T/show.out")"
        grep -q "flexible VI (interrupt) resources: $((4 - vi)) free of 4 (primary controller 0, secondaries $vi;" \
                "$T/show.out" || fail "the VI line is not the model's ($vi granted, $1): $(cat "$T/show.out")"
        grep -q "namespaces: 4 (NSID 1, 2, 3, 4); on VFs: $(model_ns attached); on none: $(model_ns free)$" \
                "$T/show.out" || fail "the namespaces are not the model's ($1): $(cat "$T/show.out")"
        note "$1: $vq VQ, $vi VI and namespaces $(model_ns attached) granted in the model, as show says"
}

# ---- NVMe: the pool follows the grants ----
ctl init "$NVME" 2 >"$T/init.out" 2>&1 || fail "init $NVME 2: $(cat "$T/init.out")"
[ "$(model_sum 4)" = 4 ] || fail "the model does not hold 2 x 2 VQ after the init: $(cat "$SVFF_TEST_NVME_STANDIN_DUMP/$NVME")"
check_nvme "after init 2"
grep -q "secondary controllers: 4" "$T/show.out" || fail "the secondaries are not counted: $(cat "$T/show.out")"
grep -q 'policy settings: { "vq": 2, "vi": 1, "namespace": \[ 1, 2 \] }' "$T/show.out" ||
        fail "the policy's settings are not shown: $(cat "$T/show.out")"
grep -q "^PF $NVME .*\[1b36:0010\]" "$T/show.out" || fail "no PF line: $(cat "$T/show.out")"
grep -q "^  driver nvme, 2 of 4 VFs" "$T/show.out" || fail "no count line: $(cat "$T/show.out")"
ctl release "$(sys_vf "$NVME" 1)" >"$T/release.out" 2>&1 || fail "release: $(cat "$T/release.out")"
[ "$(model_sum 4)" = 2 ] || fail "the release did not give VF 1's VQ back in the model"
[ "$(model_ns attached)" = 1 ] || fail "the release did not detach VF 1's namespace in the model"
check_nvme "after the release of VF 1"

# ---- --json: the reply as the interface says ----
ctl show --json "$NVME" >"$T/show.json" || fail "show --json"
expect_eq "$(jget "d['pf']" <"$T/show.json")" "$NVME" "--json pf"
expect_eq "$(jget "d['device_class']['name']" <"$T/show.json")" nvme "--json class"
expect_eq "$(jget "d['device_class']['inspection']['pf']['vq']['free']" <"$T/show.json")" 6 "--json free VQ"
expect_eq "$(jget "d['device_class']['settings']" <"$T/show.json")" "{'vq': 2, 'vi': 1, 'namespace': [1, 2]}" "--json settings"

# ---- QDMA: the queue count as the device has it now ----
ctl show "$QDMA" >"$T/show.out" 2>&1 || fail "show $QDMA: $(cat "$T/show.out")"
grep -q "^  device class: qdma$" "$T/show.out" || fail "no qdma class: $(cat "$T/show.out")"
qmax=$(cat "$SYS/bus/pci/devices/$QDMA/qdma/qmax")
grep -q "PF queues (qdma/qmax): $qmax$" "$T/show.out" || fail "not the PF's qmax $qmax: $(cat "$T/show.out")"
# max_age_conf MSEC: svff.conf with list_max_age_msec MSEC, reloaded.
max_age_conf() {
        printf '{ "list_max_age_msec": %s, "policies": { "disks": { "match": { "address": "%s" }, "nvme": { "vq": 2, "vi": 1, "namespace": [1, 2] } } } }\n' \
                "$1" "$NVME" >"$T/svff.conf"
        ctl config reload >"$T/reload.out" 2>&1 || fail "config reload: $(cat "$T/reload.out")"
        expect_eq "$(ctl status --json | jget 'd["snapshot_max_age_usec"]')" "$(($1 * 1000))" "list_max_age_usec"
}
reads() { grep -c "Reading the device class of PF $QDMA\.$" "$T/svffd.log"; }
# A minute: no pass, which would end the share, comes between the shows.
max_age_conf 60000
ctl show "$QDMA" >"$T/show.out" 2>&1 || fail "show $QDMA: $(cat "$T/show.out")"
r0=$(reads)
ctl show "$QDMA" >"$T/show-again.out" 2>&1 || fail "show $QDMA again: $(cat "$T/show-again.out")"
expect_eq "$(($(reads) - r0))" 0 "the device-class reads of a second show within list_max_age_msec"
cmp -s "$T/show.out" "$T/show-again.out" || fail "the second show differs: $(cat "$T/show-again.out")"
# A change by hand shows once the read is older than list_max_age_msec,
# as in list.
max_age_conf 1000
echo 100 >"$SYS/bus/pci/devices/$QDMA/qdma/qmax"
sleep 1.1
ctl show "$QDMA" >"$T/show.out" 2>&1 || fail "show $QDMA: $(cat "$T/show.out")"
[ "$(($(reads) - r0))" -ge 1 ] || fail "show did not read the device class once list_max_age_msec passed"
grep -q "PF queues (qdma/qmax): 100$" "$T/show.out" || fail "show does not read qmax anew: $(cat "$T/show.out")"
grep -q "queue budget: 2048 (the QDMA IP's maximum; a policy's \"budget\" sets it), 1948 free as read" \
        "$T/show.out" || fail "the budget left is not 2048 - 100: $(cat "$T/show.out")"

# ---- a bare PCI function ----
ctl show "$BARE" >"$T/show.out" 2>&1 || fail "show $BARE: $(cat "$T/show.out")"
grep -q "device class: none (a bare PCI function" "$T/show.out" || fail "bare PF: $(cat "$T/show.out")"
ctl show --json "$BARE" >"$T/show.json" || fail "show --json $BARE"
expect_eq "$(jget "d['device_class']" <"$T/show.json")" None "--json class of a bare PF"

# ---- refusals, each with its reason ----
# (--json: Show's own answer, without the List the table asks first)
rc=0
ctl show --json 0000:00:00.0 >"$T/show.out" 2>&1 || rc=$?
expect_eq "$rc" 1 "exit status for a device that is no SR-IOV PF"
grep -q '"error":"io.svff.NoSuchDevice"' "$T/show.out" || fail "not NoSuchDevice for a non-PF: $(cat "$T/show.out")"
grep -q "No SR-IOV PF 0000:00:00.0" "$T/show.out" || fail "no reason for a non-PF: $(cat "$T/show.out")"
rc=0
ctl show bogus >"$T/show.out" 2>&1 || rc=$?
expect_eq "$rc" 2 "exit status for a malformed address"
grep -q "'bogus' is not a PF address" "$T/show.out" || fail "no reason for 'bogus': $(cat "$T/show.out")"
varlink_call io.svff.Show '{"pf": 5}' >"$T/raw.out" || fail "raw Show: $(cat "$T/raw.out")"
expect_eq "$(jget "d['error'], d['parameters']['parameter']" <"$T/raw.out")" \
        "org.varlink.service.InvalidParameter pf" "Show with a pf that is no string"

# A PF an init holds (its class step, its VF count write): busy at once,
# not after the init.
pcisim_ctl "latency vf_enable 30000"
ctl init "$QDMA" 100 >"$T/init-q.out" 2>&1 &
init_pid=$!
# Asked until the init holds the PF (its class step, then its write;
# before them, show answers): the busy answer must come while the init
# still runs.
busy=no
for _ in $(seq 100); do
        rc=0
        ctl show --json "$QDMA" >"$T/show.out" 2>&1 || rc=$?
        if [ "$rc" = 1 ]; then
                kill -0 "$init_pid" 2>/dev/null || fail "show answered only after the write of 100 VFs ended"
                busy=yes
                break
        fi
        [ "$rc" = 0 ] || fail "show during the init: exit $rc: $(cat "$T/show.out")"
        kill -0 "$init_pid" 2>/dev/null || break
        sleep 0.1
done
[ "$busy" = yes ] || fail "show never said the PF was busy during the write of 100 VFs: $(cat "$T/show.out")"
grep -q '"error":"io.svff.DeviceBusy"' "$T/show.out" || fail "busy is not DeviceBusy: $(cat "$T/show.out")"
# The init's class step before the write, or the write itself.
grep -Eq "(A qdma step on PF $QDMA is in progress|The VF count of PF $QDMA is being changed); ask again when it ends" \
        "$T/show.out" || fail "busy without its reason: $(cat "$T/show.out")"
note "during the init: $(cat "$T/show.out")"
wait "$init_pid" || fail "the init failed: $(cat "$T/init-q.out")"
pcisim_ctl "latency vf_enable 0"

stop_svffd || fail "svffd did not stop cleanly"
echo PASS
