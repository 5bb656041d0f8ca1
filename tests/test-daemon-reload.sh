#!/bin/sh
# 'svffctl config reload [--dry-run]' (io.svff.Reload) against svffd on
# pcisim: the dry run reads svff.conf as changed and says, per PF, what
# a reload would do (an init to the policy's new count, a refusal past
# the PF's VF limit, nothing where the operator owns the count), and
# changes nothing on the device or in svffd's running settings; a file
# that does not read is ConfigInvalid naming FILE:LINE, for the dry run
# and the reload, and svffd keeps its settings; the reload does what its
# dry run said.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0
# policy_conf NUMVFS: svff.conf with policy 'fpga' asking NUMVFS VFs.
policy_conf() {
        printf '{ "settle_msec": 50, "policies": { "fpga": { "match": { "id": "10ee:903f" }, "numvfs": %s } } }\n' \
                "$1" > "$T/svff.conf"
}
idle() { "$SVFFCTL" --socket "$SOCK" status --json | grep -q '"operations":\[\]'; }

policy_conf 2
start_pcisim qdma
start_svffd
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 2 ]" || fail "policy not applied at start-up"
wait_for idle || fail "the start-up init did not finish"

note "nothing changed in the file: the dry run has nothing to do"
ctl config reload --dry-run > "$T/out" 2>&1 || fail "dry run: $(cat "$T/out")"
grep -qF "  $PF  none      (policy 'fpga') PF $PF already has 2 VFs on vfio-pci (policy 'fpga'" "$T/out" ||
        fail "dry run with the file as it runs: $(cat "$T/out")"
grep -qx "Nothing was changed." "$T/out" || fail "the dry run does not say it changed nothing: $(cat "$T/out")"

note "a new count: the dry run says the init, and does not do it"
policy_conf 3
ctl config reload --dry-run > "$T/out" 2>&1 || fail "dry run: $(cat "$T/out")"
grep -qF "  $PF  init      (policy 'fpga') policy 'fpga' (" "$T/out" && grep -qF "asks for 3 VFs on vfio-pci; the PF has 2" "$T/out" ||
        fail "dry run of a new count: $(cat "$T/out")"
ctl config reload --dry-run --json > "$T/dry.json" || fail "dry run --json"
expect_eq "$(jget "[(p['pf'], p['action'], p['policy'], p['numvfs'], p['driver']) for p in d['pfs']]" < "$T/dry.json")" \
        "[('$PF', 'init', 'fpga', 3, 'vfio-pci')]" "the dry run's JSON"
expect_eq "$(jget "d['dry_run'], d['path'] == '$T/svff.conf'" < "$T/dry.json")" "True True" "the dry run's path"
sleep 0.3
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after the dry run"
ctl list --json | jget "d['pfs'][0]['desired']['numvfs']" | grep -qx 2 || fail "the dry run changed the desired count"

note "past the PF's limit: refused, as the reload would"
policy_conf 1000
ctl config reload --dry-run --json > "$T/dry.json" || fail "dry run --json"
expect_eq "$(jget "d['pfs'][0]['action']" < "$T/dry.json")" refused "a count past the PF's limit"
jget "d['pfs'][0]['message']" < "$T/dry.json" | grep -q "asks for 1000 VFs, the PF supports 252" ||
        fail "the refusal's reason: $(cat "$T/dry.json")"

note "a file that does not read: ConfigInvalid, the running settings kept"
printf '{\n "policies": {\n  "fpga": { "match": { "id": "10ee:903f" }, "numvfs": "six" } } }\n' > "$T/svff.conf"
rc=0
ctl config reload --dry-run > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "exit status of a dry run over a bad file"
grep -qF "$T/svff.conf:3: key 'policies.fpga.numvfs'" "$T/out" || fail "the dry run does not name the line: $(cat "$T/out")"
ctl status --json | jget 'd["config_error"]' | grep -qx None || fail "a dry run set a reload error"
rc=0
ctl config reload > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 1 "exit status of a reload of a bad file"
grep -qF "$T/svff.conf:3: key 'policies.fpga.numvfs'" "$T/out" || fail "the reload does not name the line: $(cat "$T/out")"
grep -qF "svffd keeps the settings it runs with" "$T/out" || fail "the reload does not say what svffd keeps: $(cat "$T/out")"
ctl status --json | jget 'd["config_error"] is not None' | grep -qx True || fail "status lacks the failed reload"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after a bad reload"

note "the reload does what its dry run said"
policy_conf 3
ctl config reload --dry-run --json > "$T/dry.json" || fail "dry run"
expect_eq "$(jget "d['pfs'][0]['action'], d['pfs'][0]['numvfs']" < "$T/dry.json")" "init 3" "the dry run"
ctl config reload > "$T/out" 2>&1 || fail "reload: $(cat "$T/out")"
grep -q "svffd read .* again and applies its policies" "$T/out" || fail "the reload's answer: $(cat "$T/out")"
wait_for sh -c "[ \"\$(cat '$SYS/bus/pci/devices/$PF/sriov_numvfs')\" = 3 ]" || fail "the reload did not apply the count"
wait_for idle || fail "the reload's init did not finish"
ctl status --json | jget 'd["config_error"]' | grep -qx None || fail "the reload error stayed after a good reload"

note "the operator's count: the dry run says the policy is not applied"
ctl init $PF 1 > "$T/out" 2>&1 || fail "init: $(cat "$T/out")"
policy_conf 4
ctl config reload --dry-run --json > "$T/dry.json" || fail "dry run"
expect_eq "$(jget "d['pfs'][0]['action']" < "$T/dry.json")" none "the dry run over the operator's count"
jget "d['pfs'][0]['message']" < "$T/dry.json" | grep -q "set by an operator, so policy 'fpga' is not applied" ||
        fail "the dry run does not say why: $(cat "$T/dry.json")"

note "usage"
rc=0
ctl config check --dry-run > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 2 "config check --dry-run"
rc=0
ctl config reload extra > "$T/out" 2>&1 || rc=$?
expect_eq "$rc" 2 "config reload with an argument"
stop_svffd TERM || fail "svffd exit status"
