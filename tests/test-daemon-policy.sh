#!/bin/sh
# svff.conf against the real programs: 'svffctl config check' names the
# file, line and key of each kind of bad file (drop-ins too) and exits 1;
# svffd refuses to start on one; a PF policy is applied at start-up
# (pcisim shows the VFs on vfio-pci); an invalid reload keeps the running
# config and shows in status; a valid reload applies a changed policy.
# Who owns the count: an operator's init, reconf or release takes it from
# the policy (a refused reconf does not), init --policy hands it back.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0

# check_bad TEXT NEEDLE: config check refuses TEXT, naming NEEDLE.
check_bad() {
        printf '%b' "$1" > "$T/bad.conf"
        rc=0
        "$SVFFCTL" config check "$T/bad.conf" > "$T/out" 2> "$T/err" || rc=$?
        expect_eq "$rc" 1 "config check of: $1"
        grep -qF -- "$T/bad.conf:$2" "$T/err" || fail "config check of '$1' lacks '$T/bad.conf:$2': $(cat "$T/err")"
}

check_bad '{\n  "sockett": "/x"\n}' "2: key 'sockett' is unknown"
check_bad '{\n  "workers": "two"\n}' "2: key 'workers' must be an integer"
check_bad '{ "limits": {\n "idle_timeout_sec": 999999 } }' "2: key 'limits.idle_timeout_sec' must be between"
check_bad '{ "log_level": "chatty" }' "1: key 'log_level' must be one of"
check_bad '{\n "workers": 2,\n "socket" "/x"\n}' "3: "
check_bad '{ "workers": 2' "1: unexpected end of file"
check_bad '[ 1 ]' "1: the top level must be a JSON object"
check_bad '{ "policies": {\n  "fpga": {\n    "match": { "id": "10ee" },\n    "numvfs": 4 } } }' \
        "3: key 'policies.fpga.match.id' must be VENDOR:DEVICE"
check_bad '{ "policies": {\n  "fpga": {\n    "match": { "id": "10ee:903f" },\n    "numvfs": -1 } } }' \
        "4: key 'policies.fpga.numvfs' must be between 0 and 65535"
check_bad '{ "policies": { "x": {\n "numvfs": 1 } } }' "1: key 'policies.x' needs a 'match'"
check_bad '{ "policies": { "x": { "match": { "interface": "eth0" },\n "pool": 1 } } }' \
        "2: key 'policies.x.pool' must be true or false"

# Several problems: every one named.
printf '{\n "workers": 0,\n "typo": 1\n}\n' > "$T/bad.conf"
"$SVFFCTL" config check "$T/bad.conf" 2> "$T/err" && fail "config check passed two errors"
grep -q "bad.conf:2: key 'workers'" "$T/err" && grep -q "bad.conf:3: key 'typo'" "$T/err" ||
        fail "not every problem named: $(cat "$T/err")"

# A valid file with a policy, and --json.
cat > "$T/svff.conf" <<'CONF'
// a test host
{
  "settle_msec": 50,
  "policies": {
    "fpga": { "match": { "id": "10ee:903f" }, "numvfs": 4 },
    "other": { "match": { "interface": "ens9" }, "numvfs": 1, "pool": false }
  }
}
CONF
"$SVFFCTL" config check "$T/svff.conf" > "$T/out" || fail "valid file refused: $(cat "$T/out")"
grep -q "valid, 2 policies: fpga, other" "$T/out" || fail "config check output: $(cat "$T/out")"
"$SVFFCTL" config check "$T/svff.conf" --json | jget 'd["valid"] and d["policies"] == ["fpga", "other"]' |
        grep -qx True || fail "config check --json"
"$SVFFCTL" config check /dev/null > /dev/null || fail "/dev/null refused"

# svffd itself refuses a bad file, naming it, and accepts /dev/null.
printf '{\n "policies": { "p": { "match": { "id": "zz" } } } }' > "$T/bad.conf"
rc=0
"$SVFFD" --config "$T/bad.conf" --state-dir "$T/state" --sysfs-root "$T" --socket "$T/x.sock" \
        > "$T/refused.log" 2>&1 || rc=$?
expect_eq "$rc" 1 "svffd with a bad config"
grep -q "bad.conf:2: key 'policies.p.match.id'" "$T/refused.log" || fail "svffd's refusal: $(cat "$T/refused.log")"

# The policy at start-up: 4 VFs on vfio-pci without anyone asking.
start_pcisim qdma
expect_eq "$(sys_numvfs $PF)" 0 "numvfs before svffd"
start_svffd
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 4 ]" || fail "policy not applied at start-up"
for i in 0 1 2 3; do
        wait_for sh -c "[ -L '$SYS/bus/pci/devices/$(sys_vf $PF $i)/driver' ]" || fail "VF $i never bound"
        expect_eq "$(sys_driver "$(sys_vf $PF $i)")" vfio-pci "driver of VF $i"
done
wait_for sh -c "\"$SVFFCTL\" --socket '$SOCK' status --json | grep -q '\"operations\":\\[\\]'" ||
        fail "the policy init did not finish"
ctl list --json > "$T/list.json"
jget 'd["pfs"][0]["policy"], d["pfs"][0]["pool"], d["pfs"][0]["desired"]["numvfs"]' < "$T/list.json" |
        grep -qx 'fpga True 4' || fail "list does not show the policy: $(cat "$T/list.json")"
grep -q "by policy 'fpga'" "$T/svffd.log" || fail "the log does not say why"

# An invalid reload keeps the running config and shows in status.
cp "$T/svff.conf" "$T/good.conf"
printf '{\n "policies": {\n  "fpga": { "match": { "id": "10ee:903f" }, "numvfs": "six" } } }\n' > "$T/svff.conf"
kill -HUP "$SVFFD_PID"
wait_for sh -c "\"$SVFFCTL\" --socket '$SOCK' status --json | grep -q 'svff.conf:3: key'" ||
        fail "status lacks the reload error: $(ctl status --json)"
ctl status | grep -q "policies.fpga.numvfs" || fail "human status lacks the reload error"
ctl list --json | jget 'd["pfs"][0]["policy"]' | grep -qx fpga || fail "policy lost on a bad reload"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after a bad reload"
grep -q "keeping the running one" "$T/svffd.log" || fail "the bad reload is not logged"

# A reload over a drop-in with a NUL byte: refused by file, line and
# column, and svffd lives on with the running config.
cp "$T/good.conf" "$T/svff.conf"
mkdir -p "$T/svff.conf.d"
printf '{\n  "settle_msec": 60 // a comment\0 and text after the NUL byte, past the copy\n}\n' \
        > "$T/svff.conf.d/50-nul.conf"
kill -HUP "$SVFFD_PID"
wait_for sh -c "\"$SVFFCTL\" --socket '$SOCK' status --json | grep -q '50-nul.conf:2:'" ||
        fail "status lacks the NUL byte's refusal: $(ctl status --json)"
ctl status | grep -qF "$T/svff.conf.d/50-nul.conf:2:33: a NUL byte" ||
        fail "human status does not name the NUL byte: $(ctl status)"
kill -0 "$SVFFD_PID" || fail "svffd died reloading a NUL byte"
expect_eq "$(sys_numvfs $PF)" 4 "numvfs after a reload over a NUL byte"
rm "$T/svff.conf.d/50-nul.conf"

# A valid reload clears the error and applies the changed policy.
sed 's/"numvfs": 4/"numvfs": 2/' "$T/good.conf" > "$T/svff.conf"
kill -HUP "$SVFFD_PID"
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 2 ]" || fail "changed policy not applied on reload"
ctl status --json | jget 'd["config_error"]' | grep -qx None || fail "config error left after a good reload"

# A restart with the policy satisfied changes nothing.
wait_for sh -c "\"$SVFFCTL\" --socket '$SOCK' status --json | grep -q '\"operations\":\\[\\]'" || fail "reload init stuck"
stop_svffd TERM || fail "svffd exit status"
gen=$(jget 'd["generation"]' < "$STATE/store.json")
start_svffd
sleep 0.3
expect_eq "$(jget 'd["generation"]' < "$STATE/store.json")" "$gen" "store generation after a restart with nothing to do"

# A boot: the kernel starts every PF at 0 VFs while svffd is down. The
# policy's init at start-up makes them again: its PF's drift is not
# logged as warnings whose next steps would have the operator do what
# that init does; the init's own line says what it does.
stop_svffd TERM || fail "svffd exit status"
echo 0 > "$SYS/bus/pci/devices/$PF/sriov_numvfs"
lines=$(wc -l < "$T/svffd.log")
start_svffd
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 2 ]" || fail "the policy did not restore 2 VFs at start-up"
# The count is the init's first step; its binds follow, and an init
# meanwhile is refused as in progress.
settled() { "$SVFFCTL" --socket "$SOCK" status --json | grep -q '"operations":\[\]'; }
wait_for settled || fail "the policy's init at start-up did not finish"
tail -n +"$((lines + 1))" "$T/svffd.log" > "$T/boot.log"
grep -q "Drift: .*$PF" "$T/boot.log" && fail "start-up drift of $PF as warnings while its init repairs it: $(grep 'Drift: ' "$T/boot.log")"
grep -q "Init of PF $PF to 2 VFs on vfio-pci by policy 'fpga'" "$T/boot.log" ||
        fail "no start-up line for $PF's init by its policy"

# Who owns the count: the policy, until an operator's init takes it.
owner() { ctl list --json | jget 'd["pfs"][0]["owner"]'; }
status_owner() { ctl status --json | jget 'd["owners"][0]["owner"], d["owners"][0]["policy"], d["owners"][0]["refused"]'; }
reloads() { grep -c "Configuration reloaded" "$T/svffd.log" || true; }
reload() {
        n=$(reloads)
        kill -HUP "$SVFFD_PID"
        wait_for sh -c "[ \$(grep -c 'Configuration reloaded' '$T/svffd.log') -gt $n ]" || fail "reload not done"
        sleep 0.3
        wait_for settled || fail "an operation after the reload did not finish"
}
expect_eq "$(owner)" policy:fpga "owner after the policy's init"
expect_eq "$(status_owner)" "policy:fpga fpga None" "status owner after the policy's init"
ctl list -o +owner | grep -q "^$PF .* policy:fpga " || fail "human list -o +owner lacks the owner: $(ctl list -o +owner)"

# The operator's init over the policy's count says so, and how to hand
# the count back; its dry run says so first, and changes no owner.
ctl init $PF 1 --dry-run > "$T/out" || fail "operator init --dry-run over the policy: $(cat "$T/out")"
grep -q "^This init would take PF $PF's VF count from policy 'fpga'" "$T/out" && grep -q "svffctl init $PF --policy" "$T/out" ||
        fail "the dry run of an init over the policy's count does not say so: $(cat "$T/out")"
expect_eq "$(ctl init $PF 1 --dry-run --json | jget 'd["policy"]')" fpga "the dry run's policy in JSON"
expect_eq "$(owner)" policy:fpga "owner after the dry runs"
ctl init $PF 1 > "$T/out" || fail "operator init over the policy: $(cat "$T/out")"
grep -q "takes PF $PF's VF count from policy 'fpga'" "$T/out" && grep -q "svffctl init $PF --policy" "$T/out" ||
        fail "init over the policy's count does not say so: $(cat "$T/out")"
expect_eq "$(owner)" operator "owner after an operator's init"
# A second one takes it from the operator: nothing more to say.
ctl init $PF 1 > "$T/out" || fail "operator init over the operator's count"
grep -q "policy" "$T/out" && fail "init over the operator's count names a policy: $(cat "$T/out")"
ctl init $PF 1 --dry-run --json | jget 'd.get("policy")' | grep -qx None ||
        fail "the dry run of an init over the operator's count names a policy"
expect_eq "$(jget 'd["pfs"]["'$PF'"]["owner"]' < "$STATE/store.json")" operator "owner in the store"
ctl status | grep -q "^  $PF  *1  *operator  *fpga" || fail "human status lacks the owner: $(ctl status)"
# An unchanged config reloaded: the operator's count stays, nothing destroyed.
VF0=$(sys_vf $PF 0)
reload
expect_eq "$(sys_numvfs $PF)" 1 "numvfs after a reload over an operator's init"
expect_eq "$(sys_driver "$VF0")" vfio-pci "VF0 after the reload"
grep -q "set by an operator, so policy 'fpga' is not applied" "$T/svffd.log" || fail "the reload does not say why"
# ... and a restart keeps it too.
stop_svffd TERM || fail "svffd exit status"
start_svffd
sleep 0.3
wait_for settled
expect_eq "$(sys_numvfs $PF)" 1 "numvfs after a restart over an operator's init"
expect_eq "$(owner)" operator "owner after a restart"

# init --policy hands the count back.
ctl init $PF --policy > "$T/out" || fail "init --policy: $(cat "$T/out")"
grep -q "2 VFs on vfio-pci" "$T/out" || fail "init --policy output: $(cat "$T/out")"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after init --policy"
expect_eq "$(owner)" policy:fpga "owner after init --policy"
rc=0; ctl init $PF 3 --policy 2> "$T/err" || rc=$?
expect_eq "$rc" 2 "init --policy with a count"

# A reconf the kernel refuses changes nothing, the owner included: the
# count stays the policy's.
pcisim_ctl fail $PF sriov_numvfs EIO 1
rc=0; ctl reconf $PF 3 > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reconf refused by the kernel"
grep -q "nothing was changed" "$T/err" || fail "refused reconf: $(cat "$T/err")"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after a refused reconf"
expect_eq "$(owner)" policy:fpga "owner after a refused reconf"
reload
expect_eq "$(owner)" policy:fpga "owner after a refused reconf and a reload"
# A reconf that goes through makes the operator the owner, as an init
# does: a reload keeps the operator's count.
ctl reconf $PF 3 > "$T/out" || fail "reconf over the policy: $(cat "$T/out")"
expect_eq "$(sys_numvfs $PF)" 3 "numvfs after a reconf over the policy"
expect_eq "$(owner)" operator "owner after a reconf"
reload
expect_eq "$(sys_numvfs $PF)" 3 "numvfs after a reload over an operator's reconf"
expect_eq "$(owner)" operator "owner after a reconf and a reload"
ctl init $PF --policy > /dev/null || fail "init --policy after the reconf"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after init --policy over the reconf"
expect_eq "$(owner)" policy:fpga "owner after init --policy over the reconf"

# A release is an operator's change too: a reload does not rebind the VF.
VF1=$(sys_vf $PF 1)
ctl release "$VF1" > /dev/null || fail "release"
expect_eq "$(owner)" operator "owner after a release"
reload
expect_eq "$(sys_driver "$VF1")" qdma-vf "released VF (re-probed to its default driver) after a reload"

# A policy that would destroy assigned VFs is refused, and status says so
# (an assignment recorded while svffd was stopped, as a stand-in for an
# attach: no libvirt here).
ctl init $PF --policy > /dev/null || fail "init --policy again"
stop_svffd TERM || fail "svffd exit status"
store_assign "$(sys_vf $PF 0)"
start_svffd
sed 's/"numvfs": 4/"numvfs": 3/' "$T/good.conf" > "$T/svff.conf"
reload
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after a reload over assigned VFs"
ctl status --json | jget 'd["owners"][0]["refused"]' > "$T/refused"
grep -q "policy 'fpga' .* asks for 3 VFs instead of 2, but VFs of the PF are assigned" "$T/refused" ||
        fail "status does not report the refusal: $(cat "$T/refused")"
ctl status | grep -q "$PF: policy not applied: " || fail "human status lacks the refusal: $(ctl status)"

# A store from before owners: the policy's when it holds the policy's
# count, else the operator's.
stop_svffd TERM || fail "svffd exit status"
python3 - "$STATE/store.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["assignments"] = {}
for rec in d["pfs"].values():
    del rec["owner"]
json.dump(d, open(sys.argv[1], "w"))
PY
start_svffd
sleep 0.3
wait_for settled
expect_eq "$(sys_numvfs $PF)" 2 "numvfs with an old record and another policy count"
expect_eq "$(owner)" operator "owner of an old record with another count"

# A policy that cannot apply (more VFs than the PF has) still owns the
# count of a PF svff has no record of: a reconf the kernel refuses leaves
# it so, and records no count of its own.
stop_svffd TERM || fail "svffd exit status"
rm -f "$STATE/store.json" "$STATE/store.json.prev"
echo 0 > "$SYS/bus/pci/devices/$PF/sriov_numvfs"
cat > "$T/svff.conf" <<'CONF'
{ "settle_msec": 50, "policies": { "fpga": { "match": { "id": "10ee:903f" }, "numvfs": 300 } } }
CONF
start_svffd
wait_for settled || fail "start-up with a policy that cannot apply"
expect_eq "$(owner)" policy:fpga "owner of an unrecorded PF with a policy that cannot apply"
pcisim_ctl fail $PF sriov_numvfs EIO 1
rc=0; ctl reconf $PF 3 > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "reconf of an unrecorded PF refused by the kernel"
grep -q "nothing was changed" "$T/err" || fail "refused reconf: $(cat "$T/err")"
expect_eq "$(sys_numvfs $PF)" 0 "numvfs after the refused reconf of an unrecorded PF"
expect_eq "$(owner)" policy:fpga "owner after the refused reconf of an unrecorded PF"

note "config check warns about a policy asking more VFs than the running svffd lists for its PF"
printf '{ "policies": { "big": { "match": { "id": "10ee:903f" }, "numvfs": 300 } } }\n' > "$T/big.conf"
ctl config check "$T/big.conf" > "$T/out" 2> "$T/err" || fail "config check of big.conf: $(cat "$T/err")"
grep -qF "$T/big.conf:1: policy 'big' asks 300 VFs of PF $PF, which has at most 252 (sriov_totalvfs, as svffd lists it)" \
        "$T/err" || fail "no warning for 300 VFs: $(cat "$T/err")"
printf '{ "policies": { "fits": { "match": { "id": "10ee:903f" }, "numvfs": 252 } } }\n' > "$T/fits.conf"
ctl config check "$T/fits.conf" > "$T/out" 2> "$T/err" || fail "config check of fits.conf: $(cat "$T/err")"
grep -q "sriov_totalvfs" "$T/err" && fail "a warning for 252 of 252 VFs: $(cat "$T/err")"

echo "PASS"
