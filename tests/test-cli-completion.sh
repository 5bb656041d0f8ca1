#!/bin/sh
# svffctl's bash completion, typed into a real terminal: tmux runs bash
# with bash-completion and completion/svffctl, the test sends
# 'svffctl <TAB><TAB>' and PCI address prefixes (colons and all), reads
# the screen with capture-pane and checks what was offered: commands,
# every option of a command, PF and VF addresses from svffd (for each
# command the VFs it can take: free ones to attach, assigned ones to
# detach, attached ones to pause, paused ones to unpause, recorded ones to
# release), and domains after a VF address for attach but not detach.
. "$(dirname "$0")/daemon-lib.sh"

BASH_COMPLETION=/usr/share/bash-completion/bash_completion
command -v tmux >/dev/null || skip "tmux is not installed (scripts/setup-deps installs it)"
command -v bash >/dev/null || skip "bash is not installed"
[ -f "$BASH_COMPLETION" ] || skip "bash-completion is not installed (scripts/setup-deps installs it)"

PF=0000:01:00.0
start_pcisim qdma
start_svffd
ctl init $PF 4 >/dev/null || fail "init"
# VF 0 attached to a running domain, VF 2 paused, VFs 1 and 3 free:
# recorded while svffd is stopped, a stand-in for attach and pause (no
# libvirt here).
stop_svffd TERM || fail "svffd exit status"
python3 - "$STATE/store.json" "$(sys_vf $PF 0)" "$(sys_vf $PF 2)" <<'PY'
import json, sys
path, attached, paused = sys.argv[1:]
d = json.load(open(path))
d["schema"] = 3
for i, (vf, state, mode) in enumerate([(attached, "attached", None), (paused, "paused", "detach")]):
    d["assignments"][vf] = {"uuid": "c7a5fdbd-cdaf-9455-926a-d65c16db180%d" % i, "domain": "vm%d" % (i + 1),
                            "guest_address": "0000:05:00.0", "alias": "ua-svff-%d" % i, "live": True,
                            "config": True, "state": state, "pause_mode": mode}
json.dump(d, open(path, "w"))
PY
start_svffd
# The store is one of schema 3, which spelled VF 2's state "paused":
# svffd reads it as "held".
expect_eq "$(ctl list -o type,state $PF | awk 'NR > 2 { print $2 }' | tr '\n' ' ')" "attached - held - " \
        "the VFs' states the completion is checked against"

# A stand-in for virsh: libvirt's domains are what the completion asks it
# for, and no libvirtd of this test's own can run next to the system's.
mkdir -p "$T/bin"
cat > "$T/bin/virsh" <<'SH'
#!/bin/sh
[ "$*" = "list --all --name" ] && printf 'vm-alpha\nvm-beta\n\n'
SH
chmod +x "$T/bin/virsh"

TMUX_SOCK="$T/tmux.sock"
tm() { tmux -S "$TMUX_SOCK" "$@"; }
cat > "$T/bashrc" <<SH
PS1='\$ '
bind 'set bell-style none'
bind 'set completion-query-items 0'
bind 'set page-completions off'
. $BASH_COMPLETION
. $top_srcdir/completion/svffctl
export PATH="$top_builddir/cli:$T/bin:\$PATH" SVFF_SOCKET="$SOCK"
SH
tm new-session -d -x 200 -y 50 "env -i HOME=$T TERM=screen PATH=$PATH bash --noprofile --rcfile $T/bashrc -i" ||
        skip "tmux cannot start a session here"
tm_cleanup() { tm kill-server 2>/dev/null; cleanup; }
trap tm_cleanup EXIT
wait_for sh -c "tmux -S '$TMUX_SOCK' capture-pane -p | grep -q '^\\$'" || fail "bash did not start in tmux"

screen() { tm capture-pane -p; }
# type KEYS...: clears the line and the screen, then sends the keys.
type_keys() {
        tm send-keys C-u C-l
        sleep 0.3
        tm send-keys "$@"
}
# expect_screen WHAT REGEX: the screen shows REGEX within 10 s.
expect_screen() {
        wait_for sh -c "tmux -S '$TMUX_SOCK' capture-pane -p | grep -qE -- '$2'" ||
                fail "$1: the screen lacks /$2/: $(screen)"
}
reject_screen() {
        sleep 1
        screen | grep -qE -- "$2" && fail "$1: the screen shows /$2/: $(screen)"
        return 0
}

note "svffctl <TAB><TAB>: the commands"
type_keys "svffctl " Tab Tab
for c in list status init reconf reprogram release monitor attach detach pause unpause config; do
        expect_screen "command $c" "(^| )$c( |$)"
done

note "a VF address prefix with colons completes to the VFs"
type_keys "svffctl release 0000:01:00." Tab Tab
# bash lists them without the part before the last colon, which is on
# the command line already (what __ltrim_colon_completions is for).
for i in 0 1 2 3; do
        vf=$(sys_vf $PF $i)
        expect_screen "VF $i" "(^| )${vf#0000:01:}( |\$)"
done
reject_screen "the PF is not a VF" "(^| )00\.0( |\$)"
type_keys "svffctl init 0000:01:0" Tab
expect_screen "the PF address completes past both colons" '^\$ svffctl init 0000:01:00\.0$'

note "each command offers the VFs it can take"
# expect_vfs COMMAND INDEXES...: 'svffctl COMMAND <prefix>' offers exactly
# those VFs of the PF.
expect_vfs() {
        _c=$1; shift
        type_keys "svffctl $_c 0000:01:00." Tab Tab
        for _i in 0 1 2 3; do
                _vf=$(sys_vf $PF $_i)
                case " $* " in
                # (one alone is completed on the command line itself)
                *" $_i "*) expect_screen "$_c offers VF $_i" "(^| |:01:)${_vf#0000:01:}( |\$)" ;;
                *) reject_screen "$_c does not offer VF $_i" "(^| |:01:)${_vf#0000:01:}( |\$)" ;;
                esac
        done
}
expect_vfs attach 1 3
expect_vfs detach 0 2
expect_vfs pause 0
expect_vfs unpause 2
expect_vfs release 0 1 2 3

note "domains after a VF address for attach, not for detach"
type_keys "svffctl attach $(sys_vf $PF 1) vm-" Tab Tab
expect_screen "domain vm-alpha" "vm-alpha"
expect_screen "domain vm-beta" "vm-beta"
type_keys "svffctl attach --pf $PF vm-a" Tab
expect_screen "a domain after --pf PF" '^\$ svffctl attach --pf 0000:01:00\.0 vm-alpha$'
type_keys "svffctl detach $(sys_vf $PF 1) " Tab Tab
reject_screen "detach takes no domain" "vm-alpha"

note "every option of every command (a third Tab: the first may only extend - to --)"
for spec in "list:--output -o --timeout --json --socket --help" \
            "status:--timeout --verbose --json" \
            "init:--driver --timeout --json" \
            "reconf:--mode --dry-run --force --cycle --timeout --reprogram" \
            "reprogram:--numvfs --mode --dry-run --force --timeout" \
            "release:--timeout --force --dry-run --json" \
            "monitor:--no-reconnect --json" \
            "attach:--pf --live --config --guest-address --timeout --dry-run" \
            "detach:--timeout --release --dry-run" "pause:--timeout --dry-run" "unpause:--timeout --dry-run" \
            "config:--json --effective --dry-run --timeout"; do
        c=${spec%%:*}
        type_keys "svffctl $c -" Tab Tab Tab
        for o in ${spec#*:}; do
                expect_screen "$c offers $o" "(^| )$o( |$)"
        done
done
# And what a command's --help names, the completion offers.
for c in list status init reconf reprogram release attach detach pause unpause monitor; do
        type_keys "svffctl $c -" Tab Tab Tab
        expect_screen "$c offers --json" "(^| )--json( |\$)"
        for o in $(ctl $c --help | sed -n '/^Options:/,/^$/p' | grep -o -- '--[a-z-]*' | sort -u); do
                screen | grep -qE -- "(^| )$o( |$)" || fail "$c --help names $o, the completion does not offer it: $(screen)"
        done
done

note "config: its two subcommands"
type_keys "svffctl config " Tab Tab
expect_screen "config check" "(^| )check( |\$)"
expect_screen "config reload" "(^| )reload( |\$)"

note "-o completes column names, after a comma and a '+' too"
type_keys "svffctl list -o device,gue" Tab
expect_screen "-o column after a comma" '^\$ svffctl list -o device,guest'
type_keys "svffctl list -o +own" Tab
expect_screen "-o column after a '+'" '^\$ svffctl list -o \+owner'
type_keys "svffctl list -o +owner,ifa" Tab
expect_screen "-o +COL, then a column after a comma" '^\$ svffctl list -o \+owner,iface'
echo "PASS"
