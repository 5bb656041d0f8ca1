#!/bin/sh
# Every refusal svffd sends carries its reason, read from the sources:
#   - org.varlink.service.InvalidParameter (which declares no message) is
#     only for a malformed parameter: its sites in daemon/ name the
#     parameter, and their text speaks of it, not of a device or domain
#     (a PF, a VF or a domain in some state is a refusal of a well-formed
#     request: an io.svff error);
#   - a job (an attach, detach, pause, unpause) has checked its parameters
#     before it runs, so it never fails with InvalidParameter;
#   - every io.svff error the interface declares has a message, and every
#     io.svff error daemon/ names is declared.
set -eu
src=${top_srcdir:-$(dirname "$0")/..}
python3 - "$src" <<'PY'
import glob, re, sys

src = sys.argv[1]
bad = []

def statements(text, start):
    """The C statement (call) starting at start, to its closing ';'."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == '\\' else 1
        elif c == '(':
            depth += 1
        elif c == ')':
            depth -= 1
        elif c == ';' and depth == 0:
            return text[start:i]
        i += 1
    return text[start:]

def enclosing_call(text, pos):
    """The name of the call whose argument list holds pos, and where it starts."""
    depth, i = 0, pos
    while i > 0:
        i -= 1
        c = text[i]
        if c == ')':
            depth += 1
        elif c == '(':
            if depth == 0:
                m = re.search(r"(\w+)\s*$", text[:i])
                return (m.group(1), m.start(1)) if m else ("", i)
            depth -= 1
    return ("", 0)

names_device = re.compile(r"\b(PF|VF|[Dd]omain) '?%")
sites = 0
for path in sorted(glob.glob(src + "/daemon/*.c")):
    text = open(path).read()
    for m in re.finditer(r"SVFF_ERROR_INVALID_PARAMETER", text):
        fn, start = enclosing_call(text, m.start())
        line = text.count("\n", 0, m.start()) + 1
        where = "%s:%d" % (path[len(src) + 1:], line)
        if fn in ("params_check_known", "params_decode", "streq"):
            continue        # the generic checks in params.c; reply_job_error's mapping
        sites += 1
        stmt = statements(text, start)
        literal = " ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', stmt))
        if fn in ("fail", "job_errorf"):
            bad.append("%s: a job fails with InvalidParameter (a state refusal: use an io.svff error)" % where)
        elif fn == "call_errorf":
            if '"parameter"' not in stmt:
                bad.append("%s: InvalidParameter that names no parameter" % where)
            if names_device.search(literal):
                bad.append("%s: InvalidParameter about a device or domain (a state refusal: use an io.svff "
                           "error with a message): %s" % (where, literal[:100]))
        else:
            bad.append("%s: InvalidParameter from %s(): check that it is a malformed parameter" % (where, fn))
if sites < 10:
    bad.append("only %d InvalidParameter sites found: the scan is broken" % sites)

# The io.svff interface text: its errors and their fields.
itext = open(src + "/daemon/interface.c").read()
body = itext.split("svff_interface_description[] =", 1)[1].split(";\n", 1)[0]
desc = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body)).replace("\\n", "\n")
errors = dict(re.findall(r"^error (\w+) \(([^)]*)\)", desc, re.M))
if len(errors) < 20:
    bad.append("only %d io.svff errors found in the interface text: the scan is broken" % len(errors))
for name, fields in sorted(errors.items()):
    if not re.search(r"\bmessage: string\b", fields):
        bad.append("io.svff.%s declares no message" % name)
used = set()
for path in glob.glob(src + "/daemon/*.[ch]"):
    used |= set(re.findall(r'#define SVFF_ERROR_\w+ "io\.svff\.(\w+)"', open(path).read()))
for name in sorted(used - set(errors)):
    bad.append("io.svff.%s is used in daemon/ but not declared in the interface" % name)

for b in bad:
    print("FAIL: " + b)
if bad:
    sys.exit(1)
print("%d InvalidParameter sites, %d io.svff errors checked" % (sites, len(errors)))
PY
echo "PASS"
