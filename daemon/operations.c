/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assign.h"
#include "bind.h"
#include "busy.h"
#include "classes.h"
#include "fault.h"
#include "interface.h"
#include "json-util.h"
#include "log.h"
#include "numvfs-watch.h"
#include "params.h"
#include "operations.h"
#include "plan-deadlines.h"
#include "journal.h"
#include "reconf-ops.h"
#include "reconfigure.h"
#include "sriov.h"
#include "sysfs.h"

#define DRIVER_NAME_MAX 64
#define VFIO_DRIVER "vfio-pci"

const char *operation_error_name(int r) {
        switch (r) {
        case -ENODEV:
                return SVFF_ERROR_NO_SUCH_DEVICE;
        case -EOPNOTSUPP:
                return SVFF_ERROR_NOT_SRIOV;
        case -ERANGE:
                return SVFF_ERROR_TOO_MANY_VFS;
        case -ENOENT:
        case -ENXIO:
                return SVFF_ERROR_NO_DRIVER;
        case -EBUSY:
                return SVFF_ERROR_DEVICE_BUSY;
        case -ETIMEDOUT:
                return SVFF_ERROR_TIMEOUT;
        case -EINPROGRESS:
                /* another process's count write, met by the worker */
                return SVFF_ERROR_OPERATION_IN_PROGRESS;
        case -EINVAL:
                /* The kernel refused a value the caller was entitled to
                 * ask for (a PF driver rejecting a VF count): not a call
                 * parameter error. */
                return SVFF_ERROR_DEVICE_REFUSED;
        default:
                return SVFF_ERROR_OPERATION_FAILED;
        }
}

static struct json_object *event_new(const char *name, const char *device, const char *pf) {
        struct json_object *e = json_object_new_object();

        if (!e)
                return NULL;
        json_object_object_add(e, "event", json_object_new_string(name));
        if (device)
                json_object_object_add(e, "device", json_object_new_string(device));
        if (pf)
                json_object_object_add(e, "pf", json_object_new_string(pf));
        return e;
}

static void reply_error(struct call *call, int r, const char *device, const char *message) {
        const char *name = operation_error_name(r);
        struct json_object *p = json_object_new_object();

        json_object_object_add(p, "device", json_object_new_string(device));
        json_object_object_add(p, "message", json_object_new_string(message));
        call_error(call, name, p);
        json_object_put(p);
}

static bool driver_name_valid(const char *d) {
        size_t n = strlen(d);

        /* As a plan holds it (SVFF_RECONF_DRIVER_MAX, with its NUL). */
        if (n == 0 || n >= DRIVER_NAME_MAX || streq(d, ".") || streq(d, ".."))
                return false;
        return strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == n;
}

/* ---- Init ---- */

struct init_op {
        struct operation *op;           /* main thread */
        struct worker_pool *pool;
        struct svff_ctx *ctx;
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned numvfs;
        bool numvfs_announced;          /* numvfs-set sent before the class steps */
        char *driver;
        usec_t numvfs_base, numvfs_per_vf;  /* numvfs_timeout_sec, numvfs_timeout_per_vf_msec */
        usec_t bind_base, bind_per_vf;      /* bind_timeout_sec, bind_timeout_per_vf_msec */
        int autoprobe;                  /* -1: leave sriov_drivers_autoprobe off */
        char *reason;                   /* why, when no caller asked ("policy 'x'") */
        char *owner;                    /* recorded with the count; NULL keeps the PF's */
        char *taken_from;               /* the policy that owned the count before an operator's init */
        struct json_object *class_policy;       /* the policy's class members (copy) */
        struct classes_loaded *class_loaded;    /* their settings by VF, as the plan loaded them */
        struct json_object *class_assignments;  /* {"<index>": an assignment's settings} */
        struct json_object *class_recorded;     /* {"<VF>": its class record} before the init */
        /* {"<VF>": true} for each VF assigned to a domain, which keeps
         * it through the init: its guest must find the device it knew */
        struct json_object *class_tenants;
        /* What the init carries out, as its dry run prints it: planned
         * on the worker from the count the PF has when the init starts
         * and whether it has a device class (NULL until then). */
        struct svff_reconf_plan *plan;

        /* worker -> main */
        int r;
        struct svff_error err;
        struct svff_pf *after;          /* the PF once numvfs is set */
        int count_read;                 /* the count init_check_write() read, or -1 */
        bool cancelled;
        /* The class steps: its name (NULL: a bare PCI function), then
         * per VF index what provision + verify returned, until one
         * failed (class_r, class_err): then nothing is bound. */
        const char *class_name;
        struct json_object *class_recs;
        int class_r;
        struct svff_error class_err;
        char class_vf[SVFF_PCI_ADDR_STRLEN];

        /* main */
        unsigned n_failed;
        int first_r;
        char *first_message;
        char first_device[SVFF_PCI_ADDR_STRLEN];

        /* main: while the numvfs write is in the kernel, the VFs it has
         * made so far, counted on the discovery pool every half second,
         * for the caller's progress */
        struct numvfs_watch *numvfs_watch;
        usec_t numvfs_budget;           /* the writes' deadlines together */
};

struct bind_result {
        struct init_op *io;
        unsigned i;
        int r;
        char *message;
};

static void numvfs_watch_stop(struct init_op *io) {
        io->numvfs_watch = numvfs_watch_free(io->numvfs_watch);
}

static void init_op_free(struct init_op *io) {
        if (!io)
                return;
        numvfs_watch_stop(io);
        svff_ctx_unref(io->ctx);
        free(io->driver);
        free(io->reason);
        free(io->owner);
        free(io->taken_from);
        svff_error_free(&io->err);
        svff_pf_free(io->after);
        free(io->first_message);
        json_object_put(io->class_policy);
        classes_loaded_free(io->class_loaded);
        json_object_put(io->class_assignments);
        json_object_put(io->class_recorded);
        json_object_put(io->class_tenants);
        json_object_put(io->class_recs);
        svff_error_free(&io->class_err);
        svff_reconf_plan_free(io->plan);
        free(io);
}

static void init_finish(struct init_op *io, const char *error, struct json_object *parameters,
                        bool keep_journal) {
        struct operation *op = io->op;
        struct manager *m = op->manager;
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

        if (!keep_journal) {
                journal_clear(m, io->pf);
                if (manager_commit(m, &err) < 0 && !error) {
                        json_object_put(parameters);
                        parameters = json_object_new_object();
                        json_object_object_add(parameters, "path", json_object_new_string(svff_store_path(m->store)));
                        json_object_object_add(parameters, "message", json_object_new_string(svff_error_message(&err)));
                        error = SVFF_ERROR_STORE;
                }
        }
        manager_sysfs_changed(m, io->pf);
        if (!error && io->after && streq(io->driver, "vfio-pci")) {
                /* Every bind was verified through the driver link: what
                 * the PF looks like now is known without reading it back.
                 * Only on vfio-pci: a host driver adds what the VF was
                 * read before it had one (a QDMA VF's queues, a NIC VF's
                 * interface), which only a pass reads. */
                for (size_t i = 0; i < io->after->n_vfs; i++) {
                        struct svff_vf *vf = &io->after->vfs[i];
                        char *d = strdup(io->driver), *o = strdup(io->driver);

                        if (!d || !o) {
                                free(d);
                                free(o);
                                goto no_shortcut;
                        }
                        free(vf->driver);
                        free(vf->driver_override);
                        vf->driver = d;
                        vf->driver_override = o;
                }
                manager_snapshot_update_pf(m, TAKE_PTR(io->after));
        }
no_shortcut:

        {
                struct json_object *ev = event_new(error ? "init-failed" : "init-done", io->pf, io->pf);
                struct json_object *msg;

                if (ev && error) {
                        json_object_object_add(ev, "error", json_object_new_string(error));
                        if (json_object_object_get_ex(parameters, "message", &msg))
                                json_object_object_add(ev, "message", json_object_get(msg));
                }
                manager_emit(m, NULL, ev);
        }

        if (op->finished)
                op->finished(m, io->pf, error ? json_object_get_string(json_object_object_get(parameters, "message")) ?: error
                                          : NULL);

        /* Without a caller (a policy), the log and the events are all
         * there is. */
        if (error) {
                log_warning("Init of PF %s%s%s failed: %s", io->pf, io->reason ? " by " : "",
                            io->reason ?: "",
                            json_object_get_string(json_object_object_get(parameters, "message")));
                if (op->call)
                        call_error(op->call, error, parameters);
        } else {
                log_info("PF %s: %u VFs on %s%s%s.", io->pf, io->numvfs, io->driver,
                         io->reason ? " by " : "", io->reason ?: "");
                if (op->call)
                        call_reply(op->call, parameters);
        }
        json_object_put(parameters);
        manager_remove_operation(m, op);
        init_op_free(io);
}

static void init_bind_done(void *userdata) {
        struct init_op *io = userdata;
        struct json_object *p, *vfs;

        if (io->cancelled) {
                struct json_object *e = json_object_new_object();

                json_object_object_add(e, "message", json_object_new_string(
                        "svffd is shutting down; the init was interrupted and is recorded as such: run it again"));
                init_finish(io, SVFF_ERROR_SHUTTING_DOWN, e, true);
                return;
        }

        if (io->n_failed > 0) {
                char msg[1024];

                p = json_object_new_object();
                json_object_object_add(p, "device", json_object_new_string(io->first_device));
                snprintf(msg, sizeof(msg), "%u of %u VFs of PF %s could not be bound to %s; first, %s: %s",
                         io->n_failed, (unsigned) io->after->n_vfs, io->pf, io->driver,
                         io->first_device, strna(io->first_message));
                json_object_object_add(p, "message", json_object_new_string(msg));
                init_finish(io, operation_error_name(io->first_r), p, false);
                return;
        }

        p = json_object_new_object();
        vfs = json_object_new_array_ext((int) io->after->n_vfs);
        for (size_t i = 0; i < io->after->n_vfs; i++) {
                struct json_object *v = json_object_new_object();

                json_object_object_add(v, "address", json_object_new_string(io->after->vfs[i].address));
                json_object_object_add(v, "index", json_object_new_int64(io->after->vfs[i].index));
                json_object_object_add(v, "driver", json_object_new_string(io->driver));
                /* init_record() recorded every VF before binding. */
                json_object_object_add(v, "recorded", json_object_new_boolean(true));
                json_object_object_add(v, "managed", json_object_new_boolean(true));
                json_object_array_add(vfs, v);
        }
        json_object_object_add(p, "pf", json_object_new_string(io->pf));
        json_object_object_add(p, "numvfs", json_object_new_int64(io->numvfs));
        json_object_object_add(p, "driver", json_object_new_string(io->driver));
        json_object_object_add(p, "vfs", vfs);
        if (io->taken_from)
                json_object_object_add(p, "policy", json_object_new_string(io->taken_from));
        json_object_object_add(p, "plan", svff_reconf_plan_to_json(io->plan));
        init_finish(io, NULL, p, false);
}

static void init_bind_progress(void *userdata) {
        struct bind_result *b = userdata;
        struct init_op *io = b->io;
        const struct svff_vf *vf = &io->after->vfs[b->i];
        struct json_object *ev;

        io->op->done++;
        ev = event_new(b->r < 0 ? "vf-bind-failed" : "vf-bound", vf->address, io->pf);
        if (ev) {
                json_object_object_add(ev, "driver", json_object_new_string(io->driver));
                json_object_object_add(ev, "done", json_object_new_int64(io->op->done));
                json_object_object_add(ev, "total", json_object_new_int64(io->op->total));
                if (b->r < 0) {
                        json_object_object_add(ev, "error", json_object_new_string(operation_error_name(b->r)));
                        json_object_object_add(ev, "message", json_object_new_string(strna(b->message)));
                }
        }
        manager_emit(io->op->manager, io->op, ev);

        if (b->r < 0) {
                log_warning("Binding VF %s to %s failed: %s", vf->address, io->driver, strna(b->message));
                if (io->n_failed++ == 0) {
                        io->first_r = b->r;
                        io->first_message = TAKE_PTR(b->message);
                        snprintf(io->first_device, sizeof(io->first_device), "%s", vf->address);
                }
        }
        free(b->message);
        free(b);
}

static bool init_bind_stop(void *userdata) {
        struct init_op *io = userdata;

        if (worker_pool_cancelled(io->pool))
                io->cancelled = true;
        return io->cancelled;
}

static void init_bind_one(void *userdata, size_t k, int r, const char *message) {
        struct init_op *io = userdata;
        struct bind_result *b = calloc(1, sizeof(*b));

        if (!b) {
                io->cancelled = true;
                return;
        }
        b->io = io;
        b->i = (unsigned) k;
        b->r = r;
        if (r < 0)
                b->message = strdup(message);
        (void) worker_pool_post(io->pool, init_bind_progress, b);
}

/* The plan's bind step, every VF in turn: each one's result goes to
 * the caller as it comes. */
static void init_bind_run(void *userdata) {
        struct init_op *io = userdata;
        _cleanup_free_ const char **vfs = calloc(io->after->n_vfs + 1, sizeof(char *));

        if (!vfs)
                io->cancelled = true;
        for (size_t i = 0; vfs && i < io->after->n_vfs; i++)
                vfs[i] = io->after->vfs[i].address;
        if (vfs)
                (void) reconf_ops_bind(io->ctx, io->pf, io->driver, vfs, io->after->n_vfs, io->bind_base,
                                       io->bind_per_vf, init_bind_stop, init_bind_one, io);
        if (io->autoprobe >= 0 && !io->cancelled) {
                _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

                /* Not fatal: the VFs are bound; the setting only affects
                 * VFs created outside svff. */
                if (svff_pf_set_autoprobe(io->ctx, io->pf, io->autoprobe, &err) < 0)
                        svff_ctx_log(io->ctx, LOG_WARNING, __FILE__, __LINE__, __func__,
                                     "%s, ignoring.", svff_error_message(&err));
        }
        (void) worker_pool_post(io->pool, init_bind_done, io);
}

/* The policy an init by owner would take pf's count from: the one that
 * owns it now, when the init is the operator's; else NULL. Borrowed
 * from the store. */
static const char *policy_taken(struct manager *m, const char *pf, const char *owner) {
        const char *prev = svff_store_get_pf_owner(m->store, pf);

        if (!owner || !streq(owner, SVFF_PF_OWNER_OPERATOR) || !prev ||
            !strneq(prev, SVFF_PF_OWNER_POLICY_PREFIX, strlen(SVFF_PF_OWNER_POLICY_PREFIX)))
                return NULL;
        return prev + strlen(SVFF_PF_OWNER_POLICY_PREFIX);
}

/* Whether the init's plan writes the count, which makes every VF anew. */
static bool init_wrote_count(const struct init_op *io) {
        for (size_t i = 0; io->plan && i < io->plan->n_steps; i++)
                if (io->plan->steps[i].action == SVFF_RECONF_DO_NUMVFS)
                        return true;
        return false;
}

/* Records the PF's desired state and every VF (original driver first
 * seen, kept across re-inits), drops the records of VFs the new count
 * destroyed. */
static int init_record(struct init_op *io) {
        struct manager *m = io->op->manager;
        struct json_object *vfs = svff_store_vfs(m->store), *entry;
        const char *prev;
        char **gone = NULL;
        size_t n_gone = 0;
        int r;

        /* An operator's init takes the count from the policy that had
         * it: the reply says so, and how to hand it back. */
        prev = policy_taken(m, io->pf, io->owner);
        if (prev) {
                free(io->taken_from);
                io->taken_from = strdup(prev);
        }
        r = svff_store_set_pf(m->store, io->pf, io->numvfs, io->driver);
        if (r >= 0 && io->owner)
                r = svff_store_set_pf_owner(m->store, io->pf, io->owner);
        if (r < 0)
                return r;

        json_object_object_foreach(vfs, key, rec) {
                const char *pf;

                if (svff_json_get_string(rec, "pf", &pf) < 0 || !streq(pf, io->pf))
                        continue;
                if (svff_pf_find_vf(io->after, key))
                        continue;
                char **n = realloc(gone, (n_gone + 1) * sizeof(char *));
                if (!n) {
                        free(gone);
                        return -ENOMEM;
                }
                gone = n;
                gone[n_gone++] = key;
        }
        /* One line per shrink, however many VFs it took; Monitor still
         * gets an event per VF. */
        if (n_gone == 1)
                log_info("VF %s no longer exists after setting %u VFs on %s; dropping its record.", gone[0],
                         io->numvfs, io->pf);
        else if (n_gone > 1)
                log_info("%zu VFs (%s to %s) no longer exist after setting %u VFs on %s; dropping their records.",
                         n_gone, gone[0], gone[n_gone - 1], io->numvfs, io->pf);
        for (size_t i = 0; i < n_gone; i++) {
                struct json_object *ev = event_new("vf-forgotten", gone[i], io->pf);

                if (ev)
                        json_object_object_add(ev, "message",
                                               json_object_new_string("the new VF count removed this VF"));
                manager_emit(m, io->op, ev);
                svff_store_remove_vf(m->store, gone[i]);
        }
        free(gone);

        for (size_t i = 0; i < io->after->n_vfs; i++) {
                const struct svff_vf *vf = &io->after->vfs[i];
                const char *orig = vf->driver;

                if (svff_store_get_vf(m->store, vf->address, NULL, &orig) == 0)
                        orig = vf->driver;
                r = svff_store_set_vf(m->store, vf->address, io->pf, vf->index, orig, io->driver);
                if (r < 0)
                        return r;
                if (io->class_name) {
                        struct json_object *crec = NULL;
                        char ckey[16];

                        snprintf(ckey, sizeof(ckey), "%u", vf->index);
                        if (io->class_recs && json_object_object_get_ex(io->class_recs, ckey, &crec))
                                crec = json_object_get(crec);
                        /* A VF not provisioned (a step failed before it)
                         * that the count's write made anew has no class
                         * state svff could stand by; one the init did not
                         * re-create keeps its record, which status then
                         * compares with the device. */
                        else if (!init_wrote_count(io) && io->class_recorded &&
                                 json_object_object_get_ex(io->class_recorded, vf->address, &crec))
                                crec = json_object_get(crec);
                        r = classes_record_vf(m, vf->address, crec);
                        if (r < 0)
                                return r;
                }
        }

        entry = json_object_new_object();
        if (!entry)
                return -ENOMEM;
        json_object_object_add(entry, "op", json_object_new_string("init"));
        json_object_object_add(entry, "numvfs", json_object_new_int64(io->numvfs));
        json_object_object_add(entry, "driver", json_object_new_string(io->driver));
        json_object_object_add(entry, "phase", json_object_new_string("bind"));
        json_object_object_add(entry, "started_usec", json_object_new_int64((int64_t) io->op->started_usec));
        return journal_set(m, io->pf, entry);
}

static void init_numvfs_event(struct init_op *io) {
        struct json_object *ev = event_new("numvfs-set", io->pf, io->pf);

        if (ev) {
                json_object_object_add(ev, "total", json_object_new_int64(io->numvfs));
                json_object_object_add(ev, "driver", json_object_new_string(io->driver));
        }
        manager_emit(io->op->manager, io->op, ev);
}

/* The count is set and the class steps follow on the worker: Monitor
 * hears of the count first, as it happened. */
static void init_numvfs_announce(void *userdata) {
        struct init_op *io = userdata;

        numvfs_watch_stop(io);
        io->numvfs_announced = true;
        io->op->phase = "provision";
        init_numvfs_event(io);
}

static void init_numvfs_done(void *userdata) {
        struct init_op *io = userdata;
        struct manager *m = io->op->manager;
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *p;
        int r;

        numvfs_watch_stop(io);
        manager_sysfs_changed(m, io->pf);
        /* The deadlines as the dry run shows them: svffd's settings. */
        plan_set_deadlines(m, io->plan);

        if (io->r < 0) {
                p = json_object_new_object();
                json_object_object_add(p, "device", json_object_new_string(io->pf));
                json_object_object_add(p, "message", json_object_new_string(svff_error_message(&io->err)));
                init_finish(io, operation_error_name(io->r), p, false);
                return;
        }

        r = init_record(io);
        if (r >= 0)
                r = manager_commit(m, &err);
        if (r < 0) {
                char msg[1024];

                /* The VFs exist but the store does not say so: stop before
                 * binding anything it could not restore. */
                p = json_object_new_object();
                json_object_object_add(p, "path", json_object_new_string(svff_store_path(m->store)));
                snprintf(msg, sizeof(msg), "PF %s now has %u VFs, but recording them failed (%s); "
                         "nothing was bound. Free space in the state directory and run init again.",
                         io->pf, io->numvfs, svff_error_is_set(&err) ? svff_error_message(&err) : strerror(-r));
                json_object_object_add(p, "message", json_object_new_string(msg));
                init_finish(io, SVFF_ERROR_STORE, p, true);
                return;
        }

        if (io->class_r < 0) {
                char msg[1400];

                /* A VF's class step failed (not the PF's, not the stop). */
                if (*io->class_vf && io->class_r != -ESHUTDOWN)
                        metrics_count_provision_failure(m->metrics);

                p = json_object_new_object();
                json_object_object_add(p, "device", json_object_new_string(*io->class_vf ? io->class_vf : io->pf));
                if (init_wrote_count(io))
                        snprintf(msg, sizeof(msg), "%s; PF %s has its %u VFs, none was bound to %s: fix that and "
                                 "run init again", svff_error_message(&io->class_err), io->pf, io->numvfs,
                                 io->driver);
                else
                        snprintf(msg, sizeof(msg), "%s; PF %s keeps its %u VFs, and the init bound none of them to "
                                 "%s: fix that and run init again", svff_error_message(&io->class_err), io->pf,
                                 io->numvfs, io->driver);
                json_object_object_add(p, "message", json_object_new_string(msg));
                init_finish(io, operation_error_name(io->class_r), p, false);
                return;
        }

        io->op->phase = "bind";
        io->op->total = (unsigned) io->after->n_vfs;
        if (!io->numvfs_announced)
                init_numvfs_event(io);

        r = worker_pool_submit(io->pool, init_bind_run, io);
        if (r < 0) {
                p = json_object_new_object();
                json_object_object_add(p, "message", json_object_new_string("svffd is shutting down"));
                init_finish(io, SVFF_ERROR_SHUTTING_DOWN, p, true);
        }
}

/* The target driver must be registered before the count changes: the
 * write destroys the working VFs, and with no driver to bind them to the
 * new ones would stay unbound. svffd loads no module itself (its unit
 * has ProtectKernelModules=yes, and which module provides a driver, with
 * which parameters, is the operator's call), so "exists" means
 * bus/pci/drivers/<driver> is there now. */
static int init_check_driver(struct init_op *io) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, "bus/pci/drivers/%s", io->driver) < 0)
                return svff_error_set(&io->err, -ENOMEM, "Out of memory");
        r = svff_sysfs_exists(svff_ctx_get_rootfd(io->ctx), path);
        if (r < 0)
                return svff_error_set_errno(&io->err, r, "Cannot look up PCI driver '%s' for PF %s", io->driver,
                                            io->pf);
        if (r == 0)
                return svff_error_set(&io->err, -ENXIO,
                                      "No PCI driver '%s' is registered (no bus/pci/drivers/%s), so the VFs of "
                                      "PF %s could not be bound to it; nothing was changed: load its module "
                                      "('modprobe %s') and retry, or name another driver with --driver",
                                      io->driver, io->driver, io->pf, io->driver);
        return 0;
}

struct class_progress {
        struct init_op *io;
        char vf[SVFF_PCI_ADDR_STRLEN];
        char *describe;
        bool unchanged;                 /* already as recorded: nothing sent */
};

static void init_class_progress(void *userdata) {
        struct class_progress *cp = userdata;
        struct init_op *io = cp->io;
        struct json_object *ev = event_new("vf-provisioned", cp->vf, io->pf);

        if (ev) {
                char msg[512];

                snprintf(msg, sizeof(msg), "%s: %s%s", io->class_name, cp->describe ?: "provisioned",
                         cp->unchanged ? " (as recorded, left alone)" : "");
                json_object_object_add(ev, "message", json_object_new_string(msg));
        }
        manager_emit(io->op->manager, io->op, ev);
        log_debug("VF %s: %s class %s.", cp->vf, io->class_name,
                  cp->unchanged ? "already as recorded, left alone" : "provisioned and verified");
        free(cp->describe);
        free(cp);
}

/* The class's plan for the new count, before anything changes: a PF
 * that cannot provide the resources is refused here, numvfs untouched.
 * Then the PF-wide changes the plan lists. */
static int init_class_plan(struct init_op *io) {
        _cleanup_(json_object_putp) struct json_object *plan = NULL;
        bool prepared;
        int r;

        r = classes_plan_prepare_sync(io->ctx, io->pf, io->numvfs, io->class_policy, io->class_assignments,
                                      &plan, &io->class_name, &prepared, &io->class_loaded, &io->err);
        if (r < 0 && !prepared) {
                _cleanup_free_ char *msg = strdup(svff_error_message(&io->err));

                svff_error_free(&io->err);
                return svff_error_set(&io->err, r, "%s; nothing was changed", strna(msg));
        }
        return r < 0 ? r : 0;
}

/* Provision + verify every VF, in index order, before any is bound:
 * stops at the first that fails. */
static void init_class_provision_with(struct init_op *io, struct classes_open *co);

static void init_class_provision(struct init_op *io) {
        struct classes_open *co = NULL;
        int r;

        io->class_recs = json_object_new_object();
        if (!io->class_recs) {
                io->class_r = svff_error_set(&io->class_err, -ENOMEM, "Out of memory");
                return;
        }
        /* The PF read and its class opened once for all its VFs. */
        r = classes_open_sync(io->ctx, io->pf, &co, &io->class_err);
        if (r < 0) {
                io->class_r = r;
                return;
        }
        if (r > 0)
                init_class_provision_with(io, co);
        classes_close(co);
}

static void init_class_provision_with(struct init_op *io, struct classes_open *co) {
        unsigned n = 0;

        for (size_t s = 0; s < io->plan->n_steps; s++) {
                const struct svff_reconf_step *step = &io->plan->steps[s];
                const struct svff_vf *vf;
                struct json_object *asg = NULL, *rec = NULL, *state = NULL;
                struct class_progress *cp;
                char key[16];
                unsigned i;
                int r;

                if (step->action != SVFF_RECONF_DO_PROVISION)
                        continue;
                i = n++;
                vf = svff_pf_vf_at(io->after, step->numvfs);
                if (!vf) {
                        io->class_r = svff_error_set(&io->class_err, -ENODEV,
                                                     "PF %s has no VF %u to provision (no virtfn%u)", io->pf,
                                                     step->numvfs, step->numvfs);
                        return;
                }
                if (worker_pool_cancelled(io->pool)) {
                        io->class_r = svff_error_set(&io->class_err, -ESHUTDOWN,
                                                     "svffd is shutting down; VF %s and the rest were not provisioned",
                                                     vf->address);
                        snprintf(io->class_vf, sizeof(io->class_vf), "%s", vf->address);
                        return;
                }
                snprintf(key, sizeof(key), "%u", vf->index);
                if (io->class_assignments)
                        (void) json_object_object_get_ex(io->class_assignments, key, &asg);
                if (fault_inject("fail-provision", i + 1))
                        r = svff_error_set(&io->class_err, -EIO, "Provisioning VF %s failed (injected)",
                                           vf->address);
                else {
                        struct json_object *recorded = NULL;

                        /* A VF on a host driver (one released, then
                         * re-probed) holds what the class sets; it goes
                         * to io->driver next, so it leaves that one first. */
                        r = 0;
                        if (vf->driver && !streq(vf->driver, io->driver))
                                r = svff_dev_unbind(io->ctx, vf->address, &io->class_err);
                        if (r >= 0 && io->class_recorded)
                                (void) json_object_object_get_ex(io->class_recorded, vf->address, &recorded);
                        if (r >= 0)
                                r = classes_ensure_open(co, vf->index, io->class_policy, asg, recorded,
                                                        io->class_tenants && json_object_object_get_ex(
                                                                io->class_tenants, vf->address, NULL),
                                                        io->class_loaded, &rec, &io->class_err);
                }
                if (r < 0) {
                        io->class_r = r;
                        snprintf(io->class_vf, sizeof(io->class_vf), "%s", vf->address);
                        return;
                }
                if (r == 0)
                        return;  /* the class went away (the PF changed driver): a bare function */
                json_object_object_add(io->class_recs, key, rec);
                /* A crash between two VFs' class steps: the journal says
                 * init (phase numvfs); the next init provisions again. */
                fault_point("after-provision", i + 1);
                cp = calloc(1, sizeof(*cp));
                if (cp) {
                        cp->io = io;
                        snprintf(cp->vf, sizeof(cp->vf), "%s", vf->address);
                        cp->unchanged = r == 2;
                        if (json_object_object_get_ex(rec, "state", &state))
                                cp->describe = classes_describe(io->class_name, state);
                        if (worker_pool_post(io->pool, init_class_progress, cp) < 0) {
                                free(cp->describe);
                                free(cp);
                        }
                }
        }
}

/* The count the PF has now, which the init plans from (read here: the
 * snapshot may be older). After the device class's checks, which name
 * a PF that is not there or not SR-IOV as such. */
static int init_read_count(struct init_op *io, unsigned *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        if (io->count_read >= 0) {
                *ret = (unsigned) io->count_read;
                return 0;
        }
        r = svff_sysfs_readf(svff_ctx_get_rootfd(io->ctx), &s, "bus/pci/devices/%s/sriov_numvfs", io->pf);
        if (r >= 0)
                r = svff_numvfs_parse(s, ret);
        if (r < 0)
                return svff_error_set_errno(&io->err, r, "Cannot read the VF count of PF %s", io->pf);
        return 0;
}

/* Far above what a read of the count takes with nothing holding the PF
 * (microseconds; a slow test build, milliseconds): a refusal never comes
 * from a slow read, and the worker is held for at most this long. */
#define INIT_COUNT_READ_TIMEOUT_USEC (1 * USEC_PER_SEC)

/* A write of the count by another process that svffd had not met when
 * an operator asked for the init (no read of the count had waited for it
 * yet): every read of the PF below would wait behind it, holding this
 * worker and whatever is queued after it. The kernel takes the same lock
 * to bind or unbind the PF's driver. The count is read first under a
 * deadline; any other failure is left to the steps below to name. A
 * policy's Init is not refused: it waits as before, since the policy
 * would not look at the PF again (its pass over the PF read the count
 * from a fresh snapshot, which met any write begun before it). */
static int init_check_write(struct init_op *io) {
        _cleanup_free_ char *path = NULL;
        uint64_t v;
        int r;

        if (!io->op->call)
                return 0;
        if (asprintf(&path, "bus/pci/devices/%s/sriov_numvfs", io->pf) < 0)
                return svff_error_set(&io->err, -ENOMEM, "Out of memory");
        r = svff_sysfs_read_u64_deadline(io->ctx, path, INIT_COUNT_READ_TIMEOUT_USEC, &v);
        if (r == -ETIMEDOUT)
                svff_ctx_log(io->ctx, LOG_INFO, __FILE__, __LINE__, __func__,
                             "PF %s: its VF count did not answer within %llu ms.", io->pf,
                             (unsigned long long) (INIT_COUNT_READ_TIMEOUT_USEC / USEC_PER_MSEC));
        else if (r == -EBUSY)
                svff_ctx_log(io->ctx, LOG_INFO, __FILE__, __LINE__, __func__,
                             "PF %s: an earlier read of its VF count is still waiting.", io->pf);
        else {
                /* read: init_read_count() takes it from here */
                if (r >= 0 && v <= UINT16_MAX)
                        io->count_read = (int) v;
                return 0;
        }
        return svff_error_set(&io->err, -EINPROGRESS,
                              "Another process is writing the VF count of PF %s (or binding or unbinding its driver), "
                              "and the kernel holds the PF until that ends: the init would wait behind it. Nothing "
                              "was changed; try again then.", io->pf);
}

/* The init's plan, from the count the PF had and whether its device
 * class provisions each VF (init_class_plan() found one). */
static int init_plan(struct init_op *io, unsigned from) {
        struct svff_reconf_input in = {
                .pf = io->pf, .numvfs = from, .driver = io->driver, .provision = io->class_name != NULL,
        };
        int r;

        r = svff_reconf_plan_new_init(&in, io->numvfs, &io->plan);
        if (r < 0)
                return svff_error_set_errno(&io->err, r, "Planning the init of PF %s to %u VFs failed", io->pf,
                                            io->numvfs);
        return 0;
}

/* The checks, then the plan's steps up to the bind, which follows once
 * the VFs are recorded (init_numvfs_done()). Its numvfs steps are one
 * call: the kernel's count goes through 0 after every check that can
 * refuse it (sriov.h); at the count the PF has there is no such step,
 * and the call writes nothing. */
static void init_numvfs_run(void *userdata) {
        struct init_op *io = userdata;
        unsigned from = 0;

        io->r = init_check_write(io);
        if (io->r >= 0)
                io->r = init_check_driver(io);
        if (io->r >= 0)
                io->r = init_class_plan(io);
        if (io->r >= 0)
                io->r = init_read_count(io, &from);
        if (io->r >= 0)
                io->r = init_plan(io, from);
        if (io->r >= 0)
                io->r = reconf_ops_numvfs(io->ctx, io->pf, io->numvfs, io->numvfs_base, io->numvfs_per_vf,
                                          &io->after, &io->err);
        /* The PF not read back: once more, for the reason. */
        if (io->r >= 0 && !io->after) {
                _cleanup_(svff_error_free) struct svff_error lerr = SVFF_ERROR_NULL;
                int r = svff_pf_load(io->ctx, io->pf, &io->after, &lerr);

                if (r < 0)
                        io->r = svff_error_set(&io->err, r, "PF %s could not be read after its VF count was set to "
                                               "%u: %s", io->pf, io->numvfs,
                                               svff_error_is_set(&lerr) ? svff_error_message(&lerr) : strerror(-r));
        }
        if (io->r >= 0 && io->after->n_vfs != io->numvfs) {
                io->r = svff_error_set(&io->err, -EIO, "PF %s reports %u VFs but %zu virtfn links exist",
                                       io->pf, io->numvfs, io->after->n_vfs);
        }
        if (io->r >= 0 && io->class_name) {
                /* Completions run in the order posted: this one before
                 * the class steps' progress and init_numvfs_done. */
                (void) worker_pool_post(io->pool, init_numvfs_announce, io);
                init_class_provision(io);
        }
        (void) worker_pool_post(io->pool, init_numvfs_done, io);
}

static void init_numvfs_seen(void *userdata, unsigned n) {
        struct init_op *io = userdata;
        struct json_object *ev;
        char msg[160];

        snprintf(msg, sizeof(msg), "%u of %u VFs so far; the write is given up after %llu s", n, io->numvfs,
                 (unsigned long long) (io->numvfs_budget / USEC_PER_SEC));
        ev = event_new("numvfs-progress", io->pf, io->pf);
        if (ev) {
                json_object_object_add(ev, "done", json_object_new_int64(n));
                json_object_object_add(ev, "total", json_object_new_int64(io->numvfs));
                json_object_object_add(ev, "deadline_msec",
                                       json_object_new_int64((int64_t) (io->numvfs_budget / USEC_PER_MSEC)));
                json_object_object_add(ev, "message", json_object_new_string(msg));
        }
        manager_emit(io->op->manager, io->op, ev);
}

/* The deadlines of the writes from from VFs to to (through 0). */
static uint64_t numvfs_budget(struct manager *m, unsigned from, unsigned to) {
        uint64_t total = 0;

        if (from != to && from > 0)
                total += svff_config_numvfs_timeout(&m->config, from);
        if (from != to && to > 0)
                total += svff_config_numvfs_timeout(&m->config, to);
        return total;
}

struct init_params {
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned numvfs;        /* NUMVFS_UNSET when not given */
        const char *driver;
        bool policy;
        bool dry_run;
};

#define NUMVFS_UNSET UINT_MAX

static const struct param init_param_table[] = {
        { "pf", PARAM_ADDRESS, true, offsetof(struct init_params, pf) },
        { "numvfs", PARAM_UNSIGNED, false, offsetof(struct init_params, numvfs), 65535,
          "an integer from 0 to 65535" },
        { "driver", PARAM_STRING_OR_NULL, false, offsetof(struct init_params, driver), 0,
          "a driver name such as vfio-pci" },
        { "policy", PARAM_BOOL, false, offsetof(struct init_params, policy), 0, "true or false" },
        { "dry_run", PARAM_BOOL, false, offsetof(struct init_params, dry_run), 0, "true or false" },
        PARAM_END
};

/* What an init of pf would do, once its refusals are past: its plan,
 * with the device class's for the new count, from a snapshot fresh
 * enough for the call. Nothing changes. What the snapshot tells is
 * refused as the init would be; the driver's registration is checked
 * when the init runs. */
static void init_dry_run(struct manager *m, struct call *call, const char *pf, unsigned numvfs, const char *driver,
                         const char *owner) {
        const char *taken = policy_taken(m, pf, owner);
        const struct svff_pf *found;
        struct svff_reconf_plan *plan = NULL;
        struct svff_reconf_input in;
        struct json_object *reply;
        int r;

        found = manager_snapshot_pf(m, pf);
        if (!found) {
                call_errorf(call, SVFF_ERROR_NO_SUCH_DEVICE, "device", pf,
                            "No SR-IOV PF %s; 'svffctl list' shows the PFs there are.", pf);
                return;
        }
        if (svff_pf_is_unread(found)) {
                call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", pf,
                            "Another process is writing the VF count of PF %s, and its count cannot be read until "
                            "that write ends; plan the init then.", pf);
                return;
        }
        if (numvfs != found->numvfs && !found->driver) {
                call_errorf(call, SVFF_ERROR_NO_DRIVER, "device", pf,
                            "PF %s has no driver bound, and the kernel creates VFs only through the PF driver: "
                            "load and bind it (e.g. 'modprobe <driver>') first.", pf);
                return;
        }
        if (numvfs == found->numvfs && found->vf_missing != UINT_MAX) {
                call_errorf(call, SVFF_ERROR_OPERATION_FAILED, "device", pf,
                            "PF %s has %u VFs but no VF %u (no virtfn%u): an init of the same count cannot make it "
                            "again. 'svffctl reconf %s %u --cycle' does, through 0.", pf, found->numvfs,
                            found->vf_missing, found->vf_missing, pf, numvfs);
                return;
        }
        if (numvfs > found->totalvfs) {
                call_errorf(call, SVFF_ERROR_TOO_MANY_VFS, "device", pf,
                            "PF %s supports at most %u VFs (sriov_totalvfs: its driver's limit, which may be below "
                            "the device's), not %u.", pf, found->totalvfs, numvfs);
                return;
        }
        in = (struct svff_reconf_input) { .pf = pf, .numvfs = found->numvfs, .driver = driver };
        r = svff_reconf_plan_new_init(&in, numvfs, &plan);
        reply = r >= 0 ? json_object_new_object() : NULL;
        if (!reply) {
                svff_reconf_plan_free(plan);
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Planning the init of PF %s failed: %s.", pf,
                            strerror(r < 0 ? -r : ENOMEM));
                return;
        }
        json_object_object_add(reply, "pf", json_object_new_string(pf));
        json_object_object_add(reply, "dry_run", json_object_new_boolean(true));
        json_object_object_add(reply, "executable", json_object_new_boolean(true));
        /* The policy the init would take the count from, as its reply
         * would name it (init_record()). */
        if (taken)
                json_object_object_add(reply, "policy", json_object_new_string(taken));
        plan_set_deadlines(m, plan);
        json_object_object_add(reply, "plan", svff_reconf_plan_to_json(plan));
        /* The init refuses what its device class cannot plan. */
        reconf_dry_run_reply(m, call, reply, plan, true);
}

/* The init the call asks for (in, decoded), checked against the state. */
static void init_request(struct manager *m, struct call *call, const struct init_params *given) {
        const struct init_params in = *given;
        char owner[256] = SVFF_PF_OWNER_OPERATOR;
        const char *pf = in.pf, *driver;
        int autoprobe = -1;
        unsigned numvfs;
        int r;

        driver = in.driver;

        if (in.policy) {
                const struct svff_pf *p = NULL;
                const struct svff_policy *pol = NULL;

                /* The count goes back to the PF's policy: it is the
                 * policy's count and driver, or nothing. */
                if (in.numvfs != NUMVFS_UNSET || in.driver) {
                        call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "policy",
                                    "With 'policy', the count and driver are the policy's: give neither "
                                    "'numvfs' nor 'driver'.");
                        return;
                }
                p = manager_snapshot_pf(m, pf);
                if (p)
                        pol = svff_config_find_policy(&m->config, pf, p->vendor_id, p->device_id, p->netdev);
                if (!pol || pol->numvfs < 0) {
                        call_errorf(call, SVFF_ERROR_NO_POLICY, "device", pf,
                                    "No policy with a VF count matches PF %s, so there is none to hand its "
                                    "count to; nothing was changed. Add one to svff.conf and reload svffd "
                                    "('systemctl reload svffd'); 'svffctl list' shows the policy of each PF.", pf);
                        return;
                }
                numvfs = (unsigned) pol->numvfs;
                driver = pol->vf_driver ?: m->config.vf_driver;
                autoprobe = pol->autoprobe;
                snprintf(owner, sizeof(owner), SVFF_PF_OWNER_POLICY_PREFIX "%s", pol->name);
                goto checked;
        }

        if (in.numvfs == NUMVFS_UNSET) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "numvfs",
                            "Parameter 'numvfs' is required.");
                return;
        }
        numvfs = in.numvfs;
        if (!driver)
                driver = m->config.vf_driver;
checked:
        if (!driver_name_valid(driver)) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "driver",
                            "'%.64s' is not a driver name (letters, digits, '_', '-', '.').", driver);
                return;
        }

        /* An init provisions and binds every VF of the PF: not while
         * another operation changes it, nor one of its VFs whose attach,
         * detach, pause or unpause runs or is not resolved yet. */
        if (pf_busy_refuse(m, pf, pf, PF_BUSY_OPERATION | PF_BUSY_ASSIGN, call))
                return;
        r = reconf_journaled(m, pf);
        if (r >= 0) {
                call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", pf,
                            "An interrupted reconf of PF %s to %d VFs is journaled: run 'svffctl reconf %s %d' "
                            "to complete it first.", pf, r, pf, r);
                return;
        }
        /* Nor while a count write is still in the kernel, behind which
         * its read of the count and its own write would wait. */
        if (pf_busy_refuse(m, pf, pf, PF_BUSY_WRITE, call))
                return;
        /* Changing the count destroys every VF: with assignments that is
         * a reconf, which keeps them. The count is the one recorded and
         * the one last seen on the host, since either may have drifted. */
        if (reconf_pf_has_assignments(m, pf)) {
                const struct svff_pf *seen = manager_snapshot_pf(m, pf);
                unsigned current = 0;

                (void) svff_store_get_pf(m->store, pf, &current, NULL);
                if (seen && seen->numvfs != numvfs)
                        current = seen->numvfs;
                if (current != numvfs) {
                        call_errorf(call, SVFF_ERROR_DEVICE_BUSY, "device", pf,
                                    "VFs of PF %s are assigned to domains, and changing its VF count from %u to %u "
                                    "destroys every VF: use 'svffctl reconf %s %u', which keeps the assignments.",
                                    pf, current, numvfs, pf, numvfs);
                        return;
                }
                /* The same count on another driver would take the
                 * assigned VFs from vfio-pci under their domains. */
                if (!streq(driver, VFIO_DRIVER)) {
                        call_errorf(call, SVFF_ERROR_DEVICE_BUSY, "device", pf,
                                    "VFs of PF %s are assigned to domains and must stay on %s; binding them to "
                                    "'%s' would take them from the domains: detach them first ('svffctl detach VF').",
                                    pf, VFIO_DRIVER, driver);
                        return;
                }
        }
        if (in.dry_run) {
                init_dry_run(m, call, pf, numvfs, driver, owner);
                return;
        }
        (void) operation_init_start(m, call, pf, numvfs, driver, autoprobe, NULL, owner);
}

/* A dry run's parameters, owned through the wait for a snapshot. */
struct init_wait {
        struct init_params in;          /* .driver points below */
        char *driver;
};

static void init_wait_free(void *userdata) {
        struct init_wait *w = userdata;

        if (!w)
                return;
        free(w->driver);
        free(w);
}

static void init_with_snapshot(struct manager *m, struct call *call, void *userdata) {
        struct init_wait *w = userdata;

        init_request(m, call, &w->in);
        init_wait_free(w);
}

static void method_init(struct manager *m, struct call *call, void *params) {
        const struct init_params in = *(const struct init_params *) params;
        struct init_wait *w;

        if (!in.dry_run) {
                init_request(m, call, &in);
                return;
        }
        /* A dry run plans from the PF as it is now: a snapshot fresh
         * enough for the call first. */
        w = calloc(1, sizeof(*w));
        if (!w || (in.driver && !(w->driver = strdup(in.driver)))) {
                free(w);
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        w->in = in;
        w->in.driver = w->driver;
        manager_with_snapshot(m, call, init_with_snapshot, w, init_wait_free);
}

int operation_init_start(struct manager *m, struct call *call, const char *pf, unsigned numvfs,
                         const char *driver, int autoprobe, const char *reason, const char *owner) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *entry, *ev;
        struct operation *op;
        struct init_op *io;
        bool oom = false;
        int r;

        LOG_CONTEXT(.pf = pf, .operation = "init");
        op = manager_find_operation(m, pf);
        if (op) {
                if (call)
                        call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", pf,
                                    "An %s of PF %s is in progress (%s, %u/%u); wait for it ('svffctl status').",
                                    op->kind, pf, op->phase, op->done, op->total);
                return -EBUSY;
        }

        io = calloc(1, sizeof(*io));
        if (!io) {
                if (call)
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return -ENOMEM;
        }
        io->pool = m->ops_pool;
        io->count_read = -1;
        io->ctx = svff_ctx_ref(m->ctx);
        snprintf(io->pf, sizeof(io->pf), "%s", pf);
        io->numvfs = numvfs;
        io->driver = strdup(driver);
        io->autoprobe = autoprobe;
        io->reason = reason ? strdup(reason) : NULL;
        io->owner = owner ? strdup(owner) : NULL;
        io->numvfs_base = m->config.numvfs_timeout_usec;
        io->numvfs_per_vf = m->config.numvfs_timeout_per_vf_usec;
        io->bind_base = m->config.bind_timeout_usec;
        io->bind_per_vf = m->config.bind_timeout_per_vf_usec;
        io->class_policy = classes_policy_settings(m, pf);
        io->class_assignments = classes_assignment_settings(m, pf);
        /* A VF already as its record says is left alone: a re-init of the
         * same count does not reset the controllers of running guests.
         * One whose device changed under an assigned VF (its NVMe
         * subsystem renamed) is refused, as a reconf refuses it, rather
         * than given to that guest as another device. */
        json_object_object_foreach(svff_store_vfs(m->store), cvf, cvrec) {
                struct json_object *crec = classes_vf_record(m, cvf), *copy = NULL;
                struct svff_assignment a;
                const char *cpf;

                if (!crec || svff_json_get_string(cvrec, "pf", &cpf) < 0 || !streq(cpf, pf))
                        continue;
                if ((!io->class_recorded && !(io->class_recorded = json_object_new_object())) ||
                    json_object_deep_copy(crec, &copy, NULL) < 0 ||
                    json_object_object_add(io->class_recorded, cvf, copy) < 0) {
                        json_object_put(copy);
                        oom = true;
                        break;
                }
                if (svff_store_get_assignment(m->store, cvf, &a) <= 0)
                        continue;
                if (!io->class_tenants && !(io->class_tenants = json_object_new_object())) {
                        oom = true;
                        break;
                }
                copy = json_object_new_boolean(true);
                if (json_object_object_add(io->class_tenants, cvf, copy) < 0) {
                        json_object_put(copy);
                        oom = true;
                        break;
                }
        }
        if (oom || !io->driver || (reason && !io->reason) || (owner && !io->owner) ||
            manager_add_operation(m, pf, "init", call, &op) < 0) {
                init_op_free(io);
                if (call)
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return -ENOMEM;
        }
        io->op = op;
        op->data = io;
        op->phase = "numvfs";

        /* Journal first: a crash from here on leaves a trace. */
        entry = json_object_new_object();
        if (entry) {
                json_object_object_add(entry, "op", json_object_new_string("init"));
                json_object_object_add(entry, "numvfs", json_object_new_int64(numvfs));
                json_object_object_add(entry, "driver", json_object_new_string(driver));
                json_object_object_add(entry, "phase", json_object_new_string("numvfs"));
                json_object_object_add(entry, "started_usec", json_object_new_int64((int64_t) op->started_usec));
        }
        r = journal_set(m, pf, entry);
        if (r >= 0)
                r = manager_commit(m, &err);
        if (r < 0) {
                struct json_object *p = json_object_new_object();

                journal_clear(m, pf);
                json_object_object_add(p, "path", json_object_new_string(svff_store_path(m->store)));
                json_object_object_add(p, "message", json_object_new_string(
                        svff_error_is_set(&err) ? svff_error_message(&err) : strerror(-r)));
                if (call)
                        call_error(call, SVFF_ERROR_STORE, p);
                json_object_put(p);
                manager_remove_operation(m, op);
                init_op_free(io);
                return r;
        }

        if (call)
                log_info("Init of PF %s to %u VFs on %s requested by uid %u.", pf, numvfs, driver,
                         (unsigned) call_peer(call)->uid);
        else
                log_info("Init of PF %s to %u VFs on %s by %s.", pf, numvfs, driver, strna(reason));
        ev = event_new("init-started", pf, pf);
        if (ev) {
                json_object_object_add(ev, "total", json_object_new_int64(numvfs));
                json_object_object_add(ev, "driver", json_object_new_string(driver));
                if (reason)
                        json_object_object_add(ev, "reason", json_object_new_string(reason));
        }
        manager_emit(m, op, ev);

        r = worker_pool_submit(m->ops_pool, init_numvfs_run, io);
        if (r < 0) {
                struct json_object *p = json_object_new_object();

                json_object_object_add(p, "message", json_object_new_string("svffd is shutting down"));
                init_finish(io, SVFF_ERROR_SHUTTING_DOWN, p, true);
                return 0;
        }
        /* A watch of the write's progress: without it, a caller sees
         * nothing for as long as the kernel takes (seconds per VF on
         * some PFs). */
        {
                const struct svff_pf *seen = manager_snapshot_pf(m, pf);
                unsigned from = seen ? seen->numvfs : numvfs;

                io->numvfs_budget = numvfs_budget(m, from, numvfs);
                if (from != numvfs)
                        (void) numvfs_watch_start(m->event, snapshot_cache_pool(m->snapshots), io->ctx, io->pf,
                                                  init_numvfs_seen, io, &io->numvfs_watch);
        }
        return 0;
}

uint64_t operation_init_budget(struct manager *m, unsigned from, unsigned to) {
        return numvfs_budget(m, from, to) + svff_config_bind_timeout(&m->config, to);
}

/* ---- Release ---- */

struct release_op {
        struct operation *op;
        struct worker_pool *pool;
        struct svff_ctx *ctx;
        char vf[SVFF_PCI_ADDR_STRLEN];
        char pf[SVFF_PCI_ADDR_STRLEN];
        char *orig;
        char *now;      /* with no orig: the driver the re-probe gave it, NULL for none */
        unsigned index;
        char *driver;   /* recorded target driver */
        char *domain;   /* force: the domain it was detached from first */
        struct json_object *class_state;  /* as recorded: what the class's release undoes */
        struct svff_reconf_plan *plan;    /* its steps, as the dry run prints them */
        /* Before the release's commit: the VF's record and the PF's
         * owner (NULL: it had none), put back when it does not happen. */
        struct json_object *vf_rec, *prev_owner;
        bool had_owner;
        int r;
        struct svff_error err;
};

static void release_op_free(struct release_op *ro) {
        svff_ctx_unref(ro->ctx);
        free(ro->orig);
        free(ro->now);
        free(ro->driver);
        free(ro->domain);
        json_object_put(ro->class_state);
        svff_reconf_plan_free(ro->plan);
        json_object_put(ro->vf_rec);
        json_object_put(ro->prev_owner);
        svff_error_free(&ro->err);
        free(ro);
}

/* Puts back, in memory, the records release_commit() changed. */
static void release_put_back(struct release_op *ro) {
        struct svff_store *store = ro->op->manager->store;
        struct json_object *pf_rec;

        if (ro->vf_rec) {
                struct json_object *rec = TAKE_PTR(ro->vf_rec);

                if (json_object_object_add(svff_store_vfs(store), ro->vf, rec) < 0) {
                        json_object_put(rec);
                        log_oom();
                }
        }
        if (!json_object_object_get_ex(svff_store_pfs(store), ro->pf, &pf_rec) ||
            !json_object_is_type(pf_rec, json_type_object))
                return;
        if (!ro->had_owner)
                json_object_object_del(pf_rec, "owner");
        else if (json_object_object_add(pf_rec, "owner", json_object_get(ro->prev_owner)) < 0) {
                json_object_put(ro->prev_owner);
                log_oom();
        }
}

/* The release, committed before the VF is touched (as attach, detach,
 * pause and unpause commit their intent first): the VF leaves svff's
 * records, and the operator, who changed the PF by hand, owns its count
 * (its policy no longer rebinds the VF behind their back, see
 * autoinit.h). A store that cannot be written refuses the release with
 * nothing changed; memory is put back as the disk still has it. */
static int release_commit(struct release_op *ro, struct svff_error *err) {
        struct manager *m = ro->op->manager;
        struct json_object *rec, *owner;
        int r;

        if (json_object_object_get_ex(svff_store_vfs(m->store), ro->vf, &rec) &&
            json_object_deep_copy(rec, &ro->vf_rec, NULL) < 0)
                return svff_error_set(err, -ENOMEM, "Out of memory.");
        if (json_object_object_get_ex(svff_store_pfs(m->store), ro->pf, &rec) &&
            json_object_object_get_ex(rec, "owner", &owner)) {
                ro->had_owner = true;
                ro->prev_owner = json_object_get(owner);
        }
        svff_store_remove_vf(m->store, ro->vf);
        (void) svff_store_set_pf_owner(m->store, ro->pf, SVFF_PF_OWNER_OPERATOR);
        r = manager_commit(m, err);
        if (r < 0)
                release_put_back(ro);
        return r;
}

static void release_done(void *userdata) {
        struct release_op *ro = userdata;
        struct operation *op = ro->op;
        struct manager *m = op->manager;
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *p, *ev;

        manager_sysfs_changed(m, ro->pf);

        if (ro->r < 0) {
                /* Not released: the records as they were, on disk too. */
                release_put_back(ro);
                if (manager_commit(m, &err) < 0)
                        log_error("VF %s was not released, and putting its record back in '%s' failed: %s; "
                                  "until a commit succeeds, the store on disk says it was released.", ro->vf,
                                  svff_store_path(m->store), svff_error_message(&err));
                ev = event_new("release-failed", ro->vf, ro->pf);
                if (ev) {
                        json_object_object_add(ev, "error", json_object_new_string(operation_error_name(ro->r)));
                        json_object_object_add(ev, "message", json_object_new_string(svff_error_message(&ro->err)));
                }
                manager_emit(m, op, ev);
                reply_error(op->call, ro->r, ro->vf, svff_error_message(&ro->err));
                goto finish;
        }

        if (ro->orig)
                log_info("VF %s released to %s, its driver before svff.", ro->vf, ro->orig);
        else
                log_info("VF %s released: it had no driver before svff; re-probed, it is on %s.", ro->vf,
                         ro->now ?: "no driver (none claims it)");
        ev = event_new("vf-released", ro->vf, ro->pf);
        if (ev)
                json_object_object_add(ev, "driver", (ro->orig ?: ro->now) ? json_object_new_string(ro->orig ?: ro->now)
                                                                          : NULL);
        manager_emit(m, op, ev);

        p = json_object_new_object();
        json_object_object_add(p, "vf", json_object_new_string(ro->vf));
        json_object_object_add(p, "driver", (ro->orig ?: ro->now) ? json_object_new_string(ro->orig ?: ro->now) : NULL);
        json_object_object_add(p, "reprobed", json_object_new_boolean(!ro->orig));
        json_object_object_add(p, "detached_from", ro->domain ? json_object_new_string(ro->domain) : NULL);
        call_reply(op->call, p);
        json_object_put(p);
finish:
        manager_remove_operation(m, op);
        release_op_free(ro);
}

/* The plan's steps on the device, in order (its detach and commit ran
 * before): what the class set up goes first, while the VF still exists
 * as svff left it, so the next owner gets no namespace of this one. */
static void release_run(void *userdata) {
        struct release_op *ro = userdata;

        ro->r = 0;
        for (size_t i = 0; ro->r >= 0 && i < ro->plan->n_steps; i++)
                switch (ro->plan->steps[i].action) {
                case SVFF_RECONF_DO_RELEASE_CLASS:
                        ro->r = classes_release_sync(ro->ctx, ro->pf, ro->index, ro->class_state, &ro->err);
                        break;
                case SVFF_RECONF_DO_RESTORE_DRIVER:
                        ro->r = svff_dev_restore(ro->ctx, ro->vf, ro->plan->release->driver, &ro->err);
                        break;
                case SVFF_RECONF_DO_REPROBE:
                        /* svff made it, or found it unbound: the kernel's
                         * choice, not an unbound device no one can use */
                        ro->r = svff_dev_reprobe(ro->ctx, ro->vf, &ro->now, &ro->err);
                        break;
                default:
                        break;
                }
        (void) worker_pool_post(ro->pool, release_done, ro);
}

static void release_submit(struct release_op *ro) {
        struct operation *op = ro->op;
        struct manager *m = op->manager;
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

        LOG_CONTEXT(.pf = ro->pf, .vf = ro->vf, .domain = ro->domain, .operation = "release");

        op->phase = "commit";
        if (release_commit(ro, &err) < 0) {
                if (ro->domain)
                        call_errorf(op->call, SVFF_ERROR_STORE, "path", svff_store_path(m->store),
                                    "VF %s was detached from domain '%s' but not released: recording the release "
                                    "in '%s' failed: %s; the VF stays on %s.", ro->vf, ro->domain,
                                    svff_store_path(m->store), svff_error_message(&err), ro->driver);
                else
                        call_errorf(op->call, SVFF_ERROR_STORE, "path", svff_store_path(m->store),
                                    "VF %s was not released: recording the release in '%s' failed: %s; nothing "
                                    "was changed.", ro->vf, svff_store_path(m->store), svff_error_message(&err));
                manager_remove_operation(m, op);
                release_op_free(ro);
                return;
        }
        op->phase = "restore";
        if (worker_pool_submit(ro->pool, release_run, ro) < 0) {
                release_put_back(ro);
                if (manager_commit(m, &err) < 0)
                        log_error("VF %s was not released, and putting its record back in '%s' failed: %s.", ro->vf,
                                  svff_store_path(m->store), svff_error_message(&err));
                call_errorf(op->call, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL, "svffd is shutting down.");
                manager_remove_operation(m, op);
                release_op_free(ro);
        }
}

/* Release with force, once the VF is off its domain (or could not be
 * taken off: then nothing was released). */
static void release_detached(struct manager *m, const char *vf, int r, const char *error, const char *message,
                             void *userdata) {
        struct release_op *ro = userdata;
        struct operation *op = ro->op;

        if (r < 0) {
                struct json_object *p = json_object_new_object();
                char msg[1024];

                snprintf(msg, sizeof(msg), "VF %s was not released: detaching it from domain '%s' failed: %s",
                         vf, ro->domain, strna(message));
                json_object_object_add(p, "device", json_object_new_string(vf));
                json_object_object_add(p, "message", json_object_new_string(msg));
                call_error(op->call, error ?: SVFF_ERROR_OPERATION_FAILED, p);
                json_object_put(p);
                manager_remove_operation(m, op);
                release_op_free(ro);
                return;
        }
        log_info("VF %s detached from domain '%s' for its release.", vf, ro->domain);
        if (m->shutting_down) {
                /* Nothing new starts once a stop began: the VF is off its
                 * domain and still svff's, on vfio-pci. */
                call_errorf(op->call, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL,
                            "VF %s was detached from domain '%s' but not released: svffd is shutting down; "
                            "run 'svffctl release %s' again once it is back.", vf, ro->domain, vf);
                manager_remove_operation(m, op);
                release_op_free(ro);
                return;
        }
        release_submit(ro);
}

struct release_params {
        char vf[SVFF_PCI_ADDR_STRLEN];
        bool force;             /* null is false, as for Reconf */
        bool dry_run;
};

static const struct param release_param_table[] = {
        { "vf", PARAM_ADDRESS, true, offsetof(struct release_params, vf) },
        { "force", PARAM_BOOL, false, offsetof(struct release_params, force), 0, "true or false" },
        { "dry_run", PARAM_BOOL, false, offsetof(struct release_params, dry_run), 0, "true or false" },
        PARAM_END
};

/* The release of vf (VF index of pf, on driver now, orig before svff,
 * NULL for none), from its domain first when a is given. */
static int release_plan(struct manager *m, const char *vf, const char *pf, unsigned index, const char *driver,
                        const char *orig, const struct svff_assignment *a, struct svff_reconf_plan **ret) {
        struct svff_reconf_item it = { .index = index };
        struct svff_reconf_release rel = { .index = index, .class_state = classes_vf_state(m, vf) != NULL };
        struct svff_reconf_input in = { .pf = pf, .driver = driver, .items = &it, .n_items = a ? 1 : 0 };

        (void) svff_store_get_pf(m->store, pf, &in.numvfs, NULL);
        snprintf(it.vf, sizeof(it.vf), "%s", vf);
        if (a)
                it.a = *a;
        snprintf(rel.vf, sizeof(rel.vf), "%s", vf);
        if (orig && strlen(orig) >= sizeof(rel.driver))
                return -EINVAL;
        snprintf(rel.driver, sizeof(rel.driver), "%s", orig ?: "");
        return svff_reconf_plan_new_release(&in, &rel, ret);
}

/* What the release would do, once its refusals are past. */
static void release_dry_run(struct manager *m, struct call *call, const char *vf, struct svff_reconf_plan *plan) {
        struct json_object *reply = json_object_new_object();

        if (!reply) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        json_object_object_add(reply, "vf", json_object_new_string(vf));
        json_object_object_add(reply, "dry_run", json_object_new_boolean(true));
        json_object_object_add(reply, "executable", json_object_new_boolean(true));
        plan_set_deadlines(m, plan);
        json_object_object_add(reply, "plan", svff_reconf_plan_to_json(plan));
        call_reply(call, reply);
        json_object_put(reply);
}

static void method_release(struct manager *m, struct call *call, void *params) {
        const struct release_params in = *(const struct release_params *) params;
        const char *vf = in.vf;
        const char *pf = NULL, *orig = NULL, *driver = NULL;
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *plan = NULL;
        struct svff_assignment a;
        struct json_object *rec;
        struct operation *op;
        struct release_op *ro;
        unsigned index = 0;
        bool force;
        int r, assigned;

        force = in.force;

        r = svff_store_get_vf(m->store, vf, &pf, &orig);
        if (orig && !*orig)
                orig = NULL;    /* no name is no driver: re-probed */
        if (r <= 0) {
                call_errorf(call, SVFF_ERROR_NOT_MANAGED, "device", vf,
                            "svff has no record of VF %s (it did not bind it), so there is no driver to restore; "
                            "'svffctl list' shows the managed VFs.", vf);
                return;
        }
        /* Unbinding it under a change in flight would hand libvirt a VF
         * that is leaving vfio-pci; under a count write still in the
         * kernel, it would wait behind that write. */
        if (pf_busy_refuse(m, pf, vf, PF_BUSY_OPERATION | PF_BUSY_ASSIGN | PF_BUSY_WRITE, call))
                return;

        /* Giving an assigned VF back to its host driver takes it from
         * vfio-pci under the domain, which then cannot start. */
        assigned = svff_store_get_assignment(m->store, vf, &a);
        if (assigned < 0) {
                call_errorf(call, SVFF_ERROR_STORE, "path", svff_store_path(m->store),
                            "The assignment record of VF %s in '%s' has the wrong shape; not releasing it.", vf,
                            svff_store_path(m->store));
                return;
        }
        if (assigned > 0 && !force) {
                call_errorf(call, SVFF_ERROR_ALREADY_ASSIGNED, "device", vf,
                            "VF %s is assigned to domain '%s' (%s); releasing it would take it from the domain, "
                            "which could then not start: run 'svffctl detach %s' first, or "
                            "'svffctl release --force %s' to detach and release it.",
                            vf, a.domain, svff_assign_state_to_string(a.state), vf, vf);
                return;
        }

        rec = json_object_object_get(svff_store_vfs(m->store), vf);
        (void) svff_json_get_unsigned(rec, "index", &index);
        (void) svff_json_get_string(rec, "driver", &driver);

        r = release_plan(m, vf, pf, index, driver ?: m->config.vf_driver, orig, assigned > 0 ? &a : NULL, &plan);
        if (r < 0) {
                call_errorf(call, SVFF_ERROR_INTERNAL, "device", vf,
                            "Planning the release of VF %s failed: %s; nothing was changed.", vf,
                            r == -EINVAL ? "its record in svff's store does not make a plan (driver names, "
                                           "its assignment)" : strerror(-r));
                return;
        }
        if (in.dry_run) {
                release_dry_run(m, call, vf, plan);
                return;
        }

        ro = calloc(1, sizeof(*ro));
        if (!ro) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        ro->plan = TAKE_PTR(plan);
        ro->pool = m->ops_pool;
        ro->ctx = svff_ctx_ref(m->ctx);
        snprintf(ro->vf, sizeof(ro->vf), "%s", vf);
        snprintf(ro->pf, sizeof(ro->pf), "%s", pf);
        ro->index = index;
        ro->orig = orig ? strdup(orig) : NULL;
        ro->driver = strdup(driver ?: m->config.vf_driver);
        ro->domain = assigned > 0 ? strdup(a.domain) : NULL;
        if (classes_vf_state(m, vf))
                (void) json_object_deep_copy(classes_vf_state(m, vf), &ro->class_state, NULL);
        if ((orig && !ro->orig) || !ro->driver || (assigned > 0 && !ro->domain) ||
            (classes_vf_state(m, vf) && !ro->class_state) ||
            manager_add_operation(m, pf, "release", call, &op) < 0) {
                release_op_free(ro);
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        ro->op = op;
        op->data = ro;
        op->total = 1;

        if (assigned > 0) {
                /* The operation on the PF is registered first, so no
                 * init or reconf starts while the VF leaves its domain. */
                log_info("Release of VF %s with force: detaching it from domain '%s' first.", vf, a.domain);
                op->phase = "detach";
                assign_detach(m, vf, release_detached, ro);
                return;
        }
        release_submit(ro);
}

static const struct init_params init_initial = { .numvfs = NUMVFS_UNSET };

const struct method init_method = {
        "Init", method_init, init_param_table, sizeof(struct init_params), &init_initial,
        METHOD_MUTATING | METHOD_PRIVILEGED,
};

const struct method release_method = {
        "Release", method_release, release_param_table, sizeof(struct release_params), NULL,
        METHOD_MUTATING | METHOD_PRIVILEGED,
};
