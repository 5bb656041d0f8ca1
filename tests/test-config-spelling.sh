#!/bin/sh
# Keys are snake_case; this is the one test that writes them in the
# kebab-case of earlier releases, which is still read for this release:
#   - 'svffctl config check' accepts the old spelling, warns on stderr
#     (and in --json's "warnings") naming both spellings and the line,
#     and --effective prints the new one; a policy name with '-' is the
#     operator's and stays;
#   - both spellings of one key in one object are refused, naming both;
#   - svffd logs the same warnings when it reads the file, and a policy
#     whose device-class member is in the old spelling is applied;
#   - a store an earlier release wrote, with kebab-case keys in recorded
#     class state, still reads: list shows the state, and the next commit
#     writes the keys in snake_case.
. "$(dirname "$0")/daemon-lib.sh"

PF=0000:01:00.0

cat > "$T/svff.conf" <<CONF
{
  "settle-msec": 50,
  "numvfs_timeout_sec": 20,
  "policies": {
    "my-fpga": { "match": { "address": "$PF" },
      "vf-driver": "vfio-pci",
      "qdma": { "qmax": 256,
        "vf-qmax": 8 } } }
}
CONF

"$SVFFCTL" config check "$T/svff.conf" > "$T/out" 2> "$T/err" || fail "the old spelling refused: $(cat "$T/err")"
grep -q "valid, 1 policy: my-fpga" "$T/out" || fail "config check output: $(cat "$T/out")"
grep -qF "$T/svff.conf:2: 'settle-msec' is the old spelling of 'settle_msec'; it is still read for this release" \
        "$T/err" || fail "no warning for settle-msec: $(cat "$T/err")"
grep -qF "$T/svff.conf:6: 'vf-driver' is the old spelling of 'vf_driver'" "$T/err" ||
        fail "no warning for the policy's vf-driver: $(cat "$T/err")"
grep -qF "$T/svff.conf:8: 'vf-qmax' is the old spelling of 'vf_qmax'" "$T/err" ||
        fail "no warning for the class member's vf-qmax: $(cat "$T/err")"
expect_eq "$(grep -c "old spelling" "$T/err")" 3 "warnings (the snake_case key and the policy name have none)"

"$SVFFCTL" config check "$T/svff.conf" --json > "$T/check.json" 2> "$T/err" || fail "config check --json"
[ -s "$T/err" ] && fail "config check --json wrote to stderr: $(cat "$T/err")"
# (the old spellings first; what this host lacks, a VF driver not loaded,
# may follow)
expect_eq "$(jget 'd["valid"], len([w for w in d["warnings"] if "old spelling" in w]), "vf-qmax" in d["warnings"][2]' < "$T/check.json")" \
        "True 3 True" "config check --json's warnings"

"$SVFFCTL" config check "$T/svff.conf" --effective > "$T/eff.json" 2>/dev/null || fail "--effective"
python3 - "$T/eff.json" <<'PY' || fail "--effective: $(cat "$T/eff.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["settle_msec"] == 50 and "settle-msec" not in d
assert list(d["policies"]) == ["my-fpga"]
p = d["policies"]["my-fpga"]
assert p["vf_driver"] == "vfio-pci" and "vf-driver" not in p
assert p["qdma"] == {"qmax": 256, "vf_qmax": 8}, p["qdma"]
PY

# Both spellings in one object: which one is meant is anyone's guess.
printf '{ "settle_msec": 50,\n  "settle-msec": 60 }\n' > "$T/both.conf"
rc=0
"$SVFFCTL" config check "$T/both.conf" > "$T/out" 2> "$T/err" || rc=$?
expect_eq "$rc" 1 "config check of both spellings"
grep -qF "$T/both.conf:1: key 'settle_msec' is given twice, as 'settle-msec' (the old spelling) and 'settle_msec'" \
        "$T/err" || fail "both spellings not named: $(cat "$T/err")"
printf '{ "policies": { "p": { "match": { "address": "%s" },\n  "qdma": { "vf_qmax": 1, "vf-qmax": 2 } } } }\n' \
        "$PF" > "$T/both.conf"
"$SVFFCTL" config check "$T/both.conf" > "$T/out" 2> "$T/err" && fail "both spellings in a class member passed"
grep -qF "both.conf:2: key 'policies.p.qdma.vf_qmax' is given twice" "$T/err" ||
        fail "both spellings in a class member not named: $(cat "$T/err")"

# svffd: the same warnings in its log, and the policy applied with the
# class member read.
start_pcisim qdma
start_svffd
grep -q "svff.conf:8: 'vf-qmax' is the old spelling of 'vf_qmax'" "$T/svffd.log" ||
        fail "svffd does not log the old spelling"
ctl init "$PF" 2 > "$T/init.out" 2>&1 || fail "init $PF 2: $(cat "$T/init.out")"
expect_eq "$(sys_numvfs $PF)" 2 "sriov_numvfs after init"
expect_eq "$(cat "$SYS/bus/pci/devices/$PF/qdma/qmax")" 256 "PF qmax from the policy"
VF0=$(sys_vf $PF 0)
ctl list --json > "$T/list.json"
c="[v for p in d['pfs'] if p['address'] == '$PF' for v in p['vfs'] if v['index'] == 0][0]['class']"
expect_eq "$(jget "$c['settings']['vf_qmax'], $c['state']['vf_qmax'], $c['state']['pf_qmax']" < "$T/list.json")" \
        "8 8 256" "VF 0's recorded class settings and state"
stop_svffd || fail "svffd did not stop cleanly"

# The store as an earlier release wrote it: kebab-case class keys.
python3 - "$STATE/store.json" <<'PY' || fail "could not write the old store"
import json, sys
d = json.load(open(sys.argv[1]))
def kebab(o):
    if isinstance(o, dict):
        return {k.replace("_", "-"): kebab(v) for k, v in o.items()}
    return [kebab(x) for x in o] if isinstance(o, list) else o
for vf in d["vfs"].values():
    if vf.get("class"):
        vf["class"] = kebab(vf["class"])
json.dump(d, open(sys.argv[1], "w"))
PY
grep -q '"vf-qmax"' "$STATE/store.json" || fail "the old store has no kebab-case key"
start_svffd
ctl list --json > "$T/list.json"
expect_eq "$(jget "$c['settings']['vf_qmax'], $c['state']['vf_qmax'], $c['state']['pf_qmax']" < "$T/list.json")" \
        "8 8 256" "VF 0's class state read from the old store"
ctl list > "$T/list.txt"
grep "^$VF0 " "$T/list.txt" | grep -q " qmax 8$" ||
        fail "VF 0's row does not describe its old-store state: $(grep "^$VF0 " "$T/list.txt")"
ctl_status --json > "$T/status.json"
expect_eq "$(jget "len([x for x in d['drift'] if x['kind'] == 'class-drift'])" < "$T/status.json")" 0 \
        "class drift over the old store"
# The next commit (a release) writes the new spelling.
ctl release "$(sys_vf $PF 1)" > "$T/release.out" 2>&1 || fail "release over the old store: $(cat "$T/release.out")"
grep -q -- '-qmax"' "$STATE/store.json" && fail "the store kept the old spelling after a commit"
grep -q '"vf_qmax"' "$STATE/store.json" || fail "the store lost the class state"
stop_svffd || fail "svffd did not stop cleanly"
echo PASS
