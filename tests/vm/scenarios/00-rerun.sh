# The harness itself: a scenario whose nested guest's kernel panicked is
# run again, up to twice, each time from a run directory holding only
# the harness's files; what a try wrote (files it appends to included)
# is set aside in attempt-N/. The panics are stand-ins: this scenario
# boots no nested guest, and its first two tries write what
# tests/vm/guest-lib.sh leaves when one dies (guest-panicked, a console
# with the kernel's panic).

R=$SVFF_VM_RUNDIR
# panic TRY: try TRY appends to a file and "dies".
panic() {
        echo "try $1" >>"$R/tries"
        echo "Kernel panic - not syncing: a stand-in for a nested guest's panic" >"$R/guest-console.log"
        : >"$R/guest-panicked"
        vm_log "try $1: a stand-in for a nested guest's panic, and a file appended to"
        exit 1
}
[ -e "$R/guest-console.panicked.log" ] || panic 1
assert_eq "a try after a panic: what the one before appended to" "" "$(cat "$R/tries" 2>/dev/null)"
assert_true "the first try's panic says why it ran again" grep -q "stand-in" "$R/guest-console.panicked.log"
assert_eq "the first try's file, set aside" "try 1" "$(cat "$R/attempt-1/tries")"
[ -e "$R/guest-console.panicked-2.log" ] || panic 2
assert_eq "the second try's file, set aside" "try 2" "$(cat "$R/attempt-2/tries")"
