/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interface.h"
#include "log.h"
#include "snapshot.h"
#include "worker.h"

struct snapshot_waiter {
        struct snapshot_waiter *next;
        struct call *call;
        snapshot_waiter_fn fn;
        void *userdata;
        void (*destroy)(void *userdata);
        uint64_t seq;           /* needs a snapshot at least this new */
        uint64_t not_before;    /* ...and taken at or after this (CLOCK_MONOTONIC) */
};

/* A PF svffd changed, and its change count then (0 once the snapshot
 * shows the change); the count when an operation last gave it, as the
 * operation left it (snapshot_cache_update_pf()). */
struct change {
        char *pf;
        uint64_t seq;
        uint64_t given_seq;
};

struct snapshot_cache {
        struct manager *owner;
        snapshot_changed_fn changed_fn;
        snapshot_busy_fn busy_fn;
        struct svff_ctx *ctx;
        struct worker_pool *pool;
        uint64_t max_age_usec;
        uint64_t pass_usec;     /* how long the last full pass took */
        uint64_t waits;         /* calls that waited for a pass */

        struct snapshot *snapshot;
        uint64_t id;            /* bumped per change of the snapshot */
        /* Counts svffd's own changes: a snapshot taken before the latest
         * one is too old for any caller. */
        uint64_t seq;
        /* Each PF's last change, and the last one of no PF or of all: a
         * snapshot older than the change shows the PF as it was before. */
        struct change *changes;
        size_t n_changes;
        uint64_t any_seq;
        /* The PFs operations gave (snapshot_cache_update_pf()) while a
         * pass ran: in the snapshot at once, the pass's older reading of
         * them does not replace them. */
        char **given;
        size_t n_given;
        char **dirty_pfs;       /* changed since the last pass started */
        size_t n_dirty_pfs;
        bool dirty_all;
        bool running;           /* a pass is on the pool */
        bool running_partial;   /* ...which reads only some PFs */
        /* A refresh ahead of need came while a partial pass ran: a full
         * one follows it. */
        bool refresh_after;
        bool shutting_down;     /* no new pass */
        struct snapshot_waiter *waiters, **waiters_tail;
};

struct discovery_job {
        struct snapshot_cache *cache;   /* main thread only */
        struct worker_pool *pool;
        struct svff_ctx *ctx;
        uint64_t seq;                   /* the cache's seq at submission */
        char **only;                    /* a partial pass: just these PFs */
        size_t n_only;
        /* A full pass: the PFs an operation is changing, which the
         * snapshot stands in for (carried over, not read), and the
         * devices it does not read: those PFs and their VFs, sorted. */
        char **carried;
        char **skip;
        uint64_t started_usec;
        struct snapshot *result;
};

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

void snapshot_free(struct snapshot *s) {
        if (!s)
                return;
        svff_pf_list_free(s->pfs, s->n_pfs);
        free(s->error_message);
        free(s);
}

const struct svff_pf *snapshot_pf(const struct snapshot *s, const char *address) {
        for (size_t i = 0; s && address && i < s->n_pfs; i++)
                if (streq(s->pfs[i]->address, address))
                        return s->pfs[i];
        return NULL;
}

int snapshot_cache_new(sd_event *event, struct svff_ctx *ctx, struct manager *owner, snapshot_changed_fn changed,
                       snapshot_busy_fn busy, struct snapshot_cache **ret) {
        struct snapshot_cache *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->owner = owner;
        c->changed_fn = changed;
        c->busy_fn = busy;
        c->ctx = svff_ctx_ref(ctx);
        c->seq = 1;
        c->waiters_tail = &c->waiters;
        r = worker_pool_new(event, "disc", 1, &c->pool);
        if (r < 0) {
                snapshot_cache_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

static void drop_waiters(struct snapshot_cache *c) {
        while (c->waiters) {
                struct snapshot_waiter *w = c->waiters;

                c->waiters = w->next;
                if (w->destroy)
                        w->destroy(w->userdata);
                call_unref(w->call);
                free(w);
        }
        c->waiters_tail = &c->waiters;
}

void snapshot_cache_stop(struct snapshot_cache *c) {
        if (!c)
                return;
        /* Waiters first: a pass completing below would otherwise run
         * them against subsystems already gone. */
        c->shutting_down = true;
        drop_waiters(c);
        worker_pool_free(c->pool);
        c->pool = NULL;
}

struct snapshot_cache *snapshot_cache_free(struct snapshot_cache *c) {
        if (!c)
                return NULL;
        snapshot_cache_stop(c);
        for (size_t i = 0; i < c->n_changes; i++)
                free(c->changes[i].pf);
        free(c->changes);
        strv_free(c->given);
        strv_free(c->dirty_pfs);
        snapshot_free(c->snapshot);
        svff_ctx_unref(c->ctx);
        free(c);
        return NULL;
}

struct worker_pool *snapshot_cache_pool(struct snapshot_cache *c) {
        return c->pool;
}

void snapshot_cache_set_max_age(struct snapshot_cache *c, uint64_t usec) {
        c->max_age_usec = usec;
}

struct snapshot *snapshot_cache_get(struct snapshot_cache *c) {
        return c ? c->snapshot : NULL;
}

uint64_t snapshot_cache_id(struct snapshot_cache *c) {
        return c->id;
}

uint64_t snapshot_cache_seq(const struct snapshot_cache *c) {
        return c->seq;
}

static void changed(struct snapshot_cache *c) {
        c->id++;
        if (c->changed_fn)
                c->changed_fn(c->owner, c->snapshot);
}

static struct snapshot *discover(struct svff_ctx *ctx, uint64_t seq, char *const *skip) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct snapshot *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->seq = seq;
        s->taken_usec = now_usec();
        r = svff_pf_list_nowait(ctx, skip, &s->pfs, &s->n_pfs, &err);
        if (r < 0) {
                s->pfs = NULL;
                s->n_pfs = 0;
                s->error = r;
                s->error_message = strdup(svff_error_is_set(&err) ? svff_error_message(&err)
                                                                  : strerror(-r));
        }
        return s;
}

/* Re-reads only the PFs in only[]; result->pfs[i] is NULL for a PF that
 * is gone. */
static struct snapshot *discover_some(struct svff_ctx *ctx, uint64_t seq, char **only, size_t n) {
        struct snapshot *s = calloc(1, sizeof(*s));

        if (!s)
                return NULL;
        s->seq = seq;
        s->taken_usec = now_usec();
        s->pfs = calloc(n, sizeof(struct svff_pf *));
        if (!s->pfs) {
                free(s);
                return NULL;
        }
        s->n_pfs = n;
        for (size_t i = 0; i < n; i++) {
                int r = svff_pf_load_nowait(ctx, only[i], &s->pfs[i], NULL);

                if (r == -ENODEV)
                        s->pfs[i] = NULL;
                else if (r < 0) {
                        s->error = r;
                        s->error_message = strdup(strerror(-r));
                        break;
                }
        }
        return s;
}

static int cmp_pf(const void *a, const void *b) {
        return strcmp((*(struct svff_pf *const *) a)->address, (*(struct svff_pf *const *) b)->address);
}

/* A pass does not read a PF while a write to its sriov_numvfs is in the
 * kernel, which would hold the read (and every caller behind the pass)
 * until the write ends: it gives only svffd's own write (numvfs_pending),
 * or how long the read has waited for another process's
 * (numvfs_unread_since). The PF's last known state stands in, marked with
 * that; the stand-in (*pf) is freed. *pf is NULL for a PF that is gone,
 * old NULL for one never read. */
static void keep_last_known(struct svff_pf **pf, struct svff_pf **old) {
        struct svff_pf *last;

        if (!*pf || !old || !*old || !svff_pf_is_unread(*pf))
                return;
        last = TAKE_PTR(*old);
        free(last->numvfs_pending);
        last->numvfs_pending = TAKE_PTR((*pf)->numvfs_pending);
        last->numvfs_pending_late = (*pf)->numvfs_pending_late;
        last->numvfs_unread_since = (*pf)->numvfs_unread_since;
        svff_pf_free(*pf);
        *pf = last;
}

static struct svff_pf **find_pf(struct snapshot *s, const char *address) {
        for (size_t k = 0; s && k < s->n_pfs; k++)
                if (s->pfs[k] && streq(s->pfs[k]->address, address))
                        return &s->pfs[k];
        return NULL;
}

/* Puts the PFs of a partial pass into the current snapshot (taking
 * them), dropping PFs that are gone. Returns <0 when it cannot. */
static int merge_snapshot(struct snapshot_cache *c, struct snapshot *part, char **only) {
        struct snapshot *s = c->snapshot;

        for (size_t i = 0; i < part->n_pfs; i++) {
                struct svff_pf *pf = part->pfs[i];
                size_t k;

                for (k = 0; k < s->n_pfs; k++)
                        if (streq(s->pfs[k]->address, only[i]))
                                break;
                if (k < s->n_pfs) {
                        keep_last_known(&pf, &s->pfs[k]);
                        svff_pf_free(s->pfs[k]);
                        if (pf)
                                s->pfs[k] = pf;
                        else
                                s->pfs[k] = s->pfs[--s->n_pfs];
                } else if (pf) {
                        struct svff_pf **n = realloc(s->pfs, (s->n_pfs + 1) * sizeof(*n));

                        if (!n)
                                return -ENOMEM;
                        s->pfs = n;
                        s->pfs[s->n_pfs++] = pf;
                }
                part->pfs[i] = NULL;
        }
        /* No PF left (a reprogram took the only one off the bus): pfs
         * may be NULL, which qsort() must not be given. */
        if (s->n_pfs > 1)
                qsort(s->pfs, s->n_pfs, sizeof(*s->pfs), cmp_pf);
        s->seq = part->seq;
        changed(c);
        return 0;
}

static void start_discovery(struct snapshot_cache *c);
static void note_change(struct snapshot_cache *c, const char *pf, uint64_t seq);
static int add_dirty(struct snapshot_cache *c, const char *pf);
static struct change *find_change(struct snapshot_cache *c, const char *pf);
static bool behind_only_busy(struct snapshot_cache *c, uint64_t upto);
static bool stands_in(struct snapshot_cache *c, const char *pf);

/* Moves into s, a full pass that did not read them, the PFs in carried
 * as the snapshot shows them. One whose operation ended during the pass
 * without giving it (then it is not in the snapshot here, see
 * take_given()) is read by the next pass. */
static void carry_over(struct snapshot_cache *c, struct snapshot *s, char **carried) {
        size_t n = 0;
        struct svff_pf **pfs;

        while (carried && carried[n])
                n++;
        if (n == 0 || s->error < 0)
                return;
        pfs = realloc(s->pfs, (s->n_pfs + n) * sizeof(*pfs));
        if (!pfs) {
                c->dirty_all = true;    /* the next pass reads them */
                return;
        }
        s->pfs = pfs;
        for (size_t i = 0; i < n; i++) {
                struct svff_pf **old = find_pf(c->snapshot, carried[i]);

                if (!old || find_pf(s, carried[i]))
                        continue;
                s->pfs[s->n_pfs++] = TAKE_PTR(*old);
                if (!c->busy_fn || c->busy_fn(c->owner, carried[i]) == 0)
                        snapshot_cache_changed(c, carried[i]);
        }
        if (s->n_pfs > 1)
                qsort(s->pfs, s->n_pfs, sizeof(*s->pfs), cmp_pf);
}

static void install_snapshot(struct snapshot_cache *c, struct snapshot *s) {
        for (size_t i = 0; i < s->n_pfs; i++)
                keep_last_known(&s->pfs[i], find_pf(c->snapshot, s->pfs[i]->address));
        snapshot_free(c->snapshot);
        c->snapshot = s;
        changed(c);
        /* A pass allocates thousands of small strings; give the freed
         * ones of the previous pass back. */
        (void) malloc_trim(0);
        if (s->error < 0)
                log_warning_errno(s->error, "Discovering PFs under '%s' failed: %s",
                                  svff_ctx_get_root(c->ctx), strna(s->error_message));
}

static void serve_waiters(struct snapshot_cache *c) {
        struct snapshot_waiter **p = &c->waiters;

        c->waiters_tail = &c->waiters;
        while (*p) {
                struct snapshot_waiter *w = *p;

                if ((w->seq > c->snapshot->seq && !behind_only_busy(c, w->seq)) ||
                    c->snapshot->taken_usec < w->not_before) {
                        c->waiters_tail = &w->next;
                        p = &w->next;
                        continue;
                }
                *p = w->next;
                w->fn(c->owner, w->call, w->userdata);
                call_unref(w->call);
                free(w);
        }
        /* waiters_tail must point at the last next pointer. */
        c->waiters_tail = p;
}

/* Shutting down with waiters no pass will serve: what there is now. */
static void serve_waiters_last(struct snapshot_cache *c) {
        while (c->waiters) {
                struct snapshot_waiter *w = c->waiters;

                c->waiters = w->next;
                if (c->snapshot)
                        w->fn(c->owner, w->call, w->userdata);
                else {
                        if (w->call)
                                call_errorf(w->call, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL, "svffd is shutting down.");
                        if (w->destroy)
                                w->destroy(w->userdata);
                }
                call_unref(w->call);
                free(w);
        }
        c->waiters_tail = &c->waiters;
}

/* Takes out of the snapshot the PFs operations gave while the pass ran,
 * for put_given() once the pass is in: the pass may have read them
 * before or during the operation. One changed again since is taken too:
 * its change is noted, so it is read again unless an operation that
 * began after the give is changing it, and then the given state is the
 * one before that operation, which stands in for it. Returns them as a
 * partial snapshot, NULL when there are none. */
static struct snapshot *take_given(struct snapshot_cache *c, char ***ret_only) {
        _cleanup_strv_free_ char **given = TAKE_PTR(c->given);
        size_t n = c->n_given, k = 0;
        struct snapshot *part;

        c->n_given = 0;
        *ret_only = NULL;
        if (n == 0 || !c->snapshot)
                return NULL;
        part = calloc(1, sizeof(*part));
        if (part)
                part->pfs = calloc(n, sizeof(struct svff_pf *));
        if (!part || !part->pfs) {
                /* the pass's reading of them goes in: read them again */
                for (size_t i = 0; i < n; i++)
                        snapshot_cache_changed(c, given[i]);
                snapshot_free(part);
                return NULL;
        }
        /* given keeps the addresses of those taken, for merge_snapshot() */
        for (size_t i = 0; i < n; i++) {
                struct svff_pf **pf = find_pf(c->snapshot, given[i]);

                if (!pf) {
                        free(given[i]);
                        continue;
                }
                part->pfs[part->n_pfs++] = TAKE_PTR(*pf);
                given[k++] = given[i];
        }
        given[k] = NULL;
        /* the slots emptied above */
        for (size_t i = 0; i < c->snapshot->n_pfs;)
                if (!c->snapshot->pfs[i])
                        c->snapshot->pfs[i] = c->snapshot->pfs[--c->snapshot->n_pfs];
                else
                        i++;
        *ret_only = TAKE_PTR(given);
        return part;
}

static void put_given(struct snapshot_cache *c, struct snapshot *part, char **only) {
        if (!part)
                return;
        part->seq = c->snapshot ? c->snapshot->seq : 0;
        if (!c->snapshot || c->snapshot->error < 0 || merge_snapshot(c, part, only) < 0)
                /* left to the next pass */
                for (size_t i = 0; i < part->n_pfs; i++)
                        snapshot_cache_changed(c, only[i]);
        snapshot_free(part);
        strv_free(only);
}

static void discovery_done(void *userdata) {
        struct discovery_job *j = userdata;
        struct snapshot_cache *c = j->cache;
        char **given_only;
        struct snapshot *given = take_given(c, &given_only);

        c->running = false;
        if (!j->result)
                c->dirty_all = true;  /* out of memory: what it took must be read */
        else if (j->only) {
                if (j->result->error < 0 || !c->snapshot || merge_snapshot(c, j->result, j->only) < 0)
                        c->dirty_all = true;  /* a full pass will follow */
                snapshot_free(j->result);
        } else {
                c->pass_usec = now_usec() - j->started_usec;
                carry_over(c, j->result, j->carried);
                install_snapshot(c, j->result);
        }
        strv_free(j->only);
        strv_free(j->carried);
        strv_free(j->skip);
        svff_ctx_unref(j->ctx);
        free(j);
        put_given(c, given, given_only);

        if (c->snapshot)
                serve_waiters(c);
        if (c->waiters && c->shutting_down)
                serve_waiters_last(c);
        else if (c->waiters)
                start_discovery(c);
        else if (c->refresh_after) {
                c->dirty_all = true;
                start_discovery(c);
        }
}

static void discovery_run(void *userdata) {
        struct discovery_job *j = userdata;

        if (j->only)
                j->result = discover_some(j->ctx, j->seq, j->only, j->n_only);
        else
                j->result = discover(j->ctx, j->seq, j->skip);
        (void) worker_pool_post(j->pool, discovery_done, j);
}

/* For a full pass while operations change PFs the snapshot stands in
 * for: those PFs, and the devices the pass then leaves alone. A pass
 * reading them would show them halfway through the operation, compete
 * with it for the device, and take longer for every reader waiting.
 * Out of memory, the pass reads them. */
static int busy_skip(struct snapshot_cache *c, char ***ret_carried, char ***ret_skip) {
        _cleanup_strv_free_ char **carried = NULL, **skip = NULL;
        size_t n_carried = 0, n_skip = 0;

        for (size_t i = 0; c->snapshot && c->snapshot->error >= 0 && i < c->snapshot->n_pfs; i++) {
                const struct svff_pf *pf = c->snapshot->pfs[i];
                char **n;

                if (!stands_in(c, pf->address))
                        continue;
                n = realloc(carried, (n_carried + 2) * sizeof(char *));
                if (!n)
                        return -ENOMEM;
                carried = n;
                carried[n_carried] = strdup(pf->address);
                carried[n_carried + 1] = NULL;
                if (!carried[n_carried])
                        return -ENOMEM;
                n_carried++;
                n = realloc(skip, (n_skip + pf->n_vfs + 2) * sizeof(char *));
                if (!n)
                        return -ENOMEM;
                skip = n;
                skip[n_skip] = NULL;
                for (size_t k = 0; k <= pf->n_vfs; k++) {
                        skip[n_skip] = strdup(k == 0 ? pf->address : pf->vfs[k - 1].address);
                        if (!skip[n_skip])
                                return -ENOMEM;
                        skip[++n_skip] = NULL;
                }
        }
        if (n_skip > 1)
                qsort(skip, n_skip, sizeof(char *), strv_cmp);
        *ret_carried = TAKE_PTR(carried);
        *ret_skip = TAKE_PTR(skip);
        return 0;
}

static void start_discovery(struct snapshot_cache *c) {
        struct discovery_job *j;

        if (c->running || c->shutting_down || !c->pool)
                return;

        j = calloc(1, sizeof(*j));
        if (!j)
                goto fail;
        j->cache = c;
        j->pool = c->pool;
        j->ctx = svff_ctx_ref(c->ctx);
        j->seq = c->seq;
        j->started_usec = now_usec();
        /* Only the PFs svffd changed, while the rest is young enough. */
        if (c->snapshot && c->snapshot->error >= 0 && !c->dirty_all && c->n_dirty_pfs > 0 &&
            now_usec() - c->snapshot->taken_usec < c->max_age_usec) {
                j->only = c->dirty_pfs;
                j->n_only = c->n_dirty_pfs;
                /* NULL-terminated for strv_free */
        } else {
                strv_free(c->dirty_pfs);
                if (busy_skip(c, &j->carried, &j->skip) < 0)
                        log_oom();
        }
        c->dirty_pfs = NULL;
        c->n_dirty_pfs = 0;
        if (!j->only)
                c->dirty_all = c->refresh_after = false;
        /* Not read by this pass: still to be read, or given by their
         * operation's end (snapshot_cache_update_pf() takes only a PF on
         * the dirty list). Out of memory, no call is served before a
         * full pass. */
        for (size_t i = 0; j->carried && j->carried[i]; i++)
                if (add_dirty(c, j->carried[i]) < 0) {
                        c->dirty_all = true;
                        note_change(c, NULL, ++c->seq);
                        break;
                }
        if (worker_pool_submit(c->pool, discovery_run, j) < 0) {
                strv_free(j->only);
                strv_free(j->carried);
                strv_free(j->skip);
                svff_ctx_unref(j->ctx);
                free(j);
                c->dirty_all = true;
                goto fail;
        }
        c->running = true;
        c->running_partial = j->only != NULL;
        return;
fail:
        log_error("Failed to start a discovery pass, answering from the last snapshot.");
}

int snapshot_cache_read_now(struct snapshot_cache *c) {
        uint64_t t = now_usec();
        struct snapshot *s = discover(c->ctx, c->seq, NULL);

        if (!s)
                return log_oom();
        c->pass_usec = now_usec() - t;
        install_snapshot(c, s);
        return s->error;
}

static struct change *find_change(struct snapshot_cache *c, const char *pf) {
        for (size_t i = 0; i < c->n_changes; i++)
                if (streq(c->changes[i].pf, pf))
                        return &c->changes[i];
        return NULL;
}

/* Notes pf's change at seq: out of memory, it counts as a change of
 * every PF, which no caller is served past. */
static void note_change(struct snapshot_cache *c, const char *pf, uint64_t seq) {
        struct change *ch = pf ? find_change(c, pf) : NULL, *n;
        char *copy;

        if (ch) {
                ch->seq = seq;
                return;
        }
        if (!pf) {
                c->any_seq = seq;
                return;
        }
        copy = strdup(pf);
        n = copy ? realloc(c->changes, (c->n_changes + 1) * sizeof(*n)) : NULL;
        if (!n) {
                free(copy);
                c->any_seq = seq;
                return;
        }
        c->changes = n;
        c->changes[c->n_changes++] = (struct change) { .pf = copy, .seq = seq };
}

bool snapshot_cache_pf_behind(struct snapshot_cache *c, const char *pf) {
        const struct change *ch;

        if (!c || !c->snapshot)
                return false;
        ch = find_change(c, pf);
        return ch && ch->seq > c->snapshot->seq;
}

/* Whether the snapshot may stand in for pf, which it shows as before a
 * change: an operation is changing pf now, and the snapshot holds every
 * change made before that operation began (an earlier operation's end
 * included). */
static bool stands_in(struct snapshot_cache *c, const char *pf) {
        uint64_t began = c->busy_fn ? c->busy_fn(c->owner, pf) : 0;
        const struct change *ch;

        if (began == 0)
                return false;
        if (c->snapshot->seq >= began)
                return true;
        /* The operation before this one gave pf, and svffd changed
         * nothing, of any PF, between that and this one's start. */
        ch = find_change(c, pf);
        return ch && ch->given_seq >= began;
}

/* Whether every change up to upto that the snapshot lacks is to a PF it
 * may stand in for: a call may then have it, those PFs shown as last
 * read and named as changing, instead of waiting for a pass to read them
 * halfway through the operation. Once the operation ends, its PF must be
 * read (or given) before a call is served. */
static bool behind_only_busy(struct snapshot_cache *c, uint64_t upto) {
        uint64_t seq = c->snapshot->seq;

        if (c->any_seq > seq && c->any_seq <= upto)
                return false;
        for (size_t i = 0; i < c->n_changes; i++)
                if (c->changes[i].seq > seq && c->changes[i].seq <= upto && !stands_in(c, c->changes[i].pf))
                        return false;
        return true;
}

/* Puts s into the set *l of *n strings, NULL-terminated: -ENOMEM when
 * it cannot. */
static int set_add(char ***l, size_t *n, const char *s) {
        char **a;

        for (size_t i = 0; i < *n; i++)
                if (streq((*l)[i], s))
                        return 0;
        a = realloc(*l, (*n + 2) * sizeof(char *));
        if (!a)
                return -ENOMEM;
        *l = a;
        a[*n] = strdup(s);
        if (!a[*n])
                return -ENOMEM;
        a[++*n] = NULL;
        return 0;
}

/* Puts pf on the dirty list: -ENOMEM when it cannot. */
static int add_dirty(struct snapshot_cache *c, const char *pf) {
        return set_add(&c->dirty_pfs, &c->n_dirty_pfs, pf);
}

void snapshot_cache_changed(struct snapshot_cache *c, const char *pf) {
        c->seq++;
        c->id++;        /* List's answer names the PF as changing */
        note_change(c, pf, c->seq);
        if (!pf || add_dirty(c, pf) < 0)
                c->dirty_all = true;
}

void snapshot_cache_update_pf(struct snapshot_cache *c, struct svff_pf *pf) {
        struct snapshot part = { .pfs = &pf, .n_pfs = 1 };
        char address[SVFF_PCI_ADDR_STRLEN], *only[] = { address, NULL };
        struct change *ch;
        size_t k;

        snprintf(address, sizeof(address), "%s", pf->address);
        if (!c->snapshot || c->snapshot->error < 0) {
                svff_pf_free(pf);
                return;
        }
        for (k = 0; k < c->n_dirty_pfs; k++)
                if (streq(c->dirty_pfs[k], pf->address))
                        break;
        if (k == c->n_dirty_pfs) {
                svff_pf_free(pf);  /* not what the dirty list says changed */
                return;
        }

        part.seq = c->snapshot->seq;
        if (merge_snapshot(c, &part, only) < 0) {
                svff_pf_free(pf);
                return;
        }
        /* Off the dirty list. When nothing else is dirty, and no pass
         * is reading changes made before, the snapshot is as new as
         * svffd's last change; else it shows this PF as it is. */
        free(c->dirty_pfs[k]);
        c->dirty_pfs[k] = c->dirty_pfs[--c->n_dirty_pfs];
        c->dirty_pfs[c->n_dirty_pfs] = NULL;
        /* given while a pass runs: the pass, which may have read it
         * before the operation's end, must not replace it */
        if (c->running && set_add(&c->given, &c->n_given, address) < 0) {
                /* out of memory: the pass may put an older reading in,
                 * so the next one reads the PF */
                snapshot_cache_changed(c, address);
                return;
        }
        ch = find_change(c, address);
        if (ch)
                ch->given_seq = c->seq;
        if (c->n_dirty_pfs == 0 && !c->dirty_all && !c->running)
                c->snapshot->seq = c->seq;
        else if (ch)
                ch->seq = 0;
}

/* Whether s may answer a call that arrived at t: it holds svffd's own
 * changes and was taken no more than list_max_age_msec before the call. An
 * old snapshot is never served while a refresh runs (the answer must
 * show what the host looks like now, e.g. the drift the operator just
 * caused), and an error is not served again once a refresh is due. */
static uint64_t snapshot_not_before(struct snapshot_cache *c, uint64_t t) {
        return t > c->max_age_usec ? t - c->max_age_usec : 0;
}

/* Whether a numvfs write began or ended since the snapshot was taken:
 * one it shows in progress has ended (the PF can be read again, and only
 * a pass shows what the write did), or one began on a PF it shows as
 * read (it must show the PF as changing from the start of the write).
 * The same for a read another process's write held: once it returned,
 * only a pass shows what that write did. */
static bool pending_writes_changed(struct snapshot_cache *c) {
        for (size_t i = 0; c->snapshot && i < c->snapshot->n_pfs; i++) {
                const struct svff_pf *pf = c->snapshot->pfs[i];
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "bus/pci/devices/%s/sriov_numvfs", pf->address) < 0)
                        return true;
                if ((svff_ctx_write_pending(c->ctx, path, NULL, NULL) > 0) == !!pf->numvfs_pending &&
                    !(pf->numvfs_unread_since && svff_ctx_read_stuck(c->ctx, path, NULL) <= 0))
                        continue;
                /* By an operation on the PF: a change of it like svffd's
                 * others, which the operation's own PF need not wait for. */
                if (!stands_in(c, pf->address))
                        return true;
                if (!snapshot_cache_pf_behind(c, pf->address))
                        snapshot_cache_changed(c, pf->address);
        }
        return false;
}

/* How long before a snapshot grows too old its successor's pass starts:
 * the last full pass's time and a quarter more, and at least a tenth of
 * list_max_age_msec, so that a reader coming every few tens of
 * milliseconds meets the start; at most half of it, so that a steady
 * stream of readers costs at most twice the passes it would cost
 * waiting. */
static uint64_t refresh_lead(const struct snapshot_cache *c) {
        uint64_t lead = c->pass_usec + c->pass_usec / 4;

        if (lead < c->max_age_usec / 10)
                return c->max_age_usec / 10;
        return lead < c->max_age_usec / 2 ? lead : c->max_age_usec / 2;
}

/* A call served from a snapshot that will be too old within the lead
 * starts the next pass, so that a steady stream of readers finds a
 * fresh snapshot waiting instead of waiting for one. The pass is a
 * full one: a partial pass does not make the snapshot younger. */
static void refresh_ahead(struct snapshot_cache *c, uint64_t now) {
        if (c->shutting_down || !c->pool || now - c->snapshot->taken_usec + refresh_lead(c) < c->max_age_usec)
                return;
        if (c->running) {
                /* A full pass running will do; a partial one does not
                 * make the snapshot younger. */
                if (c->running_partial)
                        c->refresh_after = true;
                return;
        }
        log_debug("Refreshing the snapshot ahead of need: taken %" PRIu64 " ms ago, the last pass took %" PRIu64
                  " ms.", (now - c->snapshot->taken_usec) / 1000, c->pass_usec / 1000);
        c->dirty_all = true;
        start_discovery(c);
}

uint64_t snapshot_cache_waits(const struct snapshot_cache *c) {
        return c->waits;
}

void snapshot_cache_with(struct snapshot_cache *c, struct call *call, snapshot_waiter_fn fn, void *userdata,
                         void (*destroy)(void *userdata)) {
        struct snapshot_waiter *w;
        uint64_t now = now_usec(), not_before = snapshot_not_before(c, now);

        if (c->snapshot && c->snapshot->taken_usec >= not_before && !pending_writes_changed(c)) {
                if (c->snapshot->seq >= c->seq) {
                        refresh_ahead(c, now);
                        fn(c->owner, call, userdata);
                        return;
                }
                if (behind_only_busy(c, c->seq)) {
                        /* No pass for those PFs: the operation's end
                         * gives them (snapshot_cache_update_pf()), or
                         * the next call's pass reads them. The refresh
                         * ahead of need leaves them out (busy_skip()),
                         * and the operation's end does not wait for it. */
                        refresh_ahead(c, now);
                        fn(c->owner, call, userdata);
                        return;
                }
        }

        start_discovery(c);
        if (!c->running && (c->snapshot || c->shutting_down)) {
                /* No pass could start (out of memory, shutting down):
                 * the last snapshot, with its age in Status, beats no
                 * answer. */
                if (c->snapshot)
                        fn(c->owner, call, userdata);
                else {
                        if (call)
                                call_errorf(call, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL, "svffd is shutting down.");
                        if (destroy)
                                destroy(userdata);
                }
                return;
        }

        w = calloc(1, sizeof(*w));
        if (!w) {
                if (call)
                        call_error(call, "io.svff.InternalError", NULL);
                if (destroy)
                        destroy(userdata);
                return;
        }
        if (call)
                c->waits++;
        w->call = call_ref(call);
        w->fn = fn;
        w->userdata = userdata;
        w->destroy = destroy;
        w->seq = c->seq;
        /* The refresh that is running serves the call if it started
         * recently enough; else discovery_done starts the next one. */
        w->not_before = not_before;
        *c->waiters_tail = w;
        c->waiters_tail = &w->next;
}

void snapshot_cache_shutdown(struct snapshot_cache *c) {
        if (c)
                c->shutting_down = true;
}
