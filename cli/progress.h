/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Progress of a long operation (init, reconf) from svffd's events.
 *
 * On a terminal (stderr): one line redrawn in place, with the phase, the
 * counts, a bar, the elapsed time and an ETA; it moves between events
 * too (progress_tick), so a 30 s numvfs write does not look frozen.
 * Otherwise: one line on stderr when a phase begins, and one per failure.
 * With --json: every event as one JSON object per line on stdout. */

#include <stdbool.h>
#include <json-c/json.h>

#include "sysfs.h"

enum progress_kind {
        PROGRESS_TERMINAL,
        PROGRESS_LINES,
        PROGRESS_JSON,
};

struct progress {
        enum progress_kind kind;
        const char *op;         /* "init", "reconf"; borrowed */
        const char *pf;         /* borrowed */
        char phase[32];
        char action[96];        /* the last step, e.g. "pause vm1" */
        const char *unit;       /* "VF" or "step", "s" added after a total other than 1 */
        long long done, total;
        /* where the counts restarted from zero: what the ETA is based on */
        usec_t started, series_started;
        long long series_done;
        unsigned width;
        unsigned spin;
        bool drawn;
};

/* kind from --json and whether stderr is a terminal. */
void progress_init(struct progress *p, const char *op, const char *pf);
/* One Event object from svffd (borrowed). */
void progress_event(struct progress *p, struct json_object *ev);
/* Time passed without an event: redraw on a terminal. */
void progress_tick(struct progress *p);
/* Erases the terminal line, before other output or at the end. */
void progress_clear(struct progress *p);
