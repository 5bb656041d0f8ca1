#!/bin/sh
# Authorisation by SO_PEERCRED: a client under a non-root uid may read
# (List, Status, Show, Monitor, a reconf's plan) but is refused Init,
# Release and every other change with PermissionDenied (exit 4), until
# the config names an admin group it is in, as its primary or a
# supplementary group (applied through SIGHUP).
# Not through the interface validator (daemon-lib.sh): svffd must see
# each svffctl's own uid and groups, which a proxy would replace by its own.
VARLINK_CHECK=no
. "$(dirname "$0")/daemon-lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root to switch uids"
command -v setpriv >/dev/null || skip "setpriv not installed"
NOGROUP=$(getent group 65534 | cut -d: -f1)
[ -n "$NOGROUP" ] || skip "no group 65534"

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$SVFFCTL" --socket "$SOCK" "$@"; }
# uid nobody, primary group daemon (1), supplementary group 65534
as_nobody_supp() { setpriv --reuid=65534 --regid=1 --groups=65534 "$SVFFCTL" --socket "$SOCK" "$@"; }

as_nobody --version >/dev/null 2>&1 || skip "uid 65534 cannot run '$SVFFCTL' (build tree not readable)"

PF=0000:01:00.0
start_pcisim qdma
chmod 0755 "$T"
start_svffd
# What svffd.socket does with SocketGroup=: the group may connect.
chgrp "$NOGROUP" "$SOCK"
expect_eq "$(stat -c %a "$SOCK")" 660 "socket mode"
ctl init $PF 2 >/dev/null || fail "root init"
VF0=$(sys_vf $PF 0)

# Reads are open to anyone who can open the socket.
as_nobody list --json > "$T/list.json" || fail "nobody cannot list"
expect_eq "$(jget 'd["pfs"][0]["numvfs"]' < "$T/list.json")" 2 "numvfs seen by nobody"
as_nobody status >/dev/null || fail "nobody cannot read status"
setpriv --reuid=65534 --regid=65534 --clear-groups "$SVFFCTL" --socket "$SOCK" monitor --json > "$T/mon.out" &
BG_PIDS=$!
wait_for grep -q subscribed "$T/mon.out" || fail "nobody cannot monitor"
kill $BG_PIDS; BG_PIDS=""

# Mutations are refused, with exit 4 and a message saying what is needed.
rc=0; as_nobody init $PF 4 2> "$T/err" || rc=$?
expect_eq "$rc" 4 "init by nobody"
grep -q "root" "$T/err" || fail "PermissionDenied message: $(cat "$T/err")"
rc=0; as_nobody release "$VF0" 2> "$T/err" || rc=$?
expect_eq "$rc" 4 "release by nobody"
# A reprogram names an image path: its dry run is refused too.
for dry in "" --dry-run; do
        rc=0; as_nobody reprogram $PF /var/lib/svff/images/x.bit $dry 2> "$T/err" || rc=$?
        expect_eq "$rc" 4 "reprogram $dry by nobody"
done
# Every other method that changes devices (the method table's flag),
# before its parameters are looked at; Show and Reconf's dry run read.
for cmd in "attach $VF0 vm1" "detach $VF0" "pause $VF0" "unpause $VF0" "reconf $PF 4"; do
        rc=0; as_nobody $cmd 2> "$T/err" || rc=$?
        expect_eq "$rc" 4 "$cmd by nobody"
        grep -q "changes devices" "$T/err" || fail "$cmd by nobody: $(cat "$T/err")"
done
# The peer is checked before the parameters: a malformed Reprogram (it
# used to check them first) and Init from nobody are PermissionDenied.
# (Debian's python3: one the uid can run)
as_nobody_call() {
        VARLINK_CALLER="setpriv --reuid=65534 --regid=65534 --clear-groups env PATH=/usr/bin:/bin" varlink_call "$@"
}
for req in 'io.svff.Reprogram {"pf": 5}' 'io.svff.Init {"pf": "bogus", "numvfs": "x"}'; do
        as_nobody_call "${req%% *}" "${req#* }" > "$T/raw" 2>&1 || fail "$req from nobody: $(cat "$T/raw")"
        expect_eq "$(jget "d['error']" < "$T/raw")" org.varlink.service.PermissionDenied "$req from nobody"
done
as_nobody reconf --dry-run $PF 4 > "$T/plan" 2>&1 || fail "nobody cannot plan a reconf: $(cat "$T/plan")"
as_nobody show $PF > "$T/show" 2>&1 || fail "nobody cannot show $PF: $(cat "$T/show")"
expect_eq "$(sys_numvfs $PF)" 2 "numvfs after a refused init"
expect_eq "$(sys_driver "$VF0")" vfio-pci "driver after a refused release"
grep -q "Refused io.svff.Init for pid [0-9]* uid 65534" "$T/svffd.log" || fail "refusal not logged"

# Admin group by primary gid, applied by SIGHUP.
printf '{ "admin_group": "%s" }\n' "$NOGROUP" > "$T/svff.conf"
kill -HUP "$SVFFD_PID"
wait_for grep -q "Configuration reloaded" "$T/svffd.log" || fail "reload"
as_nobody init $PF 3 >/dev/null || fail "init by a member of the admin group (primary gid)"
expect_eq "$(sys_numvfs $PF)" 3 "numvfs after the admin's init"

# ... and as a supplementary group.
as_nobody_supp release "$VF0" >/dev/null || fail "release by a member of the admin group (supplementary)"
expect_eq "$(sys_driver "$VF0")" qdma-vf "driver after the admin's release (re-probed: svffd made it)"

# Someone outside the socket's group cannot even read, and is told which
# group lets them.
rc=0; setpriv --reuid=65534 --regid=1 --clear-groups "$SVFFCTL" --socket "$SOCK" list 2>"$T/err" || rc=$?
expect_eq "$rc" 4 "list by a non-member of the socket's group"
grep -q "To read, join the socket's group '$NOGROUP' ('usermod -aG $NOGROUP USER'" "$T/err" ||
        fail "non-member's message: $(cat "$T/err")"
rc=0; setpriv --reuid=65534 --regid=1 --clear-groups "$SVFFCTL" --socket "$SOCK" init $PF 1 2>/dev/null || rc=$?
expect_eq "$rc" 4 "init by a non-member of the socket's group"

echo "PASS"
