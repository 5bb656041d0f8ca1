#!/bin/sh
# svffd's replies and errors are what its interface declares, and the
# README's socat line reads that interface as written. Each call
# goes through varlink-check (daemon-lib.sh), which fails the test on any
# reply that breaks the description svffd serves, and the cases the
# validator cannot see by itself are asserted here:
#   - Init's vfs[] carry managed; its progress replies (continues) fit
#     the declared output;
#   - Reconf's reply, its Timeout and its StoreError carry only declared
#     fields (no device, pf or numvfs where undeclared; assignments and
#     steps where declared; StoreError's path); its progress replies fit;
#   - a kernel EINVAL on sriov_numvfs is DeviceRefused {device, message};
#   - Attach takes null for live and config;
#   - malformed parameters and calls the caller may not make are
#     org.varlink.service.InvalidParameter {parameter} and
#     org.varlink.service.PermissionDenied {}, without a message (the
#     state's refusals are io.svff errors with one: test-refusal-sites.sh);
#     a vendor extension object in a call is accepted;
#   - every member of the served interfaces has a doc comment, fixed
#     names are enums, and GetInfo names the project's URL.
. "$(dirname "$0")/daemon-lib.sh"

VC="$top_builddir/tests/varlink-check/varlink-check"
[ -x "$VC" ] || skip "varlink-check not built: it needs Go and golang-github-varlink-go-dev"
[ "${VARLINK_CHECK:-yes}" != no ] || skip "VARLINK_CHECK=no: the validator is off"

PF=0000:01:00.0
start_pcisim qdma
chmod 0755 "$T"
printf '{ "numvfs_timeout_sec": 1 }\n' > "$T/svff.conf"
start_svffd
# The README's way to read the interface on Debian 12 (socat and jq),
# run as written against this svffd's socket.
awk '/read it with socat and jq:/ { on = 1 } on && /```sh/ { code = 1; next } code && /```/ { exit } code' \
        "$top_srcdir/README.md" | sed "s|/run/svff/svffd.sock|$SOCK|" > "$T/introspect.sh"
[ -s "$T/introspect.sh" ] || fail "no socat line under the README's interface paragraph"
command -v socat >/dev/null || fail "socat is not installed (scripts/setup-deps installs it)"
sh "$T/introspect.sh" > "$T/introspect.out" || fail "the README's socat line failed: $(cat "$T/introspect.out")"
grep -qx "interface io.svff" "$T/introspect.out" || fail "the README's socat line: $(head -n 5 "$T/introspect.out")"
grep -q "^method Reconf(" "$T/introspect.out" || fail "the README's socat line: no method Reconf"

note "every member documented, enums, GetInfo's url"
"$VC" -upstream "$SOCK" -lint > "$T/lint.out" 2>&1 || fail "undocumented members: $(cat "$T/lint.out")"
"$VC" -upstream "$SOCK" -describe io.svff > "$T/io.svff.varlink" || fail "describe io.svff"
grep -q "state: (attached, held, detaching)" "$T/io.svff.varlink" || fail "Assignment.state is not an enum"
grep -q "^error DeviceRefused (device: string, message: string)" "$T/io.svff.varlink" || fail "no DeviceRefused"

# Raw calls, through the validating proxy.
python3 - "$T/check.sock" "$SYS" "$PF" <<'PY' || fail "contract checks"
import json, socket, sys

SOCK, SYS, PF = sys.argv[1:4]

class Peer:
    def __init__(self, path=SOCK):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.s.settimeout(30)
        self.buf = b""
    def send(self, msg):
        self.s.sendall(json.dumps(msg).encode() + b"\0")
    def read(self):
        while b"\0" not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError("closed")
            self.buf += d
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)
    def call(self, method, params=None, **kw):
        m = {"method": method, "parameters": params or {}}
        m.update(kw)
        self.send(m)
        replies = [self.read()]
        while replies[-1].get("continues"):
            replies.append(self.read())
        return replies

def check(cond, what):
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        sys.exit(1)
    print("ok -", what)

def pcisim(cmd):
    with open(SYS + "/.pcisim/ctl", "w") as f:
        f.write(cmd)

p = Peer()

r = p.call("org.varlink.service.GetInfo")[0]
check(r["parameters"]["url"].startswith("https://"), "GetInfo names the project's URL: %r" % r["parameters"]["url"])

# 1, 3: Init, with progress
rs = p.call("io.svff.Init", {"pf": PF, "numvfs": 4}, more=True)
final = rs[-1]
check("error" not in final, "Init 4: %s" % final)
check(all(v.get("managed") is True for v in final["parameters"]["vfs"]), "Init's vfs[] say managed")
check(len(rs) > 1 and all(set(x["parameters"]) == {"event"} for x in rs[:-1]), "Init sent progress replies")

# 2, 3: Reconf: success, then a Timeout
rs = p.call("io.svff.Reconf", {"pf": PF, "numvfs": 2}, more=True)
final = rs[-1]
check("error" not in final, "Reconf 4 -> 2: %s" % final)
check("device" not in final["parameters"], "Reconf's reply has no undeclared device")
check(final["parameters"]["numvfs"] == 2 and "steps" in final["parameters"], "Reconf's reply has numvfs and steps")
check(len(rs) > 1, "Reconf sent progress replies")

vf1 = __import__("os").path.basename(__import__("os").readlink("%s/bus/pci/devices/%s/virtfn1" % (SYS, PF)))
pcisim("hold " + vf1)
r = p.call("io.svff.Reconf", {"pf": PF, "numvfs": 3})[-1]
pcisim("release " + vf1)
check(r.get("error") == "io.svff.Timeout", "Reconf with a held VF times out: %s" % r)
check(set(r["parameters"]) == {"device", "message", "assignments", "steps"},
      "Timeout carries device, message, assignments, steps: %s" % sorted(r["parameters"]))
# The write ends for svffd once its write() returns: until then the PF
# is refused as busy, so the completion waits for stuck_writes 0.
for _ in range(400):
    if p.call("io.svff.Status", {})[-1]["parameters"]["stuck_writes"] == 0:
        break
    __import__("time").sleep(0.05)
r = p.call("io.svff.Reconf", {"pf": PF, "numvfs": 3})[-1]
check("error" not in r and r["parameters"]["numvfs"] == 3, "the same Reconf completes it: %s" % r)

# 4: a kernel EINVAL
pcisim("fail %s sriov_numvfs EINVAL 1" % PF)
r = p.call("io.svff.Init", {"pf": PF, "numvfs": 5})[-1]
check(r.get("error") == "io.svff.DeviceRefused" and r["parameters"].get("device") == PF,
      "EINVAL on sriov_numvfs is DeviceRefused on the PF: %s" % r)

# 5: Attach with null live/config gets past the parameters (to the
# hypervisor, which is not there)
r = p.call("io.svff.Attach", {"pf": PF, "domain": "vm1", "live": None, "config": None})[-1]
check(r.get("error") != "org.varlink.service.InvalidParameter" and r.get("error") != "io.svff.InvalidParameter",
      "Attach takes null live and config: %s" % r)

# 6: standard errors, exactly their declared parameters
r = p.call("io.svff.Init", {"pf": PF, "numvfs": "4"})[-1]
check(r == {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": "numvfs"}},
      "a bad parameter is org.varlink.service.InvalidParameter {parameter}: %s" % r)
r = p.call("io.svff.Release", {})[-1]
check(r == {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": "vf"}},
      "a missing parameter too: %s" % r)
# Reconf's and Reprogram's parameters, each malformed in turn: the one
# named is the bad one
for method, params, bad in (
        ("io.svff.Reconf", {"pf": PF}, "numvfs"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": 70000}, "numvfs"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": -1}, "numvfs"),
        ("io.svff.Reconf", {"pf": "00:zz.0", "numvfs": 2}, "pf"),
        ("io.svff.Reconf", {"numvfs": 2}, "pf"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": 2, "mode": "sideways"}, "mode"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": 2, "mode": 1}, "mode"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": 2, "dry_run": "yes"}, "dry_run"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": 2, "force": 1}, "force"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": 2, "cycle": "no"}, "cycle"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": 2, "reprogram": 5}, "reprogram"),
        ("io.svff.Reconf", {"pf": PF, "numvfs": 2, "image": "/x"}, "image"),
        ("io.svff.Reprogram", {"pf": PF}, "image"),
        ("io.svff.Reprogram", {"pf": PF, "image": 7}, "image"),
        ("io.svff.Reprogram", {"pf": PF, "image": "/x", "numvfs": "2"}, "numvfs"),
        ("io.svff.Reprogram", {"pf": PF, "image": "/x", "cycle": True}, "cycle"),
        ("io.svff.Attach", {"pf": PF}, "domain"),
        ("io.svff.Attach", {"pf": PF, "domain": ""}, "domain"),
        ("io.svff.Attach", {"pf": PF, "domain": 5}, "domain"),
        ("io.svff.Attach", {"pf": PF, "domain": "vm1", "live": "yes"}, "live"),
        ("io.svff.Attach", {"pf": PF, "domain": "vm1", "dry_run": 0}, "dry_run"),
        ("io.svff.Attach", {"pf": PF, "domain": "vm1", "guest_address": 5}, "guest_address"),
        ("io.svff.Attach", {"pf": PF, "domain": "vm1", "guest_address": "nowhere"}, "guest_address"),
        ("io.svff.Attach", {"pf": PF, "domain": "vm1", "failover": ""}, "failover"),
        ("io.svff.Attach", {"pf": PF, "domain": "vm1", "failover": "x" * 64}, "failover"),
        ("io.svff.Attach", {"pf": PF, "domain": "vm1", "class": [1]}, "class"),
        ("io.svff.Attach", {"domain": "vm1"}, "vf"),
        ("io.svff.Attach", {"pf": PF, "vf": PF, "domain": "vm1"}, "vf"),
        ("io.svff.Attach", {"vf": "0000:01:zz.1", "domain": "vm1"}, "vf"),
        ("io.svff.Attach", {"pf": PF, "domain": "vm1", "bogus": 1}, "bogus"),
        ("io.svff.List", {"pf": 5}, "pf"),
        ("io.svff.List", {"pf": "01:00.x"}, "pf"),
        ("io.svff.Show", {}, "pf"),
        ("io.svff.Show", {"pf": None}, "pf"),
        ("io.svff.Show", {"pf": "zz"}, "pf"),
        ("io.svff.Init", {"pf": PF, "numvfs": None}, "numvfs"),
        ("io.svff.Init", {"pf": PF, "numvfs": 2, "dry_run": True, "driver": 5}, "driver"),
        ("io.svff.Init", {"pf": PF, "numvfs": 2, "dry_run": True, "bogus": 1}, "bogus")):
    r = p.call(method, params)[-1]
    check(r == {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": bad}},
          "%s %s names '%s': %s" % (method, json.dumps(params), bad, r))
# The method table decodes every method's parameters: each member of
# both served interfaces refuses one it does not take, by its name.
for iface in ("io.svff", "org.varlink.service"):
    desc = p.call("org.varlink.service.GetInterfaceDescription", {"interface": iface})[-1]["parameters"]["description"]
    members = [l.split()[1].split("(")[0] for l in desc.splitlines() if l.startswith("method ")]
    check(len(members) >= (14 if iface == "io.svff" else 2), "the methods of %s: %s" % (iface, members))
    for name in members:
        r = p.call("%s.%s" % (iface, name), {"no_such_parameter": 1})[-1]
        check(r == {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": "no_such_parameter"}},
              "%s.%s refuses a parameter it does not take: %s" % (iface, name, r))
r = p.call("org.varlink.service.GetInterfaceDescription", {})[-1]
check(r == {"error": "org.varlink.service.InvalidParameter", "parameters": {"parameter": "interface"}},
      "GetInterfaceDescription without its interface: %s" % r)
# null for an optional parameter is not giving it
r = p.call("io.svff.Reconf", {"pf": PF, "numvfs": 3, "mode": None, "reprogram": None, "dry_run": True})[-1]
check("error" not in r and r["parameters"].get("dry_run") is True, "Reconf takes null mode and reprogram: %s" % r)
r = p.call("io.svff.List", {"pf": None})[-1]
check("error" not in r and any(x["address"] == PF for x in r["parameters"]["pfs"]), "List takes null pf: %s" % r)
r = p.call("io.svff.List", {"pf": PF.replace("0000:", "")})[-1]
check("error" not in r and [x["address"] for x in r["parameters"]["pfs"]] == [PF],
      "List's pf in short form is the PF: %s" % r)
r = p.call("io.svff.Show", {"pf": PF.replace("0000:", "")})[-1]
check("error" not in r and r["parameters"]["pf"] == PF, "Show answers for the PF in canonical form: %s" % r)
r = p.call("io.svff.Attach", {"vf": None, "pf": PF, "domain": "vm1", "guest_address": None, "failover": None,
                              "class": None})[-1]
check(r.get("error", "").startswith("io.svff."), "Attach takes null vf, guest_address, failover, class: %s" % r)
r = p.call("io.svff.Reprogram", {"pf": PF, "image": "/nonexistent.bit", "numvfs": None, "dry_run": True})[-1]
check(r.get("error", "").startswith("io.svff."), "Reprogram takes null numvfs (then refuses the image): %s" % r)
r = p.call("io.svff.Monitor")[-1]
check(r.get("error") == "org.varlink.service.ExpectedMore" and not r.get("parameters"),
      "ExpectedMore without a message: %s" % r)
r = p.call("io.svff.Ping", None, **{"com.example.tracing": {"id": "42"}})[-1]
check("error" not in r, "a vendor extension object in a call is accepted: %s" % r)
PY

# 6: a refusal, seen by svffd as uid nobody (so not through the proxy)
NOGROUP=$(getent group 65534 | cut -d: -f1)
# A system python: one under root's home is out of nobody's reach.
PY3=/usr/bin/python3
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ -n "$NOGROUP" ] && [ -x "$PY3" ]; then
        chgrp "$NOGROUP" "$SOCK"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$PY3" - "$SOCK" <<'PY' || fail "PermissionDenied"
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b'{"method":"io.svff.Init","parameters":{"pf":"0000:01:00.0","numvfs":1}}\0')
buf = b""
while not buf.endswith(b"\0"):
    buf += s.recv(65536)
r = json.loads(buf[:-1])
if r.get("error") != "org.varlink.service.PermissionDenied" or r.get("parameters", {}) != {}:
    print("FAIL: a refusal is org.varlink.service.PermissionDenied {}:", r, file=sys.stderr)
    sys.exit(1)
print("ok - a refusal is org.varlink.service.PermissionDenied {}")
PY
else
        note "not root (or no setpriv, group 65534 or $PY3): PermissionDenied not checked"
fi

# 2: a StoreError from Reconf carries its path: the journal cannot be
# written on a full state directory (a small tmpfs).
stop_svffd TERM || fail "svffd exited non-zero"
if mkdir -p "$T/small" && mount -t tmpfs -o size=64k tmpfs "$T/small" 2>/dev/null; then
        cp "$STATE/store.json" "$T/small/store.json"
        STATE="$T/small"
        start_svffd
        dd if=/dev/zero of="$T/small/filler" bs=4k 2>/dev/null || true
        varlink_call io.svff.Reconf "{\"pf\": \"$PF\", \"numvfs\": 1}" > "$T/reconf-full.json"
        rm -f "$T/small/filler"
        # Unmounted before the check, so that a failure leaves no mount.
        stop_svffd TERM || fail "svffd exited non-zero"
        umount "$T/small"
        STATE="$T/state"
        python3 - "$T/reconf-full.json" "$T/small/store.json" <<'PY' || fail "StoreError from Reconf"
import json, sys
r = json.load(open(sys.argv[1]))
if r.get("error") != "io.svff.StoreError" or set(r["parameters"]) != {"path", "message"} \
        or r["parameters"]["path"] != sys.argv[2]:
    print("FAIL: Reconf on a full disk is StoreError {path, message}:", r, file=sys.stderr)
    sys.exit(1)
print("ok - Reconf on a full disk is StoreError {path, message}")
PY
else
        note "cannot mount a tmpfs here: Reconf's StoreError not checked"
fi
echo "PASS"
