/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "assign.h"
#include "autoinit.h"
#include "log.h"
#include "libvirt.h"
#include "manager.h"
#include "udev.h"

static uint64_t now(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static void free_cmdline(struct cmdline *c) {
        free(c->config_path);
        free(c->socket);
        free(c->state_dir);
        free(c->sysfs_root);
        free(c->libvirt_uri);
}

static int replace(char **slot, const char *v) {
        char *n;

        if (!v)
                return 0;
        n = strdup(v);
        if (!n)
                return -ENOMEM;
        free(*slot);
        *slot = n;
        return 0;
}

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
        m->waiters_tail = &m->waiters;
        m->started_usec = now(CLOCK_MONOTONIC);
        m->sysfs_seq = 1;
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
        if (r < 0) {
                manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

void snapshot_free(struct snapshot *s) {
        if (!s)
                return;
        svff_pf_list_free(s->pfs, s->n_pfs);
        free(s->error_message);
        free(s);
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
         * first: a discovery pass completing below would otherwise run
         * them against subsystems already gone. */
        while (m->waiters) {
                struct snapshot_waiter *w = m->waiters;

                m->waiters = w->next;
                call_unref(w->call);
                free(w);
        }
        m->waiters_tail = &m->waiters;
        m->udev = udev_watch_free(m->udev);
        m->autoinit = autoinit_free(m->autoinit);
        /* Calls outlive the server: a late reply goes nowhere. */
        m->server = server_free(m->server);
        for (size_t i = 0; i < m->n_subscribers; i++)
                call_unref(m->subscribers[i]);
        m->n_subscribers = 0;
        worker_pool_free(m->discovery_pool);
        m->discovery_pool = NULL;
        worker_pool_free(m->ops_pool);
        m->ops_pool = NULL;
        hv_free(m->hv);
        m->hv = NULL;

        free(m->subscribers);
        strv_free(m->dirty_pfs);
        /* Left only when the stop deadline passed: their journals stay. */
        while (m->operations)
                manager_remove_operation(m, m->operations);
        assign_free_deferred(m);

        svff_store_free(m->store);
        closep(&m->state_lock_fd);
        svff_ctx_unref(m->ctx);
        snapshot_free(m->snapshot);
        blob_unref(m->list_cache);
        json_object_put(m->recovered);
        svff_config_done(&m->config);
        free(m->config_error);
        free_cmdline(&m->cmdline);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

/* ---- configuration ---- */

static int apply_cmdline(struct manager *m, struct svff_config *c) {
        if (replace(&c->socket, m->cmdline.socket) < 0 ||
            replace(&c->state_dir, m->cmdline.state_dir) < 0 ||
            replace(&c->sysfs_root, m->cmdline.sysfs_root) < 0 ||
            replace(&c->libvirt_uri, m->cmdline.libvirt_uri) < 0)
                return -ENOMEM;
        if (m->cmdline.log_level >= 0)
                c->log_level = m->cmdline.log_level;
        return 0;
}

static const char *config_path(struct manager *m) {
        return m->cmdline.config_path ?: SVFFD_CONFIG_DEFAULT;
}

/* Reads defaults + file + command line into ret. */
static int read_config(struct manager *m, struct svff_config *ret, struct svff_error *err) {
        struct svff_config c;
        int r;

        r = svff_config_init(&c);
        if (r < 0)
                return r;
        /* No config file at the default place: the defaults (and the
         * drop-ins, if any). */
        r = svff_config_load(&c, config_path(m), !m->cmdline.config_path_given, err);
        if (r >= 0)
                r = apply_cmdline(m, &c);
        if (r < 0) {
                svff_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int manager_load_config(struct manager *m) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;
        int r;

        r = read_config(m, &c, &err);
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

        m->have_admin_gid = false;
        if (m->config.admin_group) {
                struct group grp, *res = NULL;
                _cleanup_free_ char *buf = NULL;
                size_t size = 16384;
                int r;

                /* A group with many members does not fit a fixed buffer:
                 * ERANGE asks for a bigger one. */
                for (;;) {
                        char *b = realloc(buf, size);

                        if (!b) {
                                r = ENOMEM;
                                break;
                        }
                        buf = b;
                        r = getgrnam_r(m->config.admin_group, &grp, buf, size, &res);
                        if (r != ERANGE || size >= 16u * 1024u * 1024u)
                                break;
                        size *= 2;
                }
                if (r == 0 && res) {
                        m->admin_gid = res->gr_gid;
                        m->have_admin_gid = true;
                } else
                        log_warning_errno(r > 0 ? -r : -ENOENT,
                                          "Admin group '%s' not found, only root may change devices: %m",
                                          m->config.admin_group);
        }

        if (m->server) {
                struct server_limits l;

                manager_server_limits(m, &l);
                server_set_limits(m->server, &l);
        }
}

void manager_server_limits(struct manager *m, struct server_limits *ret) {
        *ret = SERVER_LIMITS_DEFAULT;
        ret->max_message = m->config.limits.max_message;
        ret->max_connections = m->config.limits.max_connections;
        ret->max_connections_per_uid = m->config.limits.max_connections_per_uid;
        ret->idle_timeout_usec = m->config.limits.idle_timeout_usec;
        ret->admin_gid = m->admin_gid;
        ret->have_admin_gid = m->have_admin_gid;
}

int manager_reload_config(struct manager *m) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *ev;
        struct svff_config c;
        int r;

        r = read_config(m, &c, &err);
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
#define KEEP(field, name)                                                                  \
        if (!streq(c.field, m->config.field)) {                                            \
                log_notice("Changing '%s' from '%s' to '%s' needs a restart, keeping '%s'.", \
                           name, m->config.field, c.field, m->config.field);                \
                free(c.field);                                                             \
                c.field = strdup(m->config.field);                                         \
        }
        KEEP(socket, "socket");
        KEEP(state_dir, "state-dir");
        KEEP(sysfs_root, "sysfs-root");
#undef KEEP
        if (!c.socket || !c.state_dir || !c.sysfs_root) {
                svff_config_done(&c);
                return log_oom();
        }
        c.workers = m->config.workers;
        c.libvirt_workers = m->config.libvirt_workers;

        svff_config_done(&m->config);
        m->config = c;
        free(m->config_error);
        m->config_error = NULL;
        manager_apply_config(m);
        log_info("Configuration reloaded from '%s'.", config_path(m));

        ev = json_object_new_object();
        json_object_object_add(ev, "event", json_object_new_string("config-reloaded"));
        manager_emit(m, NULL, ev);
        autoinit_reload(m);
        return 0;
}

/* ---- store ---- */

#define STATE_LOCK_FILE "svffd.lock"

/* The pid the lock holder wrote into the lock file, or 0 when unknown
 * (it may not have written it yet). */
static pid_t lock_holder(int fd) {
        char buf[32], *end;
        ssize_t n;
        long v;

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        errno = 0;
        v = strtol(buf, &end, 10);
        if (errno != 0 || end == buf || (*end != '\n' && *end != 0) || v <= 0 || v > INT32_MAX)
                return 0;
        return (pid_t) v;
}

/* Held until svffd exits (the kernel drops it even on SIGKILL); the file
 * stays, as unlinking a lock file races with the next taker. */
static int lock_state_dir(struct manager *m) {
        const char *dir = m->config.state_dir;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char pid[32];
        int n;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create state directory '%s': %m", dir);
        if (asprintf(&path, "%s/" STATE_LOCK_FILE, dir) < 0)
                return log_oom();
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to open lock file '%s': %m", path);
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                pid_t holder;

                if (errno != EWOULDBLOCK)
                        return log_error_errno(-errno, "Failed to lock '%s': %m", path);
                holder = lock_holder(fd);
                if (holder > 0)
                        return log_error_errno(-EBUSY,
                                               "State directory '%s' is in use by another svffd (pid %d, "
                                               "lock '%s'): stop that one, or give this one its own --state-dir.",
                                               dir, (int) holder, path);
                return log_error_errno(-EBUSY,
                                       "State directory '%s' is in use by another svffd (lock '%s'): "
                                       "stop that one, or give this one its own --state-dir.",
                                       dir, path);
        }

        n = snprintf(pid, sizeof(pid), "%d\n", (int) getpid());
        if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t) n, 0) != n)
                log_warning_errno(-errno, "Failed to write the pid into '%s', ignoring: %m", path);
        m->state_lock_fd = TAKE_FD(fd);
        return 0;
}

int manager_open_store(struct manager *m) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        int r;

        r = lock_state_dir(m);
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
        if (r < 0)
                log_error_errno(r, "Failed to commit the store '%s': %s", svff_store_path(m->store),
                                svff_error_is_set(err) ? svff_error_message(err) : strerror(-r));
        return r;
}

/* ---- snapshots ---- */

struct discovery_job {
        struct manager *manager;    /* main thread only */
        struct worker_pool *pool;
        struct svff_ctx *ctx;
        uint64_t seq;               /* manager->sysfs_seq at submission */
        char **only;                /* a partial pass: just these PFs */
        size_t n_only;
        struct snapshot *result;
};

static struct snapshot *discover(struct svff_ctx *ctx, uint64_t seq) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct snapshot *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->seq = seq;
        s->taken_usec = now(CLOCK_MONOTONIC);
        r = svff_pf_list(ctx, &s->pfs, &s->n_pfs, &err);
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
        s->taken_usec = now(CLOCK_MONOTONIC);
        s->pfs = calloc(n, sizeof(struct svff_pf *));
        if (!s->pfs) {
                free(s);
                return NULL;
        }
        s->n_pfs = n;
        for (size_t i = 0; i < n; i++) {
                int r = svff_pf_load(ctx, only[i], &s->pfs[i], NULL);

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

/* Puts the PFs of a partial pass into the current snapshot (taking
 * them), dropping PFs that are gone. Returns <0 when it cannot. */
static int merge_snapshot(struct manager *m, struct snapshot *part, char **only) {
        struct snapshot *s = m->snapshot;

        for (size_t i = 0; i < part->n_pfs; i++) {
                struct svff_pf *pf = part->pfs[i];
                size_t k;

                for (k = 0; k < s->n_pfs; k++)
                        if (streq(s->pfs[k]->address, only[i]))
                                break;
                if (k < s->n_pfs) {
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
        m->snapshot_id++;
        return 0;
}

static void start_discovery(struct manager *m);

static void install_snapshot(struct manager *m, struct snapshot *s) {
        snapshot_free(m->snapshot);
        m->snapshot = s;
        m->snapshot_id++;
        /* A pass allocates thousands of small strings; give the freed
         * ones of the previous pass back. */
        (void) malloc_trim(0);
        if (s->error < 0)
                log_warning_errno(s->error, "Discovering PFs under '%s' failed: %s",
                                  m->config.sysfs_root, strna(s->error_message));
}

static void serve_waiters(struct manager *m) {
        struct snapshot_waiter **p = &m->waiters;

        m->waiters_tail = &m->waiters;
        while (*p) {
                struct snapshot_waiter *w = *p;

                if (w->seq > m->snapshot->seq || m->snapshot->taken_usec < w->not_before) {
                        m->waiters_tail = &w->next;
                        p = &w->next;
                        continue;
                }
                *p = w->next;
                w->fn(m, w->call);
                call_unref(w->call);
                free(w);
        }
        /* waiters_tail must point at the last next pointer. */
        m->waiters_tail = p;
}

static void discovery_done(void *userdata) {
        struct discovery_job *j = userdata;
        struct manager *m = j->manager;

        m->discovery_running = false;
        if (j->result && j->only) {
                if (j->result->error < 0 || !m->snapshot || merge_snapshot(m, j->result, j->only) < 0)
                        m->dirty_all = true;  /* a full pass will follow */
                snapshot_free(j->result);
        } else if (j->result)
                install_snapshot(m, j->result);
        strv_free(j->only);
        svff_ctx_unref(j->ctx);
        free(j);

        if (m->snapshot)
                serve_waiters(m);
        if (m->waiters && !m->shutting_down)
                start_discovery(m);
}

static void discovery_run(void *userdata) {
        struct discovery_job *j = userdata;

        if (j->only)
                j->result = discover_some(j->ctx, j->seq, j->only, j->n_only);
        else
                j->result = discover(j->ctx, j->seq);
        (void) worker_pool_post(j->pool, discovery_done, j);
}

static void start_discovery(struct manager *m) {
        struct discovery_job *j;

        if (m->discovery_running)
                return;

        j = calloc(1, sizeof(*j));
        if (!j)
                goto fail;
        j->manager = m;
        j->pool = m->discovery_pool;
        j->ctx = svff_ctx_ref(m->ctx);
        j->seq = m->sysfs_seq;
        /* Only the PFs svffd changed, while the rest is young enough. */
        if (m->snapshot && m->snapshot->error >= 0 && !m->dirty_all && m->n_dirty_pfs > 0 &&
            now(CLOCK_MONOTONIC) - m->snapshot->taken_usec < m->config.list_max_age_usec) {
                j->only = m->dirty_pfs;
                j->n_only = m->n_dirty_pfs;
                /* NULL-terminated for strv_free */
        } else
                strv_free(m->dirty_pfs);
        m->dirty_pfs = NULL;
        m->n_dirty_pfs = 0;
        if (!j->only)
                m->dirty_all = false;
        if (worker_pool_submit(m->discovery_pool, discovery_run, j) < 0) {
                strv_free(j->only);
                svff_ctx_unref(j->ctx);
                free(j);
                m->dirty_all = true;
                goto fail;
        }
        m->discovery_running = true;
        return;
fail:
        log_error("Failed to start a discovery pass, answering from the last snapshot.");
}

int manager_snapshot_now(struct manager *m) {
        struct snapshot *s = discover(m->ctx, m->sysfs_seq);

        if (!s)
                return log_oom();
        install_snapshot(m, s);
        return s->error;
}

void manager_sysfs_changed(struct manager *m, const char *pf) {
        char **n;

        m->sysfs_seq++;
        if (!pf) {
                m->dirty_all = true;
                return;
        }
        for (size_t i = 0; i < m->n_dirty_pfs; i++)
                if (streq(m->dirty_pfs[i], pf))
                        return;
        n = realloc(m->dirty_pfs, (m->n_dirty_pfs + 2) * sizeof(char *));
        if (!n) {
                m->dirty_all = true;
                return;
        }
        m->dirty_pfs = n;
        n[m->n_dirty_pfs] = strdup(pf);
        if (!n[m->n_dirty_pfs]) {
                m->dirty_all = true;
                n[m->n_dirty_pfs] = NULL;
                return;
        }
        n[++m->n_dirty_pfs] = NULL;
}

void manager_snapshot_update_pf(struct manager *m, struct svff_pf *pf) {
        struct snapshot part = { .pfs = &pf, .n_pfs = 1 };
        char *only[] = { pf->address, NULL };
        size_t k;

        if (m->discovery_running || !m->snapshot || m->snapshot->error < 0) {
                svff_pf_free(pf);
                return;
        }
        for (k = 0; k < m->n_dirty_pfs; k++)
                if (streq(m->dirty_pfs[k], pf->address))
                        break;
        if (k == m->n_dirty_pfs) {
                svff_pf_free(pf);  /* not what the dirty list says changed */
                return;
        }

        part.seq = m->snapshot->seq;
        if (merge_snapshot(m, &part, only) < 0) {
                svff_pf_free(pf);
                return;
        }
        /* Off the dirty list; when nothing else is dirty the snapshot is
         * as new as svffd's last change. */
        free(m->dirty_pfs[k]);
        m->dirty_pfs[k] = m->dirty_pfs[--m->n_dirty_pfs];
        m->dirty_pfs[m->n_dirty_pfs] = NULL;
        if (m->n_dirty_pfs == 0 && !m->dirty_all)
                m->snapshot->seq = m->sysfs_seq;
}

/* Whether s may answer a call that arrived at t: it holds svffd's own
 * changes and was taken no more than list-max-age before the call. An
 * old snapshot is never served while a refresh runs (the answer must
 * show what the host looks like now, e.g. the drift the operator just
 * caused), and an error is not served again once a refresh is due. */
static uint64_t snapshot_not_before(struct manager *m, uint64_t t) {
        return t > m->config.list_max_age_usec ? t - m->config.list_max_age_usec : 0;
}

void manager_with_snapshot(struct manager *m, struct call *call, snapshot_waiter_fn fn) {
        struct snapshot_waiter *w;
        uint64_t not_before = snapshot_not_before(m, now(CLOCK_MONOTONIC));

        if (m->snapshot && m->snapshot->seq >= m->sysfs_seq && m->snapshot->taken_usec >= not_before) {
                fn(m, call);
                return;
        }

        start_discovery(m);
        if (!m->discovery_running && m->snapshot) {
                /* No pass could start (out of memory, shutting down):
                 * the last snapshot, with its age in Status, beats no
                 * answer. */
                fn(m, call);
                return;
        }

        w = calloc(1, sizeof(*w));
        if (!w) {
                if (call)
                        call_error(call, "io.svff.InternalError", NULL);
                return;
        }
        w->call = call_ref(call);
        w->fn = fn;
        w->seq = m->sysfs_seq;
        /* The refresh that is running serves the call if it started
         * recently enough; else discovery_done starts the next one. */
        w->not_before = not_before;
        *m->waiters_tail = w;
        m->waiters_tail = &w->next;
}

bool manager_libvirt_connected(struct manager *m) {
        return hv_connected(m->hv);
}

/* ---- operations ---- */

struct operation *manager_find_operation(struct manager *m, const char *pf) {
        for (struct operation *op = m->operations; op; op = op->next)
                if (streq(op->pf, pf))
                        return op;
        return NULL;
}

int manager_add_operation(struct manager *m, const char *pf, const char *kind,
                          struct call *call, struct operation **ret) {
        struct operation *op;

        if (manager_find_operation(m, pf))
                return -EBUSY;
        op = calloc(1, sizeof(*op));
        if (!op)
                return -ENOMEM;
        op->manager = m;
        snprintf(op->pf, sizeof(op->pf), "%s", pf);
        op->kind = kind;
        op->phase = "queued";
        op->started_usec = now(CLOCK_REALTIME);
        op->call = call_ref(call);
        op->next = m->operations;
        m->operations = op;
        manager_notify_status(m);
        *ret = op;
        return 0;
}

static void check_drained(struct manager *m);

void manager_remove_operation(struct manager *m, struct operation *op) {
        for (struct operation **p = &m->operations; *p; p = &(*p)->next)
                if (*p == op) {
                        *p = op->next;
                        break;
                }
        call_unref(op->call);
        free(op);
        manager_notify_status(m);
        manager_notify_ready(m);
        check_drained(m);
}

void manager_notify_ready(struct manager *m) {
        size_t n = 0;

        if (m->ready || !m->serving)
                return;
        for (struct operation *op = m->operations; op; op = op->next)
                if (op->startup)
                        return;
        m->ready = true;
        if (m->snapshot)
                n = m->snapshot->n_pfs;
        log_debug("Start-up work done, ready.");
        (void) sd_notifyf(false, "READY=1\nSTATUS=Serving; %zu PF(s).", n);
}

/* ---- events ---- */

static void subscriber_gone(struct call *call, void *userdata) {
        struct manager *m = userdata;

        for (size_t i = 0; i < m->n_subscribers; i++)
                if (m->subscribers[i] == call) {
                        m->subscribers[i] = m->subscribers[--m->n_subscribers];
                        call_unref(call);
                        return;
                }
}

/* A subscriber fell behind by more than monitor-backlog-bytes and then
 * read what was waiting: it gets one last event saying how many it
 * missed (so it knows to re-read the state with List), then the server
 * hangs up. */
static void subscriber_overflow(struct call *call, uint64_t n_dropped, void *userdata) {
        struct manager *m = userdata;
        struct json_object *p, *ev;
        bool found = false;

        log_info("Monitor client pid %d uid %u fell behind, %" PRIu64 " events dropped; ending its stream.",
                 (int) call_peer(call)->pid, (unsigned) call_peer(call)->uid, n_dropped);
        call_set_disconnect_handler(call, NULL, NULL);
        for (size_t i = 0; i < m->n_subscribers; i++)
                if (m->subscribers[i] == call) {
                        m->subscribers[i] = m->subscribers[--m->n_subscribers];
                        found = true;
                        break;
                }

        p = json_object_new_object();
        ev = json_object_new_object();
        json_object_object_add(ev, "event", json_object_new_string("events-dropped"));
        json_object_object_add(ev, "timestamp_usec", json_object_new_int64((int64_t) now(CLOCK_REALTIME)));
        json_object_object_add(ev, "dropped", json_object_new_int64((int64_t) MIN(n_dropped, (uint64_t) INT64_MAX)));
        json_object_object_add(p, "event", ev);
        (void) call_reply(call, p);
        json_object_put(p);
        if (found)
                call_unref(call);  /* the subscribers' reference */
}

int manager_subscribe(struct manager *m, struct call *call) {
        if (m->n_subscribers == m->alloc_subscribers) {
                size_t a = m->alloc_subscribers ? m->alloc_subscribers * 2 : 8;
                struct call **n = realloc(m->subscribers, a * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                m->subscribers = n;
                m->alloc_subscribers = a;
        }
        m->subscribers[m->n_subscribers++] = call_ref(call);
        call_set_disconnect_handler(call, subscriber_gone, m);
        call_set_backlog(call, m->config.limits.monitor_backlog, subscriber_overflow, m);
        return 0;
}

void manager_emit(struct manager *m, struct operation *op, struct json_object *event) {
        struct json_object *wrap;
        struct blob *b = NULL;
        char *msg = NULL;
        size_t len;

        if (!event)
                return;
        json_object_object_add(event, "timestamp_usec", json_object_new_int64((int64_t) now(CLOCK_REALTIME)));
        wrap = json_object_new_object();
        if (!wrap) {
                json_object_put(event);
                return;
        }
        json_object_object_add(wrap, "event", event);

        /* Encoded once, queued to every subscriber without a copy: what
         * lagging subscribers hold is one copy of the events they lag by,
         * not one each. */
        if (svff_varlink_encode_reply(wrap, true, &msg, &len) >= 0) {
                b = blob_new(msg, len);
                if (!b)
                        free(msg);
        }
        if (b) {
                for (size_t i = 0; i < m->n_subscribers; i++)
                        (void) call_notify_blob(m->subscribers[i], b);
                if (op && op->call && call_request(op->call)->more && call_is_connected(op->call))
                        (void) call_notify_blob(op->call, b);
                blob_unref(b);
        } else
                log_warning("Failed to encode a '%s' event, not sending it.",
                            json_object_get_string(json_object_object_get(event, "event")));
        json_object_put(wrap);
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
        if (m->shutting_down && !m->operations)
                stop_now(m);
}

static int on_stop_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        struct manager *m = userdata;

        for (struct operation *op = m->operations; op; op = op->next)
                log_warning("The %s of PF %s did not reach a safe point in time (phase %s, %u/%u); its journal "
                            "stays and the next start of svffd finishes it.", op->kind, op->pf, op->phase, op->done,
                            op->total);
        stop_now(m);
        return 0;
}

void manager_begin_shutdown(struct manager *m) {
        struct json_object *p;
        int r;

        if (m->shutting_down) {
                log_notice("Stop asked for again: not waiting for the running operations, their journals stay.");
                stop_now(m);
                return;
        }
        m->shutting_down = true;
        if (m->server)
                server_stop_listening(m->server);

        p = json_object_new_object();
        json_object_object_add(p, "event", json_object_new_object());
        json_object_object_add(json_object_object_get(p, "event"), "event",
                               json_object_new_string("shutdown"));
        json_object_object_add(json_object_object_get(p, "event"), "timestamp_usec",
                               json_object_new_int64((int64_t) now(CLOCK_REALTIME)));
        while (m->n_subscribers > 0) {
                struct call *c = m->subscribers[--m->n_subscribers];

                call_set_disconnect_handler(c, NULL, NULL);
                (void) call_reply(c, p);
                call_unref(c);
        }
        json_object_put(p);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down, finishing the running operations.");

        if (!m->operations) {
                stop_now(m);
                return;
        }
        for (struct operation *op = m->operations; op; op = op->next)
                log_info("Waiting for the %s of PF %s to reach a safe point (phase %s).", op->kind, op->pf,
                         op->phase);
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
        for (struct operation *op = m->operations; op; op = op->next)
                n_ops++;
        (void) sd_notifyf(false, "STATUS=Serving %u connection(s), %u operation(s) in progress.",
                          m->server ? server_n_connections(m->server) : 0, n_ops);
}
