/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hv-removals.h"
#include "macro.h"

struct removal {
        uint64_t seq;
        char uuid[SVFF_UUID_STRLEN];
        char alias[SVFF_ALIAS_MAX];
};

struct svff_hv_removals {
        pthread_mutex_t lock;
        pthread_cond_t cond;            /* on CLOCK_MONOTONIC */
        uint64_t seq;                   /* removals noted so far */
        struct removal ring[SVFF_HV_REMOVALS_KEPT];
};

int svff_hv_removals_new(struct svff_hv_removals **ret) {
        struct svff_hv_removals *r = calloc(1, sizeof(*r));
        pthread_condattr_t a;

        if (!r)
                return -ENOMEM;
        if (pthread_condattr_init(&a) != 0) {
                free(r);
                return -ENOMEM;
        }
        (void) pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&r->cond, &a);
        pthread_condattr_destroy(&a);
        pthread_mutex_init(&r->lock, NULL);
        *ret = r;
        return 0;
}

struct svff_hv_removals *svff_hv_removals_free(struct svff_hv_removals *r) {
        if (!r)
                return NULL;
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
}

void svff_hv_removals_note(struct svff_hv_removals *r, const char *uuid, const char *alias) {
        struct removal *e;

        pthread_mutex_lock(&r->lock);
        r->seq++;
        e = &r->ring[r->seq % SVFF_HV_REMOVALS_KEPT];
        e->seq = r->seq;
        snprintf(e->uuid, sizeof(e->uuid), "%s", uuid);
        snprintf(e->alias, sizeof(e->alias), "%s", alias);
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
}

uint64_t svff_hv_removals_seq(struct svff_hv_removals *r) {
        uint64_t s;

        pthread_mutex_lock(&r->lock);
        s = r->seq;
        pthread_mutex_unlock(&r->lock);
        return s;
}

/* Under lock: 1 when a removal of (uuid, alias) after *seq is kept,
 * -ESTALE when some after *seq are no longer kept, else 0. Moves *seq
 * to r->seq. */
static int seen(struct svff_hv_removals *r, const char *uuid, const char *alias, uint64_t *seq) {
        int found = r->seq - *seq > SVFF_HV_REMOVALS_KEPT ? -ESTALE : 0;

        for (uint64_t s = *seq + 1; found == 0 && s <= r->seq; s++) {
                const struct removal *e = &r->ring[s % SVFF_HV_REMOVALS_KEPT];

                found = streq(e->alias, alias) && streq(e->uuid, uuid);
        }
        *seq = r->seq;
        return found;
}

int svff_hv_removals_wait(struct svff_hv_removals *r, const char *uuid, const char *alias, uint64_t *seq,
                          usec_t deadline) {
        struct timespec ts = {
                .tv_sec = (time_t) (deadline / USEC_PER_SEC),
                .tv_nsec = (long) (deadline % USEC_PER_SEC) * 1000,
        };
        int found;

        pthread_mutex_lock(&r->lock);
        while ((found = seen(r, uuid, alias, seq)) == 0)
                if (pthread_cond_timedwait(&r->cond, &r->lock, &ts) == ETIMEDOUT) {
                        found = seen(r, uuid, alias, seq);
                        break;
                }
        pthread_mutex_unlock(&r->lock);
        return found;
}
