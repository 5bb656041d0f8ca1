#!/bin/sh
# 'svffctl config check FILE' reads FILE.d/ exactly as 'svffd --config
# FILE' does: a bad drop-in makes both refuse, naming it; --effective
# prints the settings the file and its drop-ins add up to; what a file
# asks of this host that it lacks is warned about.
set -eu
: "${top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
SVFFD="$top_builddir/daemon/svffd"
SVFFCTL="$top_builddir/cli/svffctl"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$SVFFD" ] && [ -x "$SVFFCTL" ] || skip "svffd/svffctl not built"
command -v python3 >/dev/null || skip "python3 is needed to check JSON output"

T=$(mktemp -d "${TMPDIR:-/tmp}/svff-config-check.XXXXXX")
trap 'rm -rf "$T"' EXIT

printf '{ "workers": 2,\n  "policies": { "fpga": { "match": { "id": "10ee:903f" }, "numvfs": 4 } } }\n' > "$T/svff.conf"
mkdir "$T/svff.conf.d"
printf '{ "workers": 5 }\n' > "$T/svff.conf.d/10-workers.conf"

"$SVFFCTL" config check "$T/svff.conf" > "$T/out" 2>&1 || fail "valid file and drop-in refused: $(cat "$T/out")"
grep -q "valid, 1 policy: fpga" "$T/out" || fail "config check output: $(cat "$T/out")"

"$SVFFCTL" config check "$T/svff.conf" --effective > "$T/eff.json" || fail "--effective"
python3 - "$T/eff.json" <<'PY' || fail "--effective: $(cat "$T/eff.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["workers"] == 5, d["workers"]                   # the drop-in wins
assert d["vf_driver"] == "vfio-pci"                      # defaults are shown
assert d["numvfs_timeout_sec"] == 30 and d["numvfs_timeout_per_vf_msec"] == 200
assert d["policies"]["fpga"]["numvfs"] == 4
assert d["policies"]["fpga"]["match"] == {"id": "10ee:903f"}
assert d["limits"]["max_connections"] == 1024
PY

# A drop-in svffd refuses: config check refuses it too, naming it.
printf '{\n  "workerz": 1\n}\n' > "$T/svff.conf.d/20-typo.conf"
rc=0
"$SVFFCTL" config check "$T/svff.conf" > "$T/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "config check passed a bad drop-in (exit $rc): $(cat "$T/out")"
grep -qF "$T/svff.conf.d/20-typo.conf:2: key 'workerz' is unknown" "$T/out" ||
        fail "config check does not name the drop-in: $(cat "$T/out")"
rc=0
"$SVFFD" --config "$T/svff.conf" --state-dir "$T/state" --sysfs-root "$T" --socket "$T/x.sock" \
        > "$T/svffd.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "svffd started over the bad drop-in (exit $rc)"
grep -qF "20-typo.conf:2: key 'workerz'" "$T/svffd.out" || fail "svffd's refusal: $(cat "$T/svffd.out")"

# Any bytes: a drop-in with a NUL byte after a comment, or a byte that is
# not UTF-8, is refused by file, line and column, without a crash.
rm "$T/svff.conf.d/20-typo.conf"
printf '{\n  "workers": 3 // three\0 and more text after the NUL byte, past the copy\n}\n' \
        > "$T/svff.conf.d/30-nul.conf"
rc=0
"$SVFFCTL" config check "$T/svff.conf" > "$T/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "config check of a NUL byte: exit $rc: $(cat "$T/out")"
grep -qF "$T/svff.conf.d/30-nul.conf:2:24: a NUL byte" "$T/out" ||
        fail "config check does not name the NUL byte: $(cat "$T/out")"
rc=0
"$SVFFD" --config "$T/svff.conf" --state-dir "$T/state" --sysfs-root "$T" --socket "$T/x.sock" \
        > "$T/svffd.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "svffd over a NUL byte: exit $rc: $(cat "$T/svffd.out")"
grep -qF "30-nul.conf:2:24: a NUL byte" "$T/svffd.out" || fail "svffd's refusal: $(cat "$T/svffd.out")"
printf '{ "admin_group": "caf\351" }\n' > "$T/svff.conf.d/30-nul.conf"
rc=0
"$SVFFCTL" config check "$T/svff.conf" > "$T/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "config check of Latin-1: exit $rc: $(cat "$T/out")"
grep -qF "$T/svff.conf.d/30-nul.conf:1:22: byte 0xe9 is not UTF-8" "$T/out" ||
        fail "config check does not name the byte: $(cat "$T/out")"
rm "$T/svff.conf.d/30-nul.conf"

# What config check quotes from a file reaches the terminal escaped: a
# policy's name (refused) and a value with ESC, BEL and U+202E in it.
printf '{ "manage": ["\\u001b[2J\\u0007\\u202e"], "policies": { "a\\u001b[31m": null } }\n' \
        > "$T/svff.conf.d/40-esc.conf"
rc=0
"$SVFFCTL" config check "$T/svff.conf" > "$T/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "config check of control characters: exit $rc: $(cat -v "$T/out")"
grep -qF "40-esc.conf:1: key 'manage' item 0: Manage rule '\x1b[2J\x07\u202e'" "$T/out" ||
        fail "the rule not escaped: $(cat -v "$T/out")"
grep -qF "40-esc.conf:1: key 'policies.a\x1b[31m' is not a policy name" "$T/out" ||
        fail "the policy name not escaped: $(cat -v "$T/out")"
grep -q "$(printf '[\033\007]')" "$T/out" && fail "config check printed a control character: $(cat -v "$T/out")"
rm "$T/svff.conf.d/40-esc.conf"

# What the file asks of this host that it lacks: warnings, exit 0.
mkdir -p "$T/sys/bus/pci/drivers/vfio-pci"
cat > "$T/host.conf" <<EOF
{
  "sysfs_root": "$T/sys",
  "admin_group": "svff-no-such-group",
  "libvirt_uri": "xen:///system",
  "policies": {
    "a": { "match": { "id": "10ee:903f" }, "numvfs": 4 },
    "b": { "match": { "id": "10ee:903f" }, "numvfs": 2, "vf_driver": "no-such-drv" },
    "c": { "match": { "address": "0000:01:00.0" }, "vf_driver": "vfio-pci" }
  }
}
EOF
"$SVFFCTL" config check "$T/host.conf" > "$T/out" 2> "$T/err" || fail "warnings made config check fail: $(cat "$T/err")"
grep -q "valid, 3 policies" "$T/out" || fail "config check with warnings: $(cat "$T/out")"
grep -qF "key 'admin_group': no group 'svff-no-such-group' on this host" "$T/err" ||
        fail "no warning for the admin group: $(cat "$T/err")"
grep -qF "key 'libvirt_uri': 'xen:///system' is not a URI of libvirt's QEMU driver" "$T/err" ||
        fail "no warning for the libvirt URI: $(cat "$T/err")"
grep -qF "$T/host.conf:7: policy 'b': no PCI driver 'no-such-drv' is registered under $T/sys/bus/pci/drivers" "$T/err" ||
        fail "no warning for the policy's driver: $(cat "$T/err")"
grep -qF "$T/host.conf:7: policy 'b' matches exactly what policy 'a' ($T/host.conf:6) matches, which comes first: 'b' never applies" "$T/err" ||
        fail "no warning for the shadowed policy: $(cat "$T/err")"
[ "$(wc -l < "$T/err")" = 4 ] || fail "config check warned about more than it should: $(cat "$T/err")"

# A FILE named must exist, as for svffd --config.
"$SVFFCTL" config check "$T/missing.conf" > "$T/out" 2>&1 && fail "a missing FILE passed: $(cat "$T/out")"
echo PASS
