/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffd's running state, owned by the main thread: the configuration,
 * the store, the ops pool, the link to libvirt, the varlink server, and
 * the services the executors share, each a module of its own:
 *
 *   snapshot.h   the snapshot cache and its discovery thread
 *   registry.h   the operations in progress, one per PF
 *   monitor.h    the Monitor event bus
 *   settings.h   where the configuration comes from
 *   journal.h    the journal of operations in progress, in the store
 *   metrics.h    the metrics file for node_exporter
 *
 * The manager ties them together and owns the stop: it knows nothing of
 * the executors above it (assign, init/release, reconf, auto-init), which
 * hook into it (registry_add_hook) instead.
 *
 * Threads: the main thread runs the sd-event loop and owns everything
 * here. Two explicit worker pools do the blocking work: "ops" (numvfs
 * writes and driver binding, config "workers" threads) and the snapshot
 * cache's "disc" (one thread reading sysfs for snapshots), so a slow
 * init never delays a List. Workers get copies of what they need and
 * post results back. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <json-c/json.h>

#include "config-file.h"
#include "metrics.h"
#include "context.h"
#include "device.h"
#include "monitor.h"
#include "registry.h"
#include "server.h"
#include "settings.h"
#include "snapshot.h"
#include "store.h"
#include "worker.h"

struct hv;
struct autoinit;
struct udev_watch;
struct assign_deferred;

/* How long a stop waits for the running operations to reach a safe
 * point: under systemd's default TimeoutStopSec (90 s), so svffd ends
 * itself, its journals written, before the SIGKILL. A test build reads
 * SVFF_STOP_TIMEOUT_SEC instead. */
#define MANAGER_STOP_TIMEOUT_USEC (80 * USEC_PER_SEC)

struct reconf_figures;

struct manager {
        sd_event *event;
        struct cmdline cmdline;
        struct svff_config config;
        char *config_error;     /* why the last reload failed, or NULL */
        gid_t admin_gid;
        bool have_admin_gid;

        struct svff_ctx *ctx;
        int state_lock_fd;      /* flock()ed STATE_DIR/svffd.lock */
        struct svff_store *store;
        struct worker_pool *ops_pool;
        struct hv *hv;          /* libvirt: connection, events, its pool */
        struct server *server;

        uint64_t started_usec;  /* CLOCK_MONOTONIC */

        struct snapshot_cache *snapshots;
        /* The cache's current snapshot (borrowed, kept up to date by its
         * changed callback), read directly by the executors. */
        struct snapshot *snapshot;
        struct registry *registry;
        struct monitor *monitor;
        /* The metrics file (metrics_textfile): told of every change made
         * through here (commits, snapshots, operations, events). */
        struct metrics *metrics;
        /* While it is on, what its look at the host every
         * metrics_poll_sec read (methods_poll_metrics()): the device
         * classes' drift (an array of Drift), and the NIC VFs' counters
         * ({"<pf>": {"<index>": counters}}). */
        struct json_object *metrics_class_drift;
        struct json_object *metrics_vf_counters;
        bool metrics_counters_running;

        /* Status's class drift (classes.c), and how classes.c frees
         * it, once the pools are stopped. */
        struct classes_drift_cache *class_drift;
        struct classes_drift_cache *(*class_drift_free)(struct classes_drift_cache *c);
        /* Dry runs' class plans and Show's device classes, shared
         * (classes.c), and how it frees them, once the pools are
         * stopped. */
        struct classes_reads *class_reads;
        struct classes_reads *(*class_reads_free)(struct classes_reads *c);

        /* The encoded List reply for (snapshot, store generation). */
        struct blob *list_cache;
        uint64_t list_cache_snapshot_id;
        uint64_t list_cache_generation;

        /* What the last reconf of each PF measured (reconfigure.c), for
         * the next prediction of its guests' downtime. */
        struct reconf_figures *reconf_figures;

        /* Lifecycle events held back while an operation runs (assign.c). */
        struct assign_deferred *assign_deferred;
        /* Interrupted reconfs completed or rolled back from the journal
         * since start-up (Status "recovered"). */
        struct json_object *recovered;

        /* Made and freed by svffd.c, which sits above them. */
        struct autoinit *autoinit;
        struct udev_watch *udev;
        bool serving;           /* listening; READY=1 once start-up work is done */
        bool ready;             /* READY=1 sent */
        /* Start-up work READY=1 waits for that is no operation yet: the
         * policy images being read for their hash (autoinit.c). */
        unsigned startup_reads;

        /* A stop was asked for (SIGTERM): no new calls or operations;
         * the running ones go on to their next journaled safe point, then
         * the event loop ends. */
        bool shutting_down;
        /* The event loop ended (drained, or the stop deadline passed):
         * what completes now records what it did, keeps its journal for
         * the next start and starts nothing, as the pools are going. */
        bool exiting;
        sd_event_source *stop_timer;
        uint64_t stop_timeout_usec;
};

int manager_new(sd_event *event, struct cmdline *cmdline, struct manager **ret);
/* Reverse order of creation; what svffd.c made on top (udev, auto-init)
 * must be gone already. */
struct manager *manager_free(struct manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct manager *, manager_free);

/* Config: load (start-up: a missing default file is fine) and reload
 * (SIGHUP: a bad file keeps the running config, recorded for Status;
 * returns <0 then). */
int manager_load_config(struct manager *m);
int manager_reload_config(struct manager *m);
/* Applies the settings that may change at run time (log level, admin
 * group, limits). */
void manager_apply_config(struct manager *m);
/* The server's limits from the config (and the built-in rest). */
void manager_server_limits(struct manager *m, struct server_limits *ret);

/* Locks the state directory (one svffd per store: a second one would
 * overwrite the first's commits) and opens the store; refuses (returns
 * <0, logged naming the directory and the other svffd's pid, or with the
 * store's message) when locked or when the store cannot be read exactly. */
int manager_open_store(struct manager *m);
/* Commits; on failure logs and fills err. */
int manager_commit(struct manager *m, struct svff_error *err);
/* The policy matching pf as the current snapshot shows it (by its
 * address alone when the snapshot lacks it), or NULL. Borrowed from the
 * config. */
const struct svff_policy *manager_pf_policy(struct manager *m, const char *pf);
/* Who owns pf's VF count (see autoinit.h): "operator", "policy:<name>"
 * (in buf, n bytes) or NULL (no policy with a count matches and no
 * operator set it). pol is the policy matching pf, or NULL. */
const char *manager_pf_owner(struct manager *m, const char *pf, const struct svff_policy *pol, char *buf,
                             size_t n);

/* Snapshots (snapshot.h), for the executors. manager_start_discovery
 * creates the cache (needs m->ctx); the rest pass through to it. */
int manager_start_discovery(struct manager *m);
int manager_snapshot_now(struct manager *m);
void manager_sysfs_changed(struct manager *m, const char *pf);
void manager_snapshot_update_pf(struct manager *m, struct svff_pf *pf);
void manager_with_snapshot(struct manager *m, struct call *call, snapshot_waiter_fn fn, void *userdata,
                           void (*destroy)(void *userdata));

/* Whether svffd holds a connection to libvirt now (Status). */
bool manager_libvirt_connected(struct manager *m);

/* Operations (registry.h): one per PF at a time. Adding and removing
 * also keep READY=1, STATUS= and the stop up to date. */
struct operation *manager_find_operation(struct manager *m, const char *pf);
/* The PF at address in the current snapshot, or NULL. Borrowed until
 * the snapshot is replaced. */
const struct svff_pf *manager_snapshot_pf(struct manager *m, const char *address);
int manager_add_operation(struct manager *m, const char *pf, const char *kind,
                          struct call *call, struct operation **ret);
void manager_remove_operation(struct manager *m, struct operation *op);

/* Events (monitor.h): sent to every Monitor subscriber (and to op's
 * caller when it asked for "more"). Takes ownership of event; adds
 * "timestamp_usec". */
void manager_emit(struct manager *m, struct operation *op, struct json_object *event);
int manager_subscribe(struct manager *m, struct call *call);

/* Shutdown is an operation: stops accepting connections and calls,
 * ends the Monitor streams, starts no discovery pass, and ends the event
 * loop once no operation is left (each stops at its next journaled safe
 * point), or when the stop deadline passes (then the journals left say
 * what the next start resumes). A second call ends the loop at once. */
void manager_begin_shutdown(struct manager *m);

/* Sends READY=1 once serving and no start-up operation is left. */
void manager_notify_ready(struct manager *m);

/* sd_notify("STATUS=...") with a summary. */
void manager_notify_status(struct manager *m);
