# The harness itself: a scenario whose nested guest's kernel panicked is
# run once more, from a run directory holding only the harness's files;
# what its first try wrote (files it appends to included) is set aside
# in attempt-1/. The panic is a stand-in: this scenario boots no nested
# guest, and its first try writes what tests/vm/guest-lib.sh leaves when
# one dies (guest-panicked, a console with the kernel's panic).

R=$SVFF_VM_RUNDIR
if [ ! -e "$R/guest-console.panicked.log" ]; then
        echo "first try" >>"$R/tries"
        echo "Kernel panic - not syncing: a stand-in for a nested guest's panic" >"$R/guest-console.log"
        : >"$R/guest-panicked"
        vm_log "first try: a stand-in for a nested guest's panic, and a file appended to"
        exit 1
fi
assert_eq "the second try: what the first appended to" "" "$(cat "$R/tries" 2>/dev/null)"
assert_eq "the first try's file, set aside" "first try" "$(cat "$R/attempt-1/tries")"
assert_true "the first try's panic says why it ran twice" grep -q "stand-in" "$R/guest-console.panicked.log"
