/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffd's state, owned by the main thread: the configuration, the store,
 * the worker pools, the varlink server, the latest sysfs snapshot, the
 * operations in progress and the Monitor subscribers.
 *
 * Threads: the main thread runs the sd-event loop and owns everything
 * here. Two explicit worker pools do the blocking work: "ops" (numvfs
 * writes and driver binding, config "workers" threads) and "discovery"
 * (one thread reading sysfs for snapshots), so a slow init never delays
 * a List. Workers get copies of what they need and post results back. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <json-c/json.h>

#include "config-file.h"
#include "context.h"
#include "device.h"
#include "server.h"
#include "store.h"
#include "worker.h"

struct hv;

/* How long a stop waits for the running operations to reach a safe
 * point: under systemd's default TimeoutStopSec (90 s), so svffd ends
 * itself, its journals written, before the SIGKILL. A test build reads
 * SVFF_STOP_TIMEOUT_SEC instead. */
#define MANAGER_STOP_TIMEOUT_USEC (80 * USEC_PER_SEC)

/* What the command line set: it wins over the config file, on reload
 * too. NULL / -1 when not given. */
struct cmdline {
        char *config_path;
        bool config_path_given;
        char *socket;
        char *state_dir;
        char *sysfs_root;
        char *libvirt_uri;
        int log_level;
};

/* All PFs as one discovery pass saw them. */
struct snapshot {
        struct svff_pf **pfs;
        size_t n_pfs;
        uint64_t taken_usec;    /* CLOCK_MONOTONIC, when the pass started */
        uint64_t seq;           /* manager->sysfs_seq when the pass started */
        int error;              /* discovery failed: -errno, message below */
        char *error_message;
};

struct operation {
        struct manager *manager;
        struct operation *next;
        char pf[SVFF_PCI_ADDR_STRLEN];
        const char *kind;       /* "init", "release" */
        const char *phase;
        unsigned done, total;
        uint64_t started_usec;  /* CLOCK_REALTIME */
        struct call *call;      /* the caller (NULL: svffd's own, e.g. a policy) */
        bool startup;           /* READY=1 waits for it */
        void *data;             /* the operation's own state */
};

typedef void (*snapshot_waiter_fn)(struct manager *m, struct call *call);

struct snapshot_waiter {
        struct snapshot_waiter *next;
        struct call *call;
        snapshot_waiter_fn fn;
        uint64_t seq;           /* needs a snapshot at least this new */
        uint64_t not_before;    /* ...and taken at or after this (CLOCK_MONOTONIC) */
};

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
        struct worker_pool *discovery_pool;
        struct hv *hv;          /* libvirt: connection, events, its pool */
        struct server *server;

        uint64_t started_usec;  /* CLOCK_MONOTONIC */

        /* Snapshots. sysfs_seq counts svffd's own changes: a snapshot
         * taken before the latest one is too old for any caller. */
        struct snapshot *snapshot;
        uint64_t snapshot_id;   /* bumped per installed snapshot */
        uint64_t sysfs_seq;
        char **dirty_pfs;       /* changed since the last pass started */
        size_t n_dirty_pfs;
        bool dirty_all;
        bool discovery_running;
        struct snapshot_waiter *waiters, **waiters_tail;
        /* The encoded List reply for (snapshot, store generation). */
        struct blob *list_cache;
        uint64_t list_cache_snapshot_id;
        uint64_t list_cache_generation;

        struct operation *operations;
        /* Lifecycle events held back while an operation runs (assign.c). */
        struct assign_deferred *assign_deferred;
        /* Interrupted reconfs completed or rolled back from the journal
         * since start-up (Status "recovered"). */
        struct json_object *recovered;

        struct autoinit *autoinit;
        struct udev_watch *udev;
        bool serving;           /* listening; READY=1 once start-up work is done */
        bool ready;             /* READY=1 sent */

        struct call **subscribers;
        size_t n_subscribers, alloc_subscribers;

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
struct manager *manager_free(struct manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct manager *, manager_free);

/* Config: load (start-up: a missing default file is fine) and reload
 * (SIGHUP: a bad file keeps the running config, recorded for Status). */
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

/* Snapshots */
void snapshot_free(struct snapshot *s);
/* Reads sysfs on the calling thread (start-up only: before serving). */
int manager_snapshot_now(struct manager *m);
/* Records that svffd changed pf in sysfs (NULL: anything): later callers
 * wait for a pass that re-read it. Only the PFs changed are read again
 * when the rest of the snapshot is younger than list-max-age. */
void manager_sysfs_changed(struct manager *m, const char *pf);
/* Puts pf (taken), which svffd just changed and knows exactly, into the
 * snapshot, sparing a pass. Only when no pass is running (a pass started
 * earlier would overwrite it with older data); otherwise pf is freed and
 * the next pass reads it. */
void manager_snapshot_update_pf(struct manager *m, struct svff_pf *pf);
/* Runs fn(m, call) once a snapshot fresh enough exists (now, or after a
 * pass on the discovery pool): one with svffd's own changes, taken no
 * more than list-max-age before the call arrived. An older one is not
 * served while the refresh runs. Takes a reference on call, which may be
 * NULL for svffd's own work. */
void manager_with_snapshot(struct manager *m, struct call *call, snapshot_waiter_fn fn);

/* Whether svffd holds a connection to libvirt now (Status). */
bool manager_libvirt_connected(struct manager *m);

/* Operations: one per PF at a time. */
struct operation *manager_find_operation(struct manager *m, const char *pf);
int manager_add_operation(struct manager *m, const char *pf, const char *kind,
                          struct call *call, struct operation **ret);
void manager_remove_operation(struct manager *m, struct operation *op);

/* Events: sent to every Monitor subscriber (and to op's caller when it
 * asked for "more"). Takes ownership of event; adds "timestamp_usec". */
void manager_emit(struct manager *m, struct operation *op, struct json_object *event);
int manager_subscribe(struct manager *m, struct call *call);

/* Shutdown is an operation: stops accepting connections and calls,
 * ends the Monitor streams, and ends the event loop once no operation is
 * left (each stops at its next journaled safe point), or when the stop
 * deadline passes (then the journals left say what the next start
 * resumes). A second call ends the loop at once. */
void manager_begin_shutdown(struct manager *m);

/* Sends READY=1 once serving and no start-up operation is left. */
void manager_notify_ready(struct manager *m);

/* sd_notify("STATUS=...") with a summary. */
void manager_notify_status(struct manager *m);
