#!/bin/sh
# What 'make install' puts on a host: installed into a DESTDIR, the units
# pass 'systemd-analyze verify' (offline, ExecStart pointing at the
# installed svffd), the sysusers and tmpfiles entries apply to that root,
# the man pages render without warnings, and the installed daemon serves
# through systemd-socket-activate with the socket name and fd name read
# from the installed svffd.socket. Bash completion offers commands and
# the PFs the daemon sees.
. "$(dirname "$0")/daemon-lib.sh"

command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed"
DEST="$T/dest"
# A make of our own, not the one running the tests.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$top_builddir" install DESTDIR="$DEST" \
        > "$T/install.log" 2>&1 || fail "make install: $(tail -n 20 "$T/install.log")"

find_one() {
        f=$(find "$DEST" -path "*$1" | head -n 1)
        [ -n "$f" ] || fail "'$1' not installed: $(cd "$DEST" && find . -type f)"
        echo "$f"
}
SERVICE=$(find_one /systemd/system/svffd.service)
SOCKET=$(find_one /systemd/system/svffd.socket)
RULES=$(find_one /rules.d/70-svff.rules)
SYSUSERS=$(find_one /sysusers.d/svff.conf)
TMPFILES=$(find_one /tmpfiles.d/svff.conf)
COMPLETION=$(find_one /completions/svffctl)
find_one /svff/svff.conf.example > /dev/null
grep -q 'ENV{SYSTEMD_WANTS}+="svffd.service"' "$RULES" || fail "udev rule does not start svffd"

# ExecStart names the installed binary.
EXEC=$(sed -n 's/^ExecStart=//p' "$SERVICE")
case $EXEC in /*) ;; *) fail "ExecStart '$EXEC' is not an absolute path" ;; esac
grep -q '@[a-z_]*@' "$SERVICE" && fail "unsubstituted variable in $SERVICE"
[ -x "$DEST$EXEC" ] || fail "ExecStart '$EXEC' not installed under DESTDIR"
"$DEST$EXEC" --version | grep -q svffd || fail "installed svffd does not run"

# verify: the service as installed, its ExecStart moved into DESTDIR.
mkdir "$T/verify"
sed "s|^ExecStart=|ExecStart=$DEST|" "$SERVICE" > "$T/verify/svffd.service"
cp "$SOCKET" "$T/verify/svffd.socket"
MANDIR=$(dirname "$(dirname "$(find_one /man8/svffd.8)")")
(cd "$T/verify" && MANPATH="$MANDIR" systemd-analyze verify svffd.socket svffd.service) \
        > "$T/verify.log" 2>&1 || fail "systemd-analyze verify: $(cat "$T/verify.log")"
[ -s "$T/verify.log" ] && fail "systemd-analyze verify complains: $(cat "$T/verify.log")"

# The sandbox lets every device class work (the VM tier's 11-as-shipped
# runs them under it) and no more: the NIC class's RTM_SETLINK needs
# CAP_NET_ADMIN, the NVMe class's admin queue /dev/nvmeN, which
# PrivateDevices=yes would hide.
setting() { sed -n "s/^$1=//p" "$SERVICE" | tail -n 1; }
expect_eq "$(setting CapabilityBoundingSet)" "CAP_SYS_ADMIN CAP_NET_ADMIN" "CapabilityBoundingSet"
expect_eq "$(setting DevicePolicy)" closed "DevicePolicy"
expect_eq "$(setting DeviceAllow)" "char-nvme rw" "DeviceAllow"
expect_eq "$(setting PrivateDevices)" "" "PrivateDevices (it hides /dev/nvmeN)"
# systemd's stop timeout outlasts svffd's own stop deadline (80 s), in
# which running operations reach a journaled safe point.
STOP=$(setting TimeoutStopSec)
case $STOP in
[0-9]*s) [ "${STOP%s}" -gt 80 ] || fail "TimeoutStopSec=$STOP is not beyond svffd's 80 s stop deadline" ;;
*) fail "TimeoutStopSec='$STOP': set it, in seconds, beyond svffd's 80 s stop deadline" ;;
esac
# The exposure score of the installed service, as an operator sees it.
if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
        (cd "$T/verify" && systemd-analyze security --offline=true svffd.service) > "$T/security.log" 2>&1 || true
        SCORE=$(sed -n 's/.*Overall exposure level for svffd.service: \([0-9.]*\).*/\1/p' "$T/security.log")
        [ -n "$SCORE" ] || fail "systemd-analyze security printed no score: $(tail -n 5 "$T/security.log")"
        echo "systemd-analyze security svffd.service: $SCORE"
        awk -v s="$SCORE" 'BEGIN { exit !(s <= 2.5) }' ||
                fail "svffd.service's exposure is $SCORE, above 2.5: $(grep '✗' "$T/security.log")"
fi

# sysusers and tmpfiles, applied to the DESTDIR root.
if command -v systemd-sysusers >/dev/null; then
        mkdir -p "$DEST/etc"
        : > "$DEST/etc/passwd"; : > "$DEST/etc/group"
        systemd-sysusers --root="$DEST" "$SYSUSERS" > "$T/sysusers.log" 2>&1 ||
                fail "systemd-sysusers: $(cat "$T/sysusers.log")"
        grep -q '^svff:' "$DEST/etc/group" || fail "no svff group: $(cat "$DEST/etc/group")"
fi
if command -v systemd-tmpfiles >/dev/null; then
        systemd-tmpfiles --root="$DEST" --create "$TMPFILES" > "$T/tmpfiles.log" 2>&1 ||
                fail "systemd-tmpfiles: $(cat "$T/tmpfiles.log")"
        [ -d "$DEST/etc/svff/svff.conf.d" ] || fail "tmpfiles did not create the drop-in directory"
fi

# Man pages render without a warning.
if command -v man >/dev/null; then
        for page in $(find "$DEST" -name 'svff*.[58]'); do
                MANWIDTH=80 man --warnings -l "$page" > "$T/man.out" 2> "$T/man.err" ||
                        fail "man $page: $(cat "$T/man.err")"
                [ -s "$T/man.err" ] && fail "man $page warns: $(cat "$T/man.err")"
                grep -q SYNOPSIS "$T/man.out" || fail "man $page rendered nothing useful"
        done
fi

# Socket activation of the installed daemon, as the installed socket says.
command -v systemd-socket-activate >/dev/null || skip "systemd-socket-activate not installed"
LISTEN=$(sed -n 's/^ListenStream=//p' "$SOCKET")
FDNAME=$(sed -n 's/^FileDescriptorName=//p' "$SOCKET")
expect_eq "$LISTEN" /run/svff/svffd.sock "ListenStream (svffd's and svffctl's default)"
expect_eq "$FDNAME" varlink "FileDescriptorName"
# The same path, under the test's directory rather than the host's /run.
SOCK="$T$LISTEN"
mkdir -p "$(dirname "$SOCK")" "$STATE"
start_pcisim qdma
# shellcheck disable=SC2046
systemd-socket-activate -l "$SOCK" --fdname="$FDNAME" $(sanitizer_env) \
        "$DEST$EXEC" --sysfs-root "$SYS" --state-dir "$STATE" --config /dev/null \
        --log-level debug >> "$T/svffd.log" 2>&1 &
SVFFD_PID=$!
wait_for test -S "$SOCK" || fail "systemd-socket-activate did not listen on $SOCK"
"$(find_one /bin/svffctl)" --socket "$SOCK" list --json > "$T/list.json" ||
        fail "list through the activated socket"
expect_eq "$(jget 'd["pfs"][0]["address"]' < "$T/list.json")" 0000:01:00.0 "PF through the activated socket"
grep -q "Using 1 socket(s) passed by systemd" "$T/svffd.log" || fail "svffd did not use the passed socket"

# Completion: commands, then the PFs svffd reports.
BC=/usr/share/bash-completion/bash_completion
if [ ! -r "$BC" ]; then
        # Without the bash-completion package: the two helpers it uses.
        BC="$T/bash_completion"
        cat > "$BC" <<'SH'
_init_completion() { words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; cur=${words[cword]}; prev=${words[cword-1]}; }
_filedir() { :; }
SH
fi
if command -v bash >/dev/null; then
        bash -n "$COMPLETION" || fail "completion script syntax"
        comp() {
                SVFF_SOCKET="$SOCK" PATH="$(dirname "$SVFFCTL"):$PATH" bash -c '
                        . "$1"; . "$2"; shift 2
                        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
                        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
                        _svffctl svffctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                        printf "%s\n" "${COMPREPLY[@]}"' bash "$BC" "$COMPLETION" "$@"
        }
        comp svffctl "" | grep -qx init || fail "completion lacks commands: $(comp svffctl '')"
        comp svffctl in | grep -qx init || fail "completion of 'in'"
        comp svffctl init "" | grep -qx 0000:01:00.0 || fail "completion lacks PFs: $(comp svffctl init '')"
        comp svffctl config "" | grep -qx check || fail "completion of config"
fi
echo "PASS"
