/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Worker threads for blocking work (sysfs writes that may wait on the
 * kernel, discovery through a slow filesystem), so the event loop keeps
 * answering. These are svffd's only long-lived threads besides the main
 * one; libsvff may add a short-lived thread per deadline-bounded write.
 *
 * A pool has n threads taking jobs from one FIFO queue. Jobs never touch
 * the store, connections or any other main-thread object: they report
 * back by posting a function to run on the main thread
 * (worker_pool_post), delivered in posting order through an eventfd
 * watched by the pool's sd-event source. */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "macro.h"

struct worker_pool;

typedef void (*worker_fn)(void *userdata);

/* Creates the pool and starts its threads (named "svffd-<name>"). */
int worker_pool_new(sd_event *event, const char *name, unsigned n_threads,
                    struct worker_pool **ret);

/* Stops taking new jobs, lets running ones finish (they may poll
 * worker_pool_cancelled() to stop early), joins the threads, then runs
 * the main-thread functions still posted, so nothing posted is lost.
 * The pool still accepts posts (other threads, e.g. libvirt's event
 * thread, may hold it) until worker_pool_free(). Idempotent; accepts
 * NULL. */
void worker_pool_stop(struct worker_pool *p);

/* worker_pool_stop(), then runs what was posted since and frees the
 * pool. Nothing may post to it any more. Accepts NULL. */
void worker_pool_free(struct worker_pool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct worker_pool *, worker_pool_free);

/* Queues run(userdata) on a worker thread. Main thread only. */
int worker_pool_submit(struct worker_pool *p, worker_fn run, void *userdata);

/* Queues fn(userdata) to run on the main thread. Any thread. -ENOMEM is
 * the only failure; a job that cannot post should give up. */
int worker_pool_post(struct worker_pool *p, worker_fn fn, void *userdata);

/* True once shutdown started: long jobs stop at their next safe point. */
bool worker_pool_cancelled(struct worker_pool *p);

/* Jobs queued or running (main thread). */
unsigned worker_pool_busy(struct worker_pool *p);
