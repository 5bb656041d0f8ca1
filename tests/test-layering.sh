#!/bin/sh
# svffd's layering, checked over the '#include "..."' lines of daemon/ and
# src/. Dependencies point one way, down this table (DESIGN.md, "Daemon
# layering"): a module (x.c with x.h) may include its own layer's modules
# and those below, never one above, and no include cycle may exist. Each
# module of daemon/ must have its place here; src/ is libsvff, whose core
# needs nothing of libsvff-hv.
LAYERS='
svffd:          daemon/svffd
method table:   daemon/methods
executors:      daemon/operations daemon/assign daemon/reconfigure daemon/autoinit
real ops:       daemon/reconf-ops
state machines: daemon/reconf-machine
shared state:   daemon/params daemon/journal daemon/busy daemon/reconcile daemon/classes daemon/reconf-guests daemon/plan-deadlines
manager:        daemon/manager
services:       daemon/snapshot daemon/numvfs-watch daemon/registry daemon/monitor daemon/settings daemon/statedir daemon/reconf-journal daemon/metrics daemon/reconf-predict
leaf adapters:  daemon/libvirt daemon/udev daemon/server daemon/worker daemon/log daemon/fault daemon/interface daemon/flash-unit
libsvff-hv:     src/hypervisor src/hv-removals src/qmp
libsvff:        src/*
'
#
# Every violation fails (a cycle, an include pointing up) and every
# module must be in the table. KNOWN lists violations to tolerate while
# a change is under way, each as "FROM -> TO" (modules); they are
# reported but do not fail only with SVFF_LAYERING_STRICT=0. Keep it
# empty.
KNOWN='
'
set -eu
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
strict=${SVFF_LAYERING_STRICT:-1}
[ "${1:-}" = --strict ] && strict=1

cd "$top_srcdir"
# "FILE LINE HEADER" for each quoted include.
incs=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' daemon/*.[ch] src/*.[ch] |
        sed 's/^\([^:]*\):\([0-9]*\):.*"\([^"]*\)".*/\1 \2 \3/')
# Headers that exist, so includes of others (config.h) are left out.
hdrs=$(ls daemon/*.h src/*.h)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/svff-layering.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$LAYERS" | sed '/^$/d' > "$tmp/layers"
rc=0
printf '%s\n==\n%s\n==\n%s\n' "$hdrs" "$KNOWN" "$incs" | awk -v strict="$strict" \
        -v layers="$tmp/layers" '
function mod(path) { sub(/\.[ch]$/, "", path); return path }
function layer_of(m,   d) {
        if (m in layer) return layer[m]
        d = m; sub(/\/.*/, "/*", d)
        return (d in layer) ? layer[d] : -1
}
# reach(a, b): is there an include path from module a to module b? The
# path found is left in via[] (via[x] = the module before x).
function reach(a, b,   q, h, t, x, y, seen, p) {
        delete via
        h = t = 0; q[t++] = a; seen[a] = 1
        while (h < t) {
                x = q[h++]
                for (y in adj) {
                        split(y, p, SUBSEP)
                        if (p[1] != x || (p[2] in seen)) continue
                        seen[p[2]] = 1; via[p[2]] = x; q[t++] = p[2]
                        if (p[2] == b) return 1
                }
        }
        return 0
}
BEGIN {
        n = 0
        while ((getline l < layers) > 0) {
                name = l; sub(/:.*/, "", name); rest = l; sub(/^[^:]*:/, "", rest)
                lname[n] = name
                k = split(rest, ms, /[ \t]+/)
                for (i = 1; i <= k; i++) if (ms[i] != "") layer[ms[i]] = n
                n++
        }
        part = 0
}
$0 == "==" { part++; next }
part == 0 { exists[$1] = 1; next }
part == 1 { if (NF == 3) known[$1 SUBSEP $3] = 1; next }
part == 2 {
        file = $1; hdr = $3; from = mod(file)
        dir = file; sub(/\/[^\/]*$/, "", dir)
        if ((dir "/" hdr) in exists) to = mod(dir "/" hdr)
        else if (("src/" hdr) in exists) to = mod("src/" hdr)
        else next
        mods[from] = 1; mods[to] = 1
        if (from == to) next
        if (!((from SUBSEP to) in adj)) { adj[from, to] = 1; where[from, to] = file ":" $2 }
        nedges++
}
END {
        bad = 0; nknown = 0; nmods = 0
        for (m in mods) {
                nmods++
                if (layer_of(m) >= 0) continue
                # Its cycles are still checked; its order only once placed.
                if (strict == 1) {
                        print "FAIL    " m ": has no layer in the table at the top of tests/test-layering.sh"
                        bad++
                } else
                        print "unplaced " m ": has no layer in the table at the top of tests/test-layering.sh; place it"

        }
        for (e in adj) {
                split(e, p, SUBSEP); from = p[1]; to = p[2]
                lf = layer_of(from); lt = layer_of(to)
                why = ""
                if (lf >= 0 && lt >= 0 && lt < lf)
                        why = "points up (" lname[lf] " -> " lname[lt] ")"
                if (reach(to, from)) {
                        path = from; x = from
                        while (x != to) { x = via[x]; path = x " -> " path }
                        why = why (why == "" ? "" : "; ") "in a cycle: " from " -> " path
                }
                if (why == "") continue
                if ((e in known) && strict != 1) {
                        print "known   " where[e] ": " from " -> " to ": " why
                        nknown++
                } else {
                        print "FAIL    " where[e] ": " from " -> " to ": " why
                        bad++
                }
                seen_bad[e] = 1
        }
        for (e in known) if (!(e in seen_bad)) {
                split(e, p, SUBSEP)
                print "fixed   " p[1] " -> " p[2] ": no longer a violation; remove it from KNOWN"
        }
        printf "# %d modules, %d includes between them; %d new violation(s), %d known (%s)\n",
                nmods, nedges, bad, nknown, strict == 1 ? "strict: every violation fails" : "known ones do not fail"
        exit bad > 0
}' > "$tmp/out" || rc=$?
# The violations by kind (new ones first), the summary last.
grep -v '^#' "$tmp/out" | sort || true
grep '^#' "$tmp/out"
[ "$rc" -eq 0 ] || echo "FAIL: include layering (see tests/test-layering.sh for the layer table)"
exit "$rc"
