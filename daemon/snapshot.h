/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The snapshot cache: all PFs as the last discovery pass saw them, and
 * the passes that refresh it on a thread of their own ("disc"), so a slow
 * sysfs never delays the main loop. Callers ask for a snapshot fresh
 * enough for them and are run once one exists; svffd's own changes are
 * counted (snapshot_cache_changed) so that no caller is served a snapshot
 * taken before the change it made.
 *
 * Once shutdown has begun (snapshot_cache_shutdown) no new pass starts:
 * a pass reads every PF, and one whose sysfs write is still blocked in
 * the kernel would hold the exit until that write returns. Callers then
 * get the last snapshot, or a ShuttingDown error when there is none.
 *
 * The owner (struct manager) is opaque here: it is only handed back to
 * the waiters and to the changed callback. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "context.h"
#include "device.h"
#include "server.h"

struct manager;
struct worker_pool;

/* All PFs as one discovery pass saw them. */
struct snapshot {
        struct svff_pf **pfs;
        size_t n_pfs;
        uint64_t taken_usec;    /* CLOCK_MONOTONIC, when the pass started */
        uint64_t seq;           /* the cache's change count when the pass started */
        int error;              /* discovery failed: -errno, message below */
        char *error_message;
};

void snapshot_free(struct snapshot *s);
/* The PF at address in s (s may be NULL), or NULL. */
const struct svff_pf *snapshot_pf(const struct snapshot *s, const char *address);

/* userdata is the waiter's, to free: what the call asked, decoded. */
typedef void (*snapshot_waiter_fn)(struct manager *m, struct call *call, void *userdata);
/* The current snapshot was replaced or changed in place (s is borrowed;
 * it stays valid until the next call). */
typedef void (*snapshot_changed_fn)(struct manager *m, struct snapshot *s);

struct snapshot_cache;

/* Whether an operation of svffd's is changing pf now: the cache's change
 * count (snapshot_cache_seq()) as it began, or 0. */
typedef uint64_t (*snapshot_busy_fn)(struct manager *m, const char *pf);

/* Starts the discovery thread. ctx is referenced. */
int snapshot_cache_new(sd_event *event, struct svff_ctx *ctx, struct manager *owner, snapshot_changed_fn changed,
                       snapshot_busy_fn busy, struct snapshot_cache **ret);
/* Drops the waiters (unserved) and stops the discovery thread: a pass
 * still running completes first. The snapshot stays readable. */
void snapshot_cache_stop(struct snapshot_cache *c);
/* Stops, then frees the snapshot. Accepts NULL. */
struct snapshot_cache *snapshot_cache_free(struct snapshot_cache *c);

/* The discovery thread's pool, for other short reads that must never
 * queue behind an init (a device class's drift check). */
struct worker_pool *snapshot_cache_pool(struct snapshot_cache *c);
/* How old a snapshot may be and still answer a call (list_max_age_msec). */
void snapshot_cache_set_max_age(struct snapshot_cache *c, uint64_t usec);
/* The current snapshot (NULL before the first pass), and a number that
 * changes whenever List's answer from it may: it changed, or svffd
 * changed a PF it shows. */
struct snapshot *snapshot_cache_get(struct snapshot_cache *c);
uint64_t snapshot_cache_id(struct snapshot_cache *c);
/* svffd's changes counted so far (snapshot_cache_changed()), from 1. */
uint64_t snapshot_cache_seq(const struct snapshot_cache *c);

/* Reads sysfs on the calling thread (start-up only: before serving). */
int snapshot_cache_read_now(struct snapshot_cache *c);
/* Records that svffd changed pf in sysfs (NULL: anything): later callers
 * wait for a pass that re-read it, unless an operation is changing pf
 * still (the busy callback): then the snapshot serves, pf shown as read
 * before the change (snapshot_cache_pf_behind). Only the PFs changed are read again when the rest of
 * the snapshot is younger than list_max_age_msec. */
void snapshot_cache_changed(struct snapshot_cache *c, const char *pf);
/* Whether the snapshot shows pf as it was before svffd's last change of
 * it. */
bool snapshot_cache_pf_behind(struct snapshot_cache *c, const char *pf);
/* Puts pf (taken), which svffd just changed and knows exactly, into the
 * snapshot at once, sparing a pass; a pass running then does not put its
 * older reading of pf in its place. pf is freed when the snapshot has
 * not noted that change (snapshot_cache_changed()), or has none. */
void snapshot_cache_update_pf(struct snapshot_cache *c, struct svff_pf *pf);
/* Runs fn(owner, call, userdata) once a snapshot fresh enough exists
 * (now, or after a pass): one with svffd's own changes (but those of the
 * PFs operations are changing now), taken no more than list_max_age_msec
 * before the call arrived. An older one is not
 * served while the refresh runs. Takes a reference on call, which may be
 * NULL for svffd's own work, and userdata: fn gets it, or destroy (may
 * be NULL) when fn never runs (svffd stopping, out of memory). */
void snapshot_cache_with(struct snapshot_cache *c, struct call *call, snapshot_waiter_fn fn, void *userdata,
                         void (*destroy)(void *userdata));
/* No new pass from now on (see above); one running completes. */
void snapshot_cache_shutdown(struct snapshot_cache *c);
/* How many calls waited for a discovery pass since svffd started: a
 * snapshot too old, or older than svffd's own last change. A call served
 * within the last stretch of the snapshot's life starts the next pass
 * ahead, so steady readers do not wait. */
uint64_t snapshot_cache_waits(const struct snapshot_cache *c);
