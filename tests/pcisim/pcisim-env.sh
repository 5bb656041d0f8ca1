# SPDX-License-Identifier: LGPL-2.1-or-later
# Shell counterpart of tests/pcisim-util.h, for shell tests:
#
#   . "$top_srcdir/tests/pcisim/pcisim-env.sh"
#   pcisim_start nic || exit $?      # sets PCISIM_ROOT (the "/sys"); 77: skip
#   echo 2 > "$PCISIM_ROOT/bus/pci/devices/0000:03:00.0/sriov_numvfs"
#   pcisim_ctl hold 0000:03:10.0
#   pcisim_stop                       # also run from an EXIT trap
#
# Needs $PCISIM and $PCISIM_SCENARIOS (set by the Makefile's test environment).

pcisim_start() {
        _scn=$1
        shift
        case $_scn in
        */*) ;;
        *.json) _scn=$PCISIM_SCENARIOS/$_scn ;;
        *) _scn=$PCISIM_SCENARIOS/$_scn.json ;;
        esac
        if [ ! -x "${PCISIM:-}" ]; then
                echo "pcisim: \$PCISIM is not set or not executable: skipping" >&2
                return 77
        fi
        if [ ! -w /dev/fuse ]; then
                echo "pcisim: /dev/fuse is not usable: skipping" >&2
                return 77
        fi
        PCISIM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pcisim-XXXXXX") || return 1
        PCISIM_ROOT=$PCISIM_DIR/sys
        mkdir "$PCISIM_ROOT" || return 1
        "$PCISIM" --scenario "$_scn" --foreground "$@" "$PCISIM_ROOT" &
        PCISIM_PID=$!
        _i=0
        while [ ! -e "$PCISIM_ROOT/.pcisim/stats" ]; do
                if ! kill -0 "$PCISIM_PID" 2>/dev/null; then
                        wait "$PCISIM_PID"
                        _rc=$?
                        rm -rf "$PCISIM_DIR"
                        [ "$_rc" -eq 77 ] && echo "pcisim: cannot mount FUSE: skipping" >&2
                        [ "$_rc" -eq 77 ] && return 77
                        return 1
                fi
                _i=$((_i + 1))
                [ "$_i" -gt 1000 ] && { pcisim_stop; return 1; }
                sleep 0.01
        done
        export PCISIM_ROOT PCISIM_PID PCISIM_DIR
}

pcisim_ctl() {
        # one write(2) per command, as the control file requires
        printf '%s' "$*" > "$PCISIM_ROOT/.pcisim/ctl"
}

pcisim_stop() {
        [ -n "${PCISIM_PID:-}" ] || return 0
        umount "$PCISIM_ROOT" 2>/dev/null || umount -l "$PCISIM_ROOT" 2>/dev/null ||
                fusermount3 -u -z "$PCISIM_ROOT" 2>/dev/null
        _i=0
        while kill -0 "$PCISIM_PID" 2>/dev/null && [ "$_i" -lt 300 ]; do
                sleep 0.01
                _i=$((_i + 1))
        done
        kill -9 "$PCISIM_PID" 2>/dev/null
        wait "$PCISIM_PID" 2>/dev/null
        rmdir "$PCISIM_ROOT" "$PCISIM_DIR" 2>/dev/null
        PCISIM_PID=
}
