# Live reconf: with 4 VFs assigned to 4 running domains, 'reconf PF 2' is
# refused without --force; 'reconf PF 4 --cycle' goes through 0 and keeps every
# assignment at the same guest address (query-pci in every domain); a
# guest that holds its VF past the deadline is reported, not hidden.
#
# Skips until svffctl has 'reconf'. 'tests/vm/run ... 03-live-reconf.sh
# setup-only' runs the part before it (domains and assignments) anyway.

if ! vm_have_reconf && [ "${1:-}" != setup-only ]; then
        vm_skip "reconf is not in this build ('svffctl reconf --help' fails)"
fi

vm_hold=1
vm_assigned_setup 4 "{ \"detach_timeout_sec\": 3, \"reconf_detach_timeout_sec\": 3,
  \"metrics_textfile\": \"$SVFF_VM_RUNDIR/svff.prom\" }"
before=$(vm_places)
echo "$before"
! echo "$before" | grep -q ' $' || vm_fail "a VF is missing from its domain's query-pci"
[ "${1:-}" != setup-only ] || vm_skip "setup only"

vm_log "reconf $pf 2 without --force"
rc=0
svffctl reconf "$pf" 2 >"$SVFF_VM_RUNDIR/reconf2.out" 2>&1 || rc=$?
cat "$SVFF_VM_RUNDIR/reconf2.out"
assert_eq "reconf PF 2 with 4 assigned, no --force: exit status" 1 "$rc"
assert_true "the refusal names --force" grep -q -- --force "$SVFF_VM_RUNDIR/reconf2.out"
assert_eq "numvfs after the refusal" 4 "$(cat "$P/sriov_numvfs")"
vm_check_kept "refused reconf"

# A VF that is created anew has d3cold_allowed back at 1: the mark shows
# that reconf really went through 0.
for v in $vfs; do echo 0 >"/sys/bus/pci/devices/$v/d3cold_allowed"; done
vm_log "reconf $pf 4"
t=$(vm_now)
svffctl reconf "$pf" 4 --cycle || vm_fail "svffctl reconf $pf 4 failed"
vm_log "reconf took $(echo "$t $(vm_now)" | awk '{ printf "%.2f", $2 - $1 }') s"
assert_eq "numvfs after reconf" 4 "$(cat "$P/sriov_numvfs")"
for v in $vfs; do
        assert_eq "VF $v re-created (d3cold_allowed reset)" 1 "$(cat "/sys/bus/pci/devices/$v/d3cold_allowed")"
done
vm_check_kept "reconf 4"
# Each running domain's time without its VF, in the metrics file (written
# at most once a second).
downtime_count() { sed -n 's/^svff_domain_device_downtime_seconds_count //p' "$SVFF_VM_RUNDIR/svff.prom" 2>/dev/null; }
for _ in 1 2 3 4 5 6; do [ "$(downtime_count)" = 4 ] && break; sleep 1; done
assert_eq "svff_domain_device_downtime_seconds_count after one reconf of 4 running domains" 4 "$(downtime_count)"
vm_log "device downtime through the reconf: $(sed -n 's/^svff_domain_device_downtime_seconds_sum //p' "$SVFF_VM_RUNDIR/svff.prom") s summed over 4 domains"

# A guest that holds its VF: move the last one to 'hold' (ACPI hotplug,
# no OS to answer the unplug).
set -- $vfs
held=$4
svffctl detach "$held" >/dev/null || vm_fail "svffctl detach $held failed"
svffctl attach "$held" hold >/dev/null || vm_fail "svffctl attach $held hold failed"
vm_log "reconf $pf 4 with $held held by 'hold'"
rc=0
svffctl reconf "$pf" 4 --cycle >"$SVFF_VM_RUNDIR/reconf-held.out" 2>&1 || rc=$?
cat "$SVFF_VM_RUNDIR/reconf-held.out"
assert_true "reconf with a held VF fails" test "$rc" -ne 0
assert_true "the failure names the held VF" grep -q "$held" "$SVFF_VM_RUNDIR/reconf-held.out"
assert_true "the failure says the guest has not released it" \
        grep -q "not released" "$SVFF_VM_RUNDIR/reconf-held.out"
# what svff did about it, and the next step, naming the domain
assert_true "the failure names the domain that did not answer the unplug" \
        grep -q "Domain 'hold' did not let VF $held go within [0-9]* s (reconf_detach_timeout_sec): its guest did not answer the unplug" \
        "$SVFF_VM_RUNDIR/reconf-held.out"
assert_true "the failure says the VF count was not changed, and what to run once 'hold' lets go" \
        grep -q "The VF count was not changed. Once the domain lets the VF go, or is shut down, run 'svffctl reconf $pf 4 --cycle' again." \
        "$SVFF_VM_RUNDIR/reconf-held.out"
# numvfs 0 would block until 'hold' let go: it must not have been written.
assert_eq "numvfs with a held VF" 4 "$(cat "$P/sriov_numvfs")"
assert_true "the held VF is still in hold's query-pci" test -n "$(vm_qpci hold "$held")"
set -- $doms
for v in $vfs; do
        [ "$v" != "$held" ] || break
        assert_eq "the others: VF $v still in $1" "$(echo "$before" | grep "^$v ")" "$v $1 $(vm_qpci_wait "$1" "$v")"
        shift
done
