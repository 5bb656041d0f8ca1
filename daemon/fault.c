/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "log.h"

#ifdef SVFF_FAULT_POINTS
static void (*stop_fn)(void *userdata);
static void *stop_userdata;

void fault_set_stop(void (*fn)(void *userdata), void *userdata) {
        stop_fn = fn;
        stop_userdata = userdata;
}

static bool matches(const char *name, unsigned n) {
        const char *want = getenv("SVFF_FAULT");
        char buf[128];

        if (!want || !*want)
                return false;
        if (n == 0)
                return streq(want, name);
        snprintf(buf, sizeof(buf), "%s-%u", name, n);
        return streq(want, buf);
}

void fault_point(const char *name, unsigned n) {
        const char *action = getenv("SVFF_FAULT_ACTION");

        if (!matches(name, n))
                return;
        if (action && streq(action, "term")) {
                /* A stop request arriving exactly here; svffd goes on. On
                 * the main thread the stop is asked for at once, as the
                 * signal handler would on the next loop iteration; on a
                 * worker the SIGTERM goes to the process (the main loop's
                 * signalfd) and the worker waits for it to be handled
                 * before it reports its result. */
                fprintf(stderr, "svffd: fault point '%s' (%u) reached, sending SIGTERM.\n", name, n);
                if (stop_fn && gettid() == getpid())
                        stop_fn(stop_userdata);
                else {
                        (void) kill(getpid(), SIGTERM);
                        (void) usleep(300 * 1000);
                }
                return;
        }
        /* stderr is unbuffered: the test sees where svffd died. */
        fprintf(stderr, "svffd: fault point '%s' (%u) reached, %s.\n", name, n,
                action && streq(action, "abort") ? "aborting" : "killing svffd");
        if (action && streq(action, "abort"))
                abort();
        raise(SIGKILL);
}

bool fault_inject(const char *name, unsigned n) {
        if (!matches(name, n))
                return false;
        log_warning("Fault injection: '%s' (%u) fails as asked by SVFF_FAULT.", name, n);
        return true;
}
#endif
