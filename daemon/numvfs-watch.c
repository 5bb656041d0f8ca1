/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "numvfs-watch.h"
#include "pciaddr.h"
#include "sysfs.h"

#define NUMVFS_WATCH_USEC (500 * USEC_PER_MSEC)

struct numvfs_count;

struct numvfs_watch {
        sd_event_source *timer;
        struct worker_pool *pool;
        struct svff_ctx *ctx;
        char pf[SVFF_PCI_ADDR_STRLEN];
        numvfs_watch_fn fn;
        void *userdata;
        struct numvfs_count *counting;  /* the count in flight, or NULL */
        long seen;                      /* the last count told; -1 none */
};

/* One listing of the PF's directory. watch is NULL once it is gone. */
struct numvfs_count {
        struct numvfs_watch *watch;
        struct worker_pool *pool;
        struct svff_ctx *ctx;
        char pf[SVFF_PCI_ADDR_STRLEN];
        int r;
        long n;
};

static void count_free(struct numvfs_count *c) {
        svff_ctx_unref(c->ctx);
        free(c);
}

static void count_done(void *userdata) {
        struct numvfs_count *c = userdata;
        struct numvfs_watch *w = c->watch;

        if (w) {
                w->counting = NULL;
                if (c->r >= 0 && c->n != w->seen) {
                        w->seen = c->n;
                        w->fn(w->userdata, (unsigned) c->n);
                }
        }
        count_free(c);
}

static void count_run(void *userdata) {
        struct numvfs_count *c = userdata;
        _cleanup_strv_free_ char **names = NULL;
        char path[64];

        snprintf(path, sizeof(path), "bus/pci/devices/%s", c->pf);
        c->r = svff_sysfs_list_dir(svff_ctx_get_rootfd(c->ctx), path, &names);
        for (size_t i = 0; c->r >= 0 && names[i]; i++)
                if (strncmp(names[i], "virtfn", 6) == 0)
                        c->n++;
        if (worker_pool_post(c->pool, count_done, c) < 0)
                count_free(c);
}

static int tick(sd_event_source *s, uint64_t usec, void *userdata) {
        struct numvfs_watch *w = userdata;
        struct numvfs_count *c;

        (void) usec;
        if (!w->counting && (c = calloc(1, sizeof(*c)))) {
                c->watch = w;
                c->pool = w->pool;
                c->ctx = svff_ctx_ref(w->ctx);
                memcpy(c->pf, w->pf, sizeof(c->pf));
                if (worker_pool_submit(c->pool, count_run, c) < 0)
                        count_free(c);
                else
                        w->counting = c;
        }
        (void) sd_event_source_set_time_relative(s, NUMVFS_WATCH_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

int numvfs_watch_start(sd_event *event, struct worker_pool *pool, struct svff_ctx *ctx, const char *pf,
                       numvfs_watch_fn fn, void *userdata, struct numvfs_watch **ret) {
        struct numvfs_watch *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->pool = pool;
        w->ctx = svff_ctx_ref(ctx);
        snprintf(w->pf, sizeof(w->pf), "%s", pf);
        w->fn = fn;
        w->userdata = userdata;
        w->seen = -1;
        r = sd_event_add_time_relative(event, &w->timer, CLOCK_MONOTONIC, NUMVFS_WATCH_USEC, 0, tick, w);
        if (r < 0) {
                numvfs_watch_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

struct numvfs_watch *numvfs_watch_free(struct numvfs_watch *w) {
        if (!w)
                return NULL;
        w->timer = sd_event_source_disable_unref(w->timer);
        if (w->counting)
                w->counting->watch = NULL;
        svff_ctx_unref(w->ctx);
        free(w);
        return NULL;
}
