/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-daemon.h>

#include "allowlist.h"
#include "libvirt.h"
#include "log.h"
#include "manager.h"
#include "reconf-predict.h"
#include "statedir.h"

static uint64_t now(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void metrics_refresh(struct manager *m);

int manager_new(sd_event *event, struct cmdline *cmdline, struct manager **ret) {
        struct manager *m;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->state_lock_fd = -EBADF;
        m->cmdline = *cmdline;
        *cmdline = (struct cmdline) { .log_level = -1 };
        m->started_usec = now(CLOCK_MONOTONIC);
        m->stop_timeout_usec = MANAGER_STOP_TIMEOUT_USEC;
#ifdef SVFF_FAULT_POINTS
        {
                const char *t = getenv("SVFF_STOP_TIMEOUT_SEC");
                char *end;
                unsigned long v;

                errno = 0;
                if (t && (v = strtoul(t, &end, 10)) > 0 && errno == 0 && *end == 0 && v < 3600)
                        m->stop_timeout_usec = v * USEC_PER_SEC;
        }
#endif

        r = svff_config_init(&m->config);
        if (r >= 0)
                r = registry_new(&m->registry);
        if (r >= 0)
                r = monitor_new(&m->monitor);
        if (r >= 0)
                r = metrics_new(event, m, metrics_refresh, &m->metrics);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

struct manager *manager_free(struct manager *m) {
        if (!m)
                return NULL;

        /* Operations were drained (manager_begin_shutdown) or the stop
         * deadline passed: what still completes while the pools stop
         * finds m->exiting, journals and starts nothing new. */
        m->exiting = true;
        m->stop_timer = sd_event_source_disable_unref(m->stop_timer);

        /* Reverse order of creation (svffd.c's run()). Snapshot waiters
         * first (snapshot_cache_stop): a discovery pass completing below
         * would otherwise run them against subsystems already gone. */
        snapshot_cache_stop(m->snapshots);
        /* A stop (not a crash) says so in the metrics file. */
        m->metrics = metrics_free(m->metrics);
        /* Calls outlive the server: a late reply goes nowhere. */
        m->server = server_free(m->server);
        m->monitor = monitor_free(m->monitor);
        worker_pool_free(m->ops_pool);
        m->ops_pool = NULL;
        hv_free(m->hv);
        m->hv = NULL;

        /* Left only when the stop deadline passed: their journals stay.
         * The registry's hooks go with it (assign.c's held-back events). */
        while (m->registry && registry_operations(m->registry))
                manager_remove_operation(m, registry_operations(m->registry));
        m->registry = registry_free(m->registry);

        svff_store_free(m->store);
        closep(&m->state_lock_fd);
        m->snapshots = snapshot_cache_free(m->snapshots);
        m->snapshot = NULL;
        svff_ctx_unref(m->ctx);
        blob_unref(m->list_cache);
        if (m->class_drift)
                m->class_drift = m->class_drift_free(m->class_drift);
        if (m->class_reads)
                m->class_reads = m->class_reads_free(m->class_reads);
        m->reconf_figures = reconf_figures_free(m->reconf_figures);
        json_object_put(m->metrics_class_drift);
        json_object_put(m->metrics_vf_counters);
        json_object_put(m->recovered);
        svff_config_done(&m->config);
        free(m->config_error);
        cmdline_done(&m->cmdline);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

/* ---- configuration ---- */

int manager_load_config(struct manager *m) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;
        int r;

        r = settings_read(&m->cmdline, &c, &err);
        if (r < 0)
                return log_error_errno(r, "%s", svff_error_is_set(&err) ? svff_error_message(&err)
                                                                         : "Failed to read the configuration: %m");
        svff_config_done(&m->config);
        m->config = c;
        return 0;
}

void manager_apply_config(struct manager *m) {
        log_set_max_level(m->config.log_level);
        if (m->ctx)
                svff_ctx_set_log_priority(m->ctx, m->config.log_level);
        m->have_admin_gid = settings_admin_gid(&m->config, &m->admin_gid);
        if (m->server) {
                struct server_limits l;

                manager_server_limits(m, &l);
                server_set_limits(m->server, &l);
        }
        monitor_set_backlog(m->monitor, m->config.limits.monitor_backlog);
        if (m->snapshots)
                snapshot_cache_set_max_age(m->snapshots, m->config.list_max_age_usec);
        if (metrics_set_path(m->metrics, m->config.metrics_textfile) < 0)
                log_oom();
        metrics_set_poll_period(m->metrics, m->config.metrics_poll_usec);
        if (!m->config.metrics_textfile) {
                /* What the file's look at the host read, for none. */
                json_object_put(m->metrics_class_drift);
                json_object_put(m->metrics_vf_counters);
                m->metrics_class_drift = m->metrics_vf_counters = NULL;
        }
}

void manager_server_limits(struct manager *m, struct server_limits *ret) {
        settings_server_limits(&m->config, m->admin_gid, m->have_admin_gid, ret);
}

/* Assignments on PFs svff.conf's manage list excludes: svffd can no
 * longer detach, pause or reconf them, and an operator who just added
 * the list must hear so, each assignment named in the log. Returns a
 * summary for the reload's event, NULL when there is none. */
static char *unmanaged_assignments(struct manager *m) {
        _cleanup_free_ char *names = NULL;
        unsigned n = 0;
        char *msg;

        if (!m->config.manage || !m->snapshot)
                return NULL;
        for (size_t i = 0; i < m->snapshot->n_pfs; i++) {
                const struct svff_pf *pf = m->snapshot->pfs[i];
                _cleanup_free_ char *why = NULL;

                if (svff_allowlist_check_pf(m->config.manage, m->config.manage_origin, m->ctx, pf, &why) != 1)
                        continue;
                for (size_t k = 0; k < pf->n_vfs; k++) {
                        const char *vf = pf->vfs[k].address;
                        struct svff_assignment a;
                        char *joined;

                        if (svff_store_get_assignment(m->store, vf, &a) != 1)
                                continue;
                        LOG_CONTEXT(.pf = pf->address, .vf = vf, .domain = a.domain);
                        log_warning("VF %s of PF %s is assigned to domain '%s', but the PF is %s: svffd can no "
                                    "longer detach, pause, unpause or reconf it. Add the PF to 'manage' in "
                                    "svff.conf and reload, or detach the VF with virsh.",
                                    vf, pf->address, a.domain, strna(why));
                        if (asprintf(&joined, "%s%s%s in '%s'", names ?: "", names ? ", " : "", vf, a.domain) < 0)
                                return NULL;
                        free(names);
                        names = joined;
                        n++;
                }
        }
        if (n == 0)
                return NULL;
        if (asprintf(&msg, "%u assignment%s on PFs the manage list excludes, which svffd can no longer change: "
                     "%s; add their PFs to 'manage' or detach them with virsh", n, n == 1 ? " is" : "s are",
                     names) < 0)
                return NULL;
        return msg;
}

int manager_reload_config(struct manager *m) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *ev;
        struct svff_config c;
        int r;

        r = settings_read(&m->cmdline, &c, &err);
        if (r < 0) {
                const char *msg = svff_error_is_set(&err) ? svff_error_message(&err) : strerror(-r);

                free(m->config_error);
                m->config_error = strdup(msg);
                log_error("Reloading the configuration failed, keeping the running one: %s", msg);
                ev = json_object_new_object();
                json_object_object_add(ev, "event", json_object_new_string("config-error"));
                json_object_object_add(ev, "message", json_object_new_string(msg));
                manager_emit(m, NULL, ev);
                return r;
        }

        /* These were used to set up what is running; changing them
         * needs a restart. */
        if (settings_keep_restart_only(&m->config, &c) < 0) {
                svff_config_done(&c);
                return log_oom();
        }

        svff_config_done(&m->config);
        m->config = c;
        free(m->config_error);
        m->config_error = NULL;
        manager_apply_config(m);
        log_info("Configuration reloaded from '%s'.", settings_path(&m->cmdline));

        ev = json_object_new_object();
        json_object_object_add(ev, "event", json_object_new_string("config-reloaded"));
        {
                _cleanup_free_ char *msg = unmanaged_assignments(m);

                if (msg)
                        json_object_object_add(ev, "message", json_object_new_string(msg));
        }
        manager_emit(m, NULL, ev);
        return 0;
}

/* ---- store ---- */

int manager_open_store(struct manager *m) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        int r;

        r = statedir_lock(m->config.state_dir, &m->state_lock_fd);
        if (r < 0)
                return r;

        r = svff_store_open(m->config.state_dir, &m->store, &err);
        if (r < 0)
                return log_error_errno(r, "%s", svff_error_is_set(&err) ? svff_error_message(&err)
                                                                         : "Failed to open the store: %m");
        log_debug("Store '%s' at generation %llu.", svff_store_path(m->store),
                  (unsigned long long) svff_store_generation(m->store));
        return 0;
}

int manager_commit(struct manager *m, struct svff_error *err) {
        int r;

        r = svff_store_commit(m->store, err);
        metrics_changed(m->metrics);
        if (r < 0)
                log_error_errno(r, "Failed to commit the store '%s': %s", svff_store_path(m->store),
                                svff_error_is_set(err) ? svff_error_message(err) : strerror(-r));
        return r;
}

const struct svff_policy *manager_pf_policy(struct manager *m, const char *pf) {
        const struct svff_pf *p = manager_snapshot_pf(m, pf);

        if (p)
                return svff_config_find_policy(&m->config, pf, p->vendor_id, p->device_id, p->netdev);
        return svff_config_find_policy(&m->config, pf, 0, 0, NULL);
}

const char *manager_pf_owner(struct manager *m, const char *pf, const struct svff_policy *pol, char *buf,
                             size_t n) {
        const char *stored = svff_store_get_pf_owner(m->store, pf);
        bool counts = pol && pol->numvfs >= 0;
        unsigned numvfs = 0;
        int r;

        if (stored && streq(stored, SVFF_PF_OWNER_OPERATOR))
                return SVFF_PF_OWNER_OPERATOR;
        r = svff_store_get_pf(m->store, pf, &numvfs, NULL);
        if (counts && (stored || r <= 0 || numvfs == (unsigned) pol->numvfs)) {
                snprintf(buf, n, SVFF_PF_OWNER_POLICY_PREFIX "%s", pol->name);
                return buf;
        }
        /* A record from before owners: set by hand, or by a policy
         * that has changed since; the operator's either way. */
        if (!stored && r > 0)
                return SVFF_PF_OWNER_OPERATOR;
        return NULL;
}

/* ---- snapshots ---- */

static void snapshot_changed(struct manager *m, struct snapshot *s) {
        m->snapshot = s;
        metrics_snapshot_changed(m->metrics, s);
}

static uint64_t snapshot_busy(struct manager *m, const char *pf) {
        struct operation *op = registry_find(m->registry, pf);

        return op ? op->snapshot_seq : 0;
}

static void metrics_snapshot_ready(struct manager *m, struct call *call, _unused_ void *userdata) {
        (void) call;
        metrics_write(m->metrics);
}

/* The metrics file reports svffd's own sysfs changes read back, as List
 * would, once no operation runs. While one does, the snapshot there is
 * will do: a fresh one would cost a discovery pass of every PF each
 * second, and drift leaves out the PFs in flux anyway; the operation's
 * end brings the file up to date. */
static void metrics_refresh(struct manager *m) {
        if (m->snapshots && !registry_operations(m->registry))
                manager_with_snapshot(m, NULL, metrics_snapshot_ready, NULL, NULL);
        else
                metrics_write(m->metrics);
}

int manager_start_discovery(struct manager *m) {
        int r;

        r = snapshot_cache_new(m->event, m->ctx, m, snapshot_changed, snapshot_busy, &m->snapshots);
        if (r < 0)
                return r;
        snapshot_cache_set_max_age(m->snapshots, m->config.list_max_age_usec);
        return 0;
}

int manager_snapshot_now(struct manager *m) {
        return snapshot_cache_read_now(m->snapshots);
}

void manager_sysfs_changed(struct manager *m, const char *pf) {
        snapshot_cache_changed(m->snapshots, pf);
        metrics_changed(m->metrics);
}

void manager_snapshot_update_pf(struct manager *m, struct svff_pf *pf) {
        snapshot_cache_update_pf(m->snapshots, pf);
}

void manager_with_snapshot(struct manager *m, struct call *call, snapshot_waiter_fn fn, void *userdata,
                           void (*destroy)(void *userdata)) {
        snapshot_cache_with(m->snapshots, call, fn, userdata, destroy);
}

bool manager_libvirt_connected(struct manager *m) {
        return hv_connected(m->hv);
}

/* ---- operations ---- */

const struct svff_pf *manager_snapshot_pf(struct manager *m, const char *address) {
        return snapshot_pf(m->snapshot, address);
}

struct operation *manager_find_operation(struct manager *m, const char *pf) {
        return registry_find(m->registry, pf);
}

int manager_add_operation(struct manager *m, const char *pf, const char *kind,
                          struct call *call, struct operation **ret) {
        struct operation *op;
        int r;

        r = registry_add(m->registry, pf, kind, call, &op);
        if (r < 0)
                return r;
        op->manager = m;
        op->snapshot_seq = m->snapshots ? snapshot_cache_seq(m->snapshots) : 1;
        manager_notify_status(m);
        metrics_changed(m->metrics);
        *ret = op;
        return 0;
}

static void check_drained(struct manager *m);

void manager_remove_operation(struct manager *m, struct operation *op) {
        /* The registry's hooks run here, before the stop may end the
         * loop: what waited for this operation happens now. */
        registry_remove(m->registry, op);
        manager_notify_status(m);
        metrics_changed(m->metrics);
        manager_notify_ready(m);
        check_drained(m);
}

void manager_notify_ready(struct manager *m) {
        size_t n = 0;

        if (m->ready || !m->serving || m->startup_reads > 0)
                return;
        for (struct operation *op = registry_operations(m->registry); op; op = op->next)
                if (op->startup)
                        return;
        m->ready = true;
        if (m->snapshot)
                n = m->snapshot->n_pfs;
        log_debug("Start-up work done, ready.");
        (void) sd_notifyf(false, "READY=1\nSTATUS=Serving; %zu PF(s).", n);
}

/* ---- events ---- */

int manager_subscribe(struct manager *m, struct call *call) {
        return monitor_subscribe(m->monitor, call);
}

void manager_emit(struct manager *m, struct operation *op, struct json_object *event) {
        monitor_emit(m->monitor, op ? op->call : NULL, event);
        metrics_changed(m->metrics);
}

/* Ends the event loop: the subsystems are freed (manager_free) only
 * after it returns. */
static void stop_now(struct manager *m) {
        if (m->exiting)
                return;
        m->exiting = true;
        m->stop_timer = sd_event_source_disable_unref(m->stop_timer);
        (void) sd_event_exit(m->event, 0);
}

static void check_drained(struct manager *m) {
        if (m->shutting_down && !registry_operations(m->registry))
                stop_now(m);
}

static int on_stop_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        struct manager *m = userdata;

        for (struct operation *op = registry_operations(m->registry); op; op = op->next) {
                LOG_CONTEXT(.pf = op->pf, .operation = op->kind);
                log_warning("The %s of PF %s did not reach a safe point in time (phase %s, %u/%u); its journal "
                            "stays and the next start of svffd finishes it.", op->kind, op->pf, op->phase, op->done,
                            op->total);
        }
        stop_now(m);
        return 0;
}

void manager_begin_shutdown(struct manager *m) {
        int r;

        if (m->shutting_down) {
                log_notice("Stop asked for again: not waiting for the running operations, their journals stay.");
                stop_now(m);
                return;
        }
        m->shutting_down = true;
        if (m->server)
                server_stop_listening(m->server);

        /* No discovery pass from now on: one would read every PF, and
         * one whose numvfs write is still blocked would hold the exit. */
        snapshot_cache_shutdown(m->snapshots);
        monitor_end(m->monitor);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down, finishing the running operations.");

        if (!registry_operations(m->registry)) {
                stop_now(m);
                return;
        }
        for (struct operation *op = registry_operations(m->registry); op; op = op->next) {
                LOG_CONTEXT(.pf = op->pf, .operation = op->kind);
                log_info("Waiting for the %s of PF %s to reach a safe point (phase %s).", op->kind, op->pf,
                         op->phase);
        }
        r = sd_event_add_time_relative(m->event, &m->stop_timer, CLOCK_MONOTONIC,
                                       m->stop_timeout_usec, 0, on_stop_deadline, m);
        if (r < 0) {
                log_error_errno(r, "Failed to arm the stop deadline, stopping now: %m");
                stop_now(m);
        }
}

void manager_notify_status(struct manager *m) {
        unsigned n_ops = 0;

        if (m->shutting_down)
                return;
        for (struct operation *op = registry_operations(m->registry); op; op = op->next)
                n_ops++;
        (void) sd_notifyf(false, "STATUS=Serving %u connection(s), %u operation(s) in progress.",
                          m->server ? server_n_connections(m->server) : 0, n_ops);
}
