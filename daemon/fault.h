/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Fault points for crash-safety tests, compiled only into test builds
 * (--enable-fault-points defines SVFF_FAULT_POINTS).
 *
 * SVFF_FAULT=<name> (e.g. "after-journal", or "after-detach-2" for the
 * second occurrence of "after-detach") makes svffd kill itself with
 * SIGKILL when it reaches that point, or abort() with
 * SVFF_FAULT_ACTION=abort: no cleanup, no flush, as a crash would.
 * SVFF_FAULT_ACTION=term sends svffd a SIGTERM there instead and goes
 * on: a stop request arriving at exactly that step.
 * fault_inject() is the other kind: the named step fails instead
 * ("fail-reattach-1"), for failures no real peer here can produce. */

#include <stdbool.h>

#ifdef SVFF_FAULT_POINTS
/* n: the occurrence (1-based), 0 for points that happen once. */
void fault_point(const char *name, unsigned n);
bool fault_inject(const char *name, unsigned n);
/* What SVFF_FAULT_ACTION=term calls on the main thread: the stop svffd
 * does on SIGTERM. */
void fault_set_stop(void (*fn)(void *userdata), void *userdata);
#else
static inline void fault_set_stop(void (*fn)(void *userdata), void *userdata) {
        (void) fn;
        (void) userdata;
}
static inline void fault_point(const char *name, unsigned n) {
        (void) name;
        (void) n;
}
static inline bool fault_inject(const char *name, unsigned n) {
        (void) name;
        (void) n;
        return false;
}
#endif
