/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The VFs a sriov_numvfs write has made (or removed) so far. The kernel
 * adds a PF's virtfn links one VF at a time while the write runs, and
 * reading the PF's directory does not wait for the write, as a read of
 * sriov_numvfs does. A watch lists that directory on a worker pool
 * every half second and tells its owner, on the main thread, each time
 * the count changes: init and reconf show the write advancing instead
 * of a frozen line for as long as the kernel takes. */

#include <systemd/sd-event.h>

#include "context.h"
#include "worker.h"

struct numvfs_watch;

/* n: the PF's virtfn links now. */
typedef void (*numvfs_watch_fn)(void *userdata, unsigned n);

/* Starts watching pf's virtfn links, counted on pool (not one busy with
 * the write itself); fn(userdata, n) runs on event's thread once per
 * change, the first time half a second after the start. */
int numvfs_watch_start(sd_event *event, struct worker_pool *pool, struct svff_ctx *ctx, const char *pf,
                       numvfs_watch_fn fn, void *userdata, struct numvfs_watch **ret);

/* Stops it: fn is not called again, a count in flight is dropped when
 * it ends. Accepts NULL. */
struct numvfs_watch *numvfs_watch_free(struct numvfs_watch *w);
