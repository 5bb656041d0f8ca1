/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "bind.h"
#include "fault.h"
#include "hypervisor.h"
#include "interface.h"
#include "journal.h"
#include "json-util.h"
#include "libvirt.h"
#include "log.h"
#include "params.h"
#include "qmp.h"
#include "reconf-journal.h"
#include "reconf.h"
#include "reconfigure.h"
#include "sriov.h"

#define QMP_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define MESSAGE_MAX 1024

/* Where an assignment is, as the executor knows it (main thread). */
enum item_state {
        IS_UNTOUCHED,   /* not quiesced (paused before, or not reached) */
        IS_QUIESCED,    /* paused / detached by this reconf */
        IS_QUIESCE_FAILED,
        IS_RESTORED,
        IS_RESTORE_FAILED,
        IS_RELEASED,
        IS_LOST_VF,     /* its VF does not exist after the change */
};

struct item {
        enum item_state state;
        enum svff_pause_mode mode;      /* how it was quiesced */
        char vf[SVFF_PCI_ADDR_STRLEN];  /* its VF now (same index) */
        char rec_vf[SVFF_PCI_ADDR_STRLEN]; /* where its record is in the store now */
        bool unrecorded;                /* no record found: nothing to write or drop */
        char guest_address[SVFF_PCI_ADDR_STRLEN];
        int r;
        char *message;
};

struct reconf {
        struct manager *m;
        struct operation *op;
        struct svff_reconf_plan *plan;
        struct item *items;
        struct svff_ctx *ctx;
        virConnectPtr conn;             /* NULL when the plan needs no libvirt */
        struct json_object *log;        /* steps done, as svff_reconf_step_to_json */
        bool dry_run;
        bool recovery;                  /* from the journal after a restart */
        bool rollback;                  /* restoring after a failure before the change */
        unsigned rollback_to;           /* the VF count a rollback goes back to */
        bool failed;                    /* some assignment did not come back */
        unsigned n_now;                 /* VFs that exist after the numvfs phase */
        unsigned pending;
        unsigned n_quiesced, n_restored;
        atomic_uint n_attaching;        /* attach calls started (workers) */
        char *pause_cmd, *unpause_cmd;
        usec_t detach_timeout, numvfs_timeout, numvfs_per_vf;
        const char *error;              /* io.svff error of a failure, or NULL */
        char *message;                  /* what went wrong, for the reply */
        bool keep_journal;

        /* ops worker results */
        int r;
        struct svff_error err;
        bool wrote_zero;
        struct svff_pf *after;
        unsigned n_bind_failed;
        char *bind_message;
};

static void reconf_free(struct reconf *rc) {
        if (!rc)
                return;
        for (size_t i = 0; rc->items && rc->plan && i < rc->plan->n_items; i++)
                free(rc->items[i].message);
        free(rc->items);
        svff_reconf_plan_free(rc->plan);
        svff_ctx_unref(rc->ctx);
        if (rc->conn)
                virConnectClose(rc->conn);
        json_object_put(rc->log);
        free(rc->pause_cmd);
        free(rc->unpause_cmd);
        free(rc->message);
        svff_error_free(&rc->err);
        svff_pf_free(rc->after);
        free(rc->bind_message);
        free(rc);
}

static void set_message(char **dst, const char *fmt, ...) _printf_(2, 3);
static void set_message(char **dst, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        free(*dst);
        *dst = s;
}

static struct json_object *event_new(struct reconf *rc, const char *name) {
        struct json_object *e = json_object_new_object();

        if (!e)
                return NULL;
        json_object_object_add(e, "event", json_object_new_string(name));
        json_object_object_add(e, "device", json_object_new_string(rc->plan->pf));
        json_object_object_add(e, "pf", json_object_new_string(rc->plan->pf));
        return e;
}

/* Appends a step to the log and tells the caller and Monitor. */
static void log_step(struct reconf *rc, const struct svff_reconf_step *s, const char *phase_override,
                     int r, const char *message, enum svff_pause_mode mode) {
        struct json_object *j = svff_reconf_step_to_json(rc->plan, s), *ev;

        if (!j)
                return;
        if (phase_override)
                json_object_object_add(j, "phase", json_object_new_string(phase_override));
        rc->op->done++;
        ev = event_new(rc, r < 0 ? "reconf-step-failed" : "reconf-step");
        if (ev) {
                json_object_object_foreach(j, k, v)
                        if (!streq(k, "vf") && !streq(k, "pf"))
                                json_object_object_add(ev, k, json_object_get(v));
                if (s->item >= 0)
                        json_object_object_add(ev, "device", json_object_new_string(rc->items[s->item].vf));
                if (mode != SVFF_PAUSE_NONE)
                        json_object_object_add(ev, "mode", json_object_new_string(svff_pause_mode_to_string(mode)));
                json_object_object_add(ev, "done", json_object_new_int64(rc->op->done));
                json_object_object_add(ev, "total", json_object_new_int64(rc->op->total));
                if (r < 0) {
                        json_object_object_add(ev, "error", json_object_new_string(strerror(-r)));
                        if (message)
                                json_object_object_add(ev, "message", json_object_new_string(message));
                }
        }
        manager_emit(rc->m, rc->op, ev);
        if (r >= 0 && !phase_override)
                json_object_array_add(rc->log, j);
        else
                json_object_put(j);
}

static const struct svff_reconf_step *find_step(struct reconf *rc, enum svff_reconf_phase phase, int item,
                                                enum svff_reconf_action action, unsigned numvfs) {
        for (size_t i = 0; i < rc->plan->n_steps; i++) {
                const struct svff_reconf_step *s = &rc->plan->steps[i];

                if (s->phase == phase && s->item == item &&
                    (action == _SVFF_RECONF_DO_MAX || s->action == action) &&
                    (s->action != SVFF_RECONF_DO_NUMVFS || s->numvfs == numvfs))
                        return s;
        }
        return NULL;
}

/* ---- journal ---- */

static int journal_write(struct reconf *rc, const char *phase) {
        struct json_object *e = reconf_journal_encode(rc->plan, phase, rc->op->started_usec);

        if (!e)
                return -ENOMEM;
        return journal_set(rc->m, rc->plan->pf, e);
}

static int journal_phase(struct reconf *rc, const char *phase, struct svff_error *err) {
        struct json_object *e = journal_get(rc->m, rc->plan->pf);
        int r;

        if (!e)
                r = journal_write(rc, phase);
        else
                r = json_object_object_add(e, "phase", json_object_new_string(phase));
        if (r < 0)
                return svff_error_set(err, r, "Out of memory");
        rc->op->phase = phase;
        return manager_commit(rc->m, err);
}

/* Records that the reconf now goes back: to which VF count and why.
 * Written before the first step of the rollback, so that a restart
 * finishes it instead of resuming towards the target count; a recovery
 * keeps the record it found. */
static int journal_rollback(struct reconf *rc, struct svff_error *err) {
        struct json_object *e = journal_get(rc->m, rc->plan->pf);
        int r;

        if (!e && journal_write(rc, "rollback") >= 0)
                e = journal_get(rc->m, rc->plan->pf);
        if (!e)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        if (reconf_journal_set_rollback(e, rc->rollback_to, rc->message) < 0)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        r = journal_phase(rc, "rollback", err);
        if (r >= 0)
                fault_point("after-rollback-journal", 0);
        return r;
}

/* Where a restart picks up a reconf stopped now. */
static const char *resume_what(const struct reconf *rc) {
        return rc->rollback ? "the rollback finishes" : "the reconf resumes";
}

/* ---- the outcome ---- */

static const char *item_outcome(const struct reconf *rc, size_t i) {
        const struct svff_reconf_item *it = &rc->plan->items[i];

        switch (rc->items[i].state) {
        case IS_RESTORED:
                return rc->rollback ? "rolled-back" : "restored";
        case IS_RELEASED:
                return "released";
        case IS_UNTOUCHED:
                return it->a.state == SVFF_ASSIGN_ATTACHED ? "untouched" : "kept-paused";
        case IS_QUIESCE_FAILED:
                return "quiesce-failed";
        case IS_LOST_VF:
                return "no-vf";
        case IS_QUIESCED:
        case IS_RESTORE_FAILED:
        default:
                return "paused";
        }
}

/* Whether the domain holds its VF now. */
static bool item_has_vf(const struct reconf *rc, size_t i) {
        switch (rc->items[i].state) {
        case IS_RESTORED:
                return true;
        case IS_UNTOUCHED:
        case IS_QUIESCE_FAILED:
                return rc->plan->items[i].a.state == SVFF_ASSIGN_ATTACHED;
        default:
                return false;
        }
}

/* Whether an assignment is off its domain although it should be back
 * and nothing definite stopped it: its restore never ran (not
 * submitted, svffd stopping) or was cut short by libvirt going away. */
static bool item_unsettled(const struct reconf *rc, size_t i) {
        const struct svff_reconf_item *it = &rc->plan->items[i];
        const struct item *s = &rc->items[i];

        if (it->index >= rc->n_now || (it->fate != SVFF_RECONF_SURVIVES && !rc->rollback))
                return false;
        if (s->state == IS_QUIESCED)
                return true;
        return s->state == IS_RESTORE_FAILED && (s->r == -ECANCELED || s->r == -ENOTCONN || s->r == -ESHUTDOWN);
}

static struct json_object *outcome_json(struct reconf *rc) {
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < rc->plan->n_items; i++) {
                const struct svff_reconf_item *it = &rc->plan->items[i];
                const struct item *s = &rc->items[i];
                struct json_object *o = json_object_new_object();
                const char *ga = *s->guest_address ? s->guest_address : it->a.guest_address;

                if (!o)
                        break;
                json_object_object_add(o, "vf", json_object_new_string(s->vf));
                json_object_object_add(o, "index", json_object_new_int64(it->index));
                json_object_object_add(o, "domain", json_object_new_string(it->a.domain));
                json_object_object_add(o, "uuid", json_object_new_string(it->a.uuid));
                json_object_object_add(o, "guest_address", *ga ? json_object_new_string(ga) : NULL);
                json_object_object_add(o, "alias", json_object_new_string(it->a.alias));
                json_object_object_add(o, "fate", json_object_new_string(svff_reconf_fate_to_string(it->fate)));
                json_object_object_add(o, "outcome", json_object_new_string(item_outcome(rc, i)));
                json_object_object_add(o, "has_vf", json_object_new_boolean(item_has_vf(rc, i)));
                json_object_object_add(o, "mode", s->mode != SVFF_PAUSE_NONE
                                                          ? json_object_new_string(svff_pause_mode_to_string(s->mode))
                                                          : NULL);
                json_object_object_add(o, "message", s->message ? json_object_new_string(s->message) : NULL);
                json_object_array_add(a, o);
        }
        return a;
}

static void recovered_add(struct reconf *rc, const char *outcome, const char *message) {
        struct manager *m = rc->m;
        struct json_object *o = json_object_new_object();

        if (!o)
                return;
        json_object_object_add(o, "pf", json_object_new_string(rc->plan->pf));
        json_object_object_add(o, "outcome", json_object_new_string(outcome));
        json_object_object_add(o, "numvfs", json_object_new_int64(rc->n_now));
        json_object_object_add(o, "message", json_object_new_string(message));
        json_object_object_add(o, "assignments", outcome_json(rc));
        if (!m->recovered)
                m->recovered = json_object_new_array();
        if (!m->recovered || json_object_array_add(m->recovered, o) < 0)
                json_object_put(o);
}

static void reconf_finish(struct reconf *rc) {
        struct manager *m = rc->m;
        struct operation *op = rc->op;
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *p = json_object_new_object(), *ev;
        unsigned n_with = 0, n_without = 0;
        char msg[MESSAGE_MAX];
        bool outcomes;

        for (size_t i = 0; i < rc->plan->n_items; i++) {
                hv_vf_clear_busy(m->hv, rc->plan->items[i].vf);
                if (rc->items[i].state == IS_RELEASED)
                        continue;
                if (item_has_vf(rc, i))
                        n_with++;
                else {
                        n_without++;
                        if (rc->plan->items[i].a.state == SVFF_ASSIGN_ATTACHED)
                                rc->failed = true;
                }
        }
        if (rc->failed && !rc->error)
                rc->error = SVFF_ERROR_RECONF_FAILED;

        /* The journal goes only when every assignment it covers is
         * settled: one that should be back and never was keeps it, so
         * that the next start (or the next libvirt connection) puts it
         * back instead of leaving it paused for good. */
        if (!rc->keep_journal)
                for (size_t i = 0; i < rc->plan->n_items; i++)
                        if (item_unsettled(rc, i)) {
                                rc->keep_journal = true;
                                if (!rc->error)
                                        rc->error = SVFF_ERROR_RECONF_FAILED;
                                set_message(&rc->message, "%s; the journal is kept and %s at the next start of "
                                            "svffd or libvirt connection",
                                            rc->message ?: "not every assignment was put back", resume_what(rc));
                                break;
                        }

        if (!rc->keep_journal) {
                fault_point("before-clear", 0);
                journal_clear(m, rc->plan->pf);
        }
        if (manager_commit(m, &err) < 0 && !rc->error) {
                rc->error = SVFF_ERROR_STORE;
                set_message(&rc->message, "Recording the outcome in '%s' failed: %s", svff_store_path(m->store),
                            svff_error_message(&err));
        }
        manager_sysfs_changed(m, rc->plan->pf);

        if (rc->error)
                snprintf(msg, sizeof(msg), "Reconf of PF %s to %u VFs failed: %s. %u assignment(s) have their VF, "
                         "%u do not%s", rc->plan->pf, rc->plan->to, rc->message ?: "see the assignments", n_with,
                         n_without, n_without > 0 ? " (see each one's message)" : "");
        else if (rc->rollback)
                /* Only a recovery rolls back without an error. */
                snprintf(msg, sizeof(msg), "PF %s is back at %u VFs on %s, its reconf to %u VFs rolled back; "
                         "%u assignment(s) kept", rc->plan->pf, rc->n_now, rc->plan->driver, rc->plan->to, n_with);
        else
                snprintf(msg, sizeof(msg), "PF %s has %u VFs on %s; %u assignment(s) kept%s", rc->plan->pf,
                         rc->n_now, rc->plan->driver, n_with,
                         rc->plan->n_released > 0 ? ", the released ones dropped" : "");

        /* The reply and each error carry the fields they declare, no
         * more: a typed client drops or rejects the others. */
        outcomes = !rc->error || streq(rc->error, SVFF_ERROR_RECONF_FAILED) ||
                   streq(rc->error, SVFF_ERROR_TIMEOUT);
        if (!rc->error) {
                json_object_object_add(p, "pf", json_object_new_string(rc->plan->pf));
                json_object_object_add(p, "numvfs", json_object_new_int64(rc->n_now));
        } else if (streq(rc->error, SVFF_ERROR_STORE))
                json_object_object_add(p, "path", json_object_new_string(svff_store_path(m->store)));
        else if (outcomes)
                json_object_object_add(p, "device", json_object_new_string(rc->plan->pf));
        json_object_object_add(p, "message", json_object_new_string(msg));
        if (outcomes) {
                json_object_object_add(p, "assignments", outcome_json(rc));
                /* Not the plan again: with 252 assignments the reply would
                 * pass the message cap; the dry run and the journal have it. */
                json_object_object_add(p, "steps", json_object_get(rc->log));
        }

        if (rc->recovery)
                recovered_add(rc, rc->error ? "failed" : rc->rollback ? "rolled-back" : "resumed", msg);

        ev = event_new(rc, rc->recovery ? (rc->error ? "reconf-recovery-failed" : "reconf-recovered")
                                        : (rc->error ? "reconf-failed" : "reconf-done"));
        if (ev) {
                json_object_object_add(ev, "message", json_object_new_string(msg));
                json_object_object_add(ev, "total", json_object_new_int64(rc->n_now));
                if (rc->recovery)
                        json_object_object_add(ev, "reason", json_object_new_string(
                                rc->rollback ? "rolled back from the journal" : "resumed from the journal"));
                if (rc->error)
                        json_object_object_add(ev, "error", json_object_new_string(rc->error));
        }
        manager_emit(m, op, ev);

        if (rc->error) {
                log_warning("%s", msg);
                for (size_t i = 0; i < rc->plan->n_items; i++)
                        if (!item_has_vf(rc, i) && rc->items[i].state != IS_RELEASED)
                                log_warning("  Domain '%s' does not have VF %s: %s", rc->plan->items[i].a.domain,
                                            rc->items[i].vf, rc->items[i].message ?: item_outcome(rc, i));
                if (op->call)
                        call_error(op->call, rc->error, p);
        } else {
                log_info("%s%s", rc->recovery ? "Recovered: " : "", msg);
                if (op->call)
                        call_reply(op->call, p);
        }
        json_object_put(p);
        manager_remove_operation(m, op);
        reconf_free(rc);
}

/* Ends without touching anything more; the journal stays when it says
 * what to do next. */
static void reconf_abort(struct reconf *rc, const char *error, bool keep_journal, const char *fmt, ...)
        _printf_(4, 5);
static void reconf_abort(struct reconf *rc, const char *error, bool keep_journal, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        free(rc->message);
        rc->message = s;
        rc->error = error;
        rc->keep_journal = keep_journal;
        reconf_finish(rc);
}

/* ---- domain jobs (virt pool) ---- */

enum job_kind { JOB_QUIESCE, JOB_RESTORE };

struct dom_job {
        struct reconf *rc;
        enum job_kind kind;
        virConnectPtr conn;
        size_t *idx;
        size_t n;
};

struct item_result {
        struct reconf *rc;
        enum job_kind kind;
        size_t i;
        int r;
        char *message;
        enum svff_pause_mode mode;
        char guest_address[SVFF_PCI_ADDR_STRLEN];
};

static void item_done(void *userdata);

/* The definitions a reconf takes a device out of and puts it back in.
 * A survivor in a running domain comes back at the same host address,
 * so only the live device goes: the persistent definition keeps it, and
 * neither a crash nor a failed re-attach can take it from there. Anything
 * else as recorded: a released VF leaves for good, and a domain that is
 * not running could be started while its VF does not exist. */
static unsigned reconf_flags(const struct svff_reconf_item *it, bool active) {
        bool live = it->a.live && active;

        if (live && it->fate == SVFF_RECONF_SURVIVES)
                return SVFF_HV_LIVE;
        return (live ? SVFF_HV_LIVE : 0) | (it->a.config ? SVFF_HV_CONFIG : 0);
}

static int quiesce_one(struct dom_job *j, virDomainPtr dom, const struct svff_domain_info *info, size_t i,
                       struct item_result *res, struct svff_error *err) {
        struct reconf *rc = j->rc;
        const struct svff_reconf_item *it = &rc->plan->items[i];
        bool live = it->a.live && info->active;
        unsigned flags = reconf_flags(it, info->active);
        int r;

        if (it->fate == SVFF_RECONF_SURVIVES && rc->plan->mode == SVFF_RECONF_PAUSE && live) {
                _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
                struct svff_error qerr = SVFF_ERROR_NULL;

                r = svff_qmp_new_libvirt(dom, &q);
                if (r >= 0)
                        r = svff_qmp_device_pause(q, rc->pause_cmd, it->a.alias, QMP_TIMEOUT_USEC, &qerr);
                if (r >= 0) {
                        res->mode = SVFF_PAUSE_NATIVE;
                        svff_error_free(&qerr);
                        return 0;
                }
                if (r != -EOPNOTSUPP) {
                        *err = qerr;
                        return r;
                }
                svff_error_free(&qerr);
        }
        /* Detach (with the reservation kept in the record). */
        res->mode = SVFF_PAUSE_DETACH;
        if (flags == 0)
                return 0;
        return svff_hv_detach(dom, it->vf, it->a.alias, flags, svff_now_usec() + rc->detach_timeout,
                              hv_removals(rc->m->hv), err);
}

static int restore_one(struct dom_job *j, virDomainPtr dom, const struct svff_domain_info *info, size_t i,
                       struct item_result *res, struct svff_error *err) {
        struct reconf *rc = j->rc;
        const struct svff_reconf_item *it = &rc->plan->items[i];
        const struct item *s = &rc->items[i];
        unsigned flags = reconf_flags(it, info->active);
        _cleanup_free_ char *drv = NULL;
        struct svff_hostdev hd;
        int r;

        res->mode = s->mode;
        if (s->mode == SVFF_PAUSE_NATIVE) {
                _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;

                r = svff_qmp_new_libvirt(dom, &q);
                if (r >= 0)
                        r = svff_qmp_device_pause(q, rc->unpause_cmd, it->a.alias, QMP_TIMEOUT_USEC, err);
                return r;
        }
        if (flags == 0)
                return svff_error_set(err, -EINVAL,
                                      "domain '%s' is no longer running and VF %s was assigned live only: "
                                      "nothing to re-attach to", info->name, s->vf);
        r = svff_dev_get_driver(rc->ctx, s->vf, &drv);
        if (r < 0)
                return svff_error_set(err, -ENODEV, "VF %s does not exist", s->vf);
        if (!drv || !streq(drv, "vfio-pci"))
                return svff_error_set(err, -EBUSY, "VF %s is on %s, not vfio-pci, so it cannot be re-attached",
                                      s->vf, drv ?: "no driver");

        if (fault_inject("fail-reattach", atomic_fetch_add(&rc->n_attaching, 1) + 1))
                return svff_error_set(err, -EIO, "Attaching VF %s to domain '%s': injected failure", s->vf,
                                      info->name);
        r = svff_hv_attach(dom, s->vf, it->a.alias, *it->a.guest_address ? it->a.guest_address : NULL, flags,
                           &hd, err);
        if (r < 0) {
                _cleanup_(svff_error_free) struct svff_error e = SVFF_ERROR_NULL;

                /* Idempotent for recovery: a device already back is fine.
                 * Asked only when libvirt refused: in a plain reconf the
                 * device was just detached, and each read of the domain's
                 * XML costs libvirtd and svffd alike. */
                if (svff_hv_get_hostdev(dom, s->vf, flags & SVFF_HV_LIVE ? SVFF_HV_LIVE : SVFF_HV_CONFIG, &hd,
                                        &e) <= 0)
                        return r;
                svff_error_free(err);
        }
        snprintf(res->guest_address, sizeof(res->guest_address), "%s", hd.guest_address);
        if (*it->a.guest_address && !streq(hd.guest_address, it->a.guest_address))
                log_warning("VF %s came back at %s in domain '%s', not at the recorded %s.", s->vf,
                            hd.guest_address, info->name, it->a.guest_address);
        return 0;
}

static void dom_job_run(void *userdata) {
        struct dom_job *j = userdata;
        struct reconf *rc = j->rc;
        _cleanup_(svff_error_free) struct svff_error lerr = SVFF_ERROR_NULL;
        struct svff_domain_info info = {};
        virDomainPtr dom = NULL;
        int lr;

        lr = svff_hv_lookup_running(j->conn, rc->plan->items[j->idx[0]].a.uuid, &info, &dom, &lerr);
        for (size_t k = 0; k < j->n; k++) {
                struct item_result *res = calloc(1, sizeof(*res));
                struct svff_error err = SVFF_ERROR_NULL;

                if (!res)
                        continue;  /* the main thread never completes: logged there as stuck */
                res->rc = rc;
                res->kind = j->kind;
                res->i = j->idx[k];
                if (lr == -ENOENT && j->kind == JOB_QUIESCE &&
                    rc->plan->items[res->i].fate == SVFF_RECONF_RELEASED)
                        res->r = 0;  /* released anyway: the domain is gone */
                else if (lr < 0) {
                        res->r = lr;
                        res->message = strdup(svff_error_message(&lerr));
                } else {
                        res->r = j->kind == JOB_QUIESCE ? quiesce_one(j, dom, &info, res->i, res, &err)
                                                        : restore_one(j, dom, &info, res->i, res, &err);
                        if (res->r < 0)
                                res->message = strdup(svff_error_is_set(&err) ? svff_error_message(&err)
                                                                              : strerror(-res->r));
                }
                svff_error_free(&err);
                if (worker_pool_post(hv_pool(rc->m->hv), item_done, res) < 0) {
                        free(res->message);
                        free(res);
                }
        }
        if (dom)
                virDomainFree(dom);
        virConnectClose(j->conn);
        free(j->idx);
        free(j);
}

/* An item whose job could not be submitted: it was never touched, and
 * says so. A quiesce that did not happen makes the reconf roll back
 * (quiesce_done never destroys a VF still attached); a restore that did
 * not happen keeps the journal (item_unsettled). */
static void item_not_submitted(struct reconf *rc, enum job_kind kind, size_t i, int r) {
        struct item *s = &rc->items[i];

        s->state = kind == JOB_QUIESCE ? IS_QUIESCE_FAILED : IS_RESTORE_FAILED;
        s->r = -ECANCELED;
        set_message(&s->message, "its %s was never started: %s", kind == JOB_QUIESCE ? "pause or detach" : "restore",
                    r == -ESHUTDOWN ? "svffd is shutting down" : strerror(-r));
        if (kind == JOB_QUIESCE && !rc->message)
                set_message(&rc->message, "%s", s->message);
}

/* Submits one job per domain for the items selected by want. Returns
 * how many items were submitted: each of them completes through
 * item_done(). Every wanted item not submitted is marked so by
 * item_not_submitted() before this returns. */
static unsigned submit_domain_jobs(struct reconf *rc, enum job_kind kind, bool (*want)(struct reconf *, size_t)) {
        size_t n = rc->plan->n_items;
        _cleanup_free_ bool *done = calloc(n ? n : 1, sizeof(bool));
        unsigned submitted = 0, n_jobs = 0;
        int r = 0;

        for (size_t i = 0; done && i < n && r >= 0; i++) {
                struct dom_job *j;
                size_t n_items = 0;

                if (done[i] || !want(rc, i))
                        continue;
                j = calloc(1, sizeof(*j));
                if (j)
                        j->idx = calloc(n, sizeof(size_t));
                if (!j || !j->idx) {
                        free(j);
                        r = -ENOMEM;
                        break;
                }
                j->rc = rc;
                j->kind = kind;
                for (size_t k = i; k < n; k++)
                        if (!done[k] && want(rc, k) && streq(rc->plan->items[k].a.uuid, rc->plan->items[i].a.uuid))
                                j->idx[j->n++] = k;
                /* Counted before the submit: from then on the job is the
                 * worker's, which frees it when done. */
                n_items = j->n;
                if (virConnectRef(rc->conn) < 0) {
                        free(j->idx);
                        free(j);
                        r = -ENOTCONN;
                        break;
                }
                j->conn = rc->conn;
                if (rc->m->exiting)
                        r = -ESHUTDOWN;
                else if (fault_inject(kind == JOB_QUIESCE ? "fail-submit-quiesce" : "fail-submit-restore",
                                      ++n_jobs))
                        r = -ENOMEM;
                else
                        r = worker_pool_submit(hv_pool(rc->m->hv), dom_job_run, j);
                if (r < 0) {
                        virConnectClose(j->conn);
                        free(j->idx);
                        free(j);
                        break;
                }
                /* Only the items the submitted job owns, and only now. */
                for (size_t k = i; k < n; k++)
                        if (!done[k] && want(rc, k) && streq(rc->plan->items[k].a.uuid, rc->plan->items[i].a.uuid))
                                done[k] = true;
                submitted += (unsigned) n_items;
        }
        if (!done)
                r = -ENOMEM;
        if (r < 0) {
                log_error("Submitting the %s jobs of the reconf of PF %s failed after %u item(s): %s",
                          kind == JOB_QUIESCE ? "quiesce" : "restore", rc->plan->pf, submitted, strerror(-r));
                for (size_t i = 0; i < n; i++)
                        if ((!done || !done[i]) && want(rc, i))
                                item_not_submitted(rc, kind, i, r);
        }
        return submitted;
}

static bool want_quiesce(struct reconf *rc, size_t i) {
        return find_step(rc, SVFF_RECONF_PHASE_QUIESCE, (int) i, _SVFF_RECONF_DO_MAX, 0) != NULL &&
               rc->items[i].state == IS_UNTOUCHED;
}

static bool want_restore(struct reconf *rc, size_t i) {
        const struct svff_reconf_item *it = &rc->plan->items[i];

        if (rc->items[i].state != IS_QUIESCED || it->index >= rc->n_now)
                return false;
        /* Released ones come back only when the change did not happen. */
        return it->fate == SVFF_RECONF_SURVIVES || rc->rollback;
}

static void start_numvfs(struct reconf *rc);
static void start_restore(struct reconf *rc);
static void restore_done(struct reconf *rc);

/* Goes back to the VF count the reconf started from; a rollback starts
 * only while that count is unchanged. The caller journals it. */
static void rollback_set(struct reconf *rc) {
        rc->rollback = true;
        rc->rollback_to = rc->plan->from;
        rc->n_now = rc->plan->from;
}

/* Before the VF count changed: puts back what was taken. */
static void rollback_start(struct reconf *rc) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

        rollback_set(rc);
        if (journal_rollback(rc, &err) < 0)
                log_error("Journaling the rollback of the reconf of PF %s failed, continuing: %s", rc->plan->pf,
                          svff_error_message(&err));
        start_restore(rc);
}

/* Sets the state of item i's record as it is now in the store (not
 * the plan's copy: lifecycle events may have changed it; one that is
 * gone stays gone). */
static void record_state(struct reconf *rc, size_t i, enum svff_assign_state state, enum svff_pause_mode mode) {
        struct svff_assignment a;

        if (rc->items[i].unrecorded || svff_store_get_assignment(rc->m->store, rc->items[i].rec_vf, &a) <= 0 ||
            !streq(a.uuid, rc->plan->items[i].a.uuid))
                return;
        a.state = state;
        a.pause_mode = mode;
        (void) svff_store_set_assignment(rc->m->store, rc->items[i].rec_vf, &a);
}

static void quiesce_done(struct reconf *rc) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct manager *m = rc->m;
        bool any_failed = false;

        for (size_t i = 0; i < rc->plan->n_items; i++)
                if (rc->items[i].state == IS_QUIESCE_FAILED)
                        any_failed = true;
        if (any_failed || m->shutting_down) {
                /* Nothing was destroyed: put back what was taken. */
                if (!rc->message)
                        set_message(&rc->message, m->shutting_down ? "svffd is shutting down"
                                                                   : "a pause or detach failed, nothing was changed");
                rc->error = m->shutting_down ? SVFF_ERROR_SHUTTING_DOWN : SVFF_ERROR_RECONF_FAILED;
                if (m->exiting) {
                        /* The virt pool takes no more jobs: the journal
                         * (phase quiesce) has the next start roll back. */
                        reconf_abort(rc, SVFF_ERROR_SHUTTING_DOWN, true,
                                     "svffd stopped during the quiesce; the rollback runs at its next start");
                        return;
                }
                rollback_start(rc);
                return;
        }

        /* Every device is off its domain: the records say paused, with
         * the guest address and alias reserved, before any VF goes. */
        for (size_t i = 0; i < rc->plan->n_items; i++) {
                if (rc->items[i].state != IS_QUIESCED)
                        continue;
                record_state(rc, i, SVFF_ASSIGN_PAUSED, rc->items[i].mode);
        }
        if (journal_phase(rc, "numvfs", &err) < 0) {
                /* The journal in memory says "numvfs" now: the rollback
                 * must replace that before any later commit carries it. */
                rc->error = SVFF_ERROR_STORE;
                set_message(&rc->message, "recording the paused assignments failed: %s", svff_error_message(&err));
                rollback_start(rc);
                return;
        }
        start_numvfs(rc);
}

static void item_done(void *userdata) {
        struct item_result *res = userdata;
        struct reconf *rc = res->rc;
        struct item *s = &rc->items[res->i];
        const struct svff_reconf_step *step;
        enum job_kind kind;

        if (res->kind == JOB_QUIESCE) {
                step = find_step(rc, SVFF_RECONF_PHASE_QUIESCE, (int) res->i, _SVFF_RECONF_DO_MAX, 0);
                s->mode = res->mode;
                if (res->r < 0) {
                        s->state = IS_QUIESCE_FAILED;
                        s->r = res->r;
                        free(s->message);
                        s->message = TAKE_PTR(res->message);
                        if (!rc->message)
                                set_message(&rc->message, "%s", s->message ?: strerror(-res->r));
                        /* The guest may still let go later: say so in the record. */
                        if (res->r == -ETIMEDOUT) {
                                record_state(rc, res->i, SVFF_ASSIGN_DETACHING, SVFF_PAUSE_NONE);
                        }
                } else {
                        s->state = IS_QUIESCED;
                        rc->n_quiesced++;
                        if (s->mode == SVFF_PAUSE_NATIVE) {
                                _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
                                /* The device is still in the domain: only the
                                 * record can tell a restart to unpause it. */
                                record_state(rc, res->i, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_NATIVE);
                                (void) manager_commit(rc->m, &err);
                        }
                }
                if (step)
                        log_step(rc, step, NULL, res->r, s->message, res->r >= 0 ? s->mode : SVFF_PAUSE_NONE);
                if (res->r >= 0)
                        fault_point("after-detach", rc->n_quiesced);
        } else {
                step = find_step(rc, SVFF_RECONF_PHASE_RESTORE, (int) res->i, _SVFF_RECONF_DO_MAX, 0);
                if (res->r < 0) {
                        s->state = IS_RESTORE_FAILED;
                        s->r = res->r;
                        free(s->message);
                        s->message = TAKE_PTR(res->message);
                } else {
                        s->state = IS_RESTORED;
                        snprintf(s->guest_address, sizeof(s->guest_address), "%s", res->guest_address);
                        rc->n_restored++;
                }
                if (step || rc->rollback) {
                        struct svff_reconf_step rb = {
                                .phase = SVFF_RECONF_PHASE_RESTORE, .item = (int) res->i,
                                .action = s->mode == SVFF_PAUSE_NATIVE ? SVFF_RECONF_DO_UNPAUSE : SVFF_RECONF_DO_REATTACH,
                        };

                        log_step(rc, step && !rc->rollback ? step : &rb, rc->rollback ? "rollback" : NULL, res->r,
                                 s->message, s->mode);
                }
                if (res->r >= 0)
                        fault_point("after-reattach", rc->n_restored);
        }
        kind = res->kind;
        free(res->message);
        free(res);

        if (--rc->pending > 0)
                return;
        if (kind == JOB_QUIESCE)
                quiesce_done(rc);
        else
                restore_done(rc);
}

/* ---- numvfs and bind (ops pool) ---- */

static void numvfs_done(void *userdata);
static void bind_done(void *userdata);

static void numvfs_run(void *userdata) {
        struct reconf *rc = userdata;
        _cleanup_(svff_error_free) struct svff_error lerr = SVFF_ERROR_NULL;
        const char *pf = rc->plan->pf;

        if (rc->recovery || rc->rollback) {
                /* Wherever the crash (or the failed write) left the count:
                 * to the target (back to where it was when rolling back),
                 * through 0 only when it differs (svff_pf_set_numvfs does
                 * that). */
                rc->r = svff_pf_set_numvfs_scaled(rc->ctx, pf, rc->rollback ? rc->rollback_to : rc->plan->to,
                                                  rc->numvfs_timeout, rc->numvfs_per_vf, &rc->err);
                rc->wrote_zero = true;
        } else {
                rc->r = 0;
                if (rc->plan->from > 0) {
                        rc->r = svff_pf_set_numvfs_scaled(rc->ctx, pf, 0, rc->numvfs_timeout, rc->numvfs_per_vf,
                                                          &rc->err);
                        if (rc->r >= 0) {
                                rc->wrote_zero = true;
                                fault_point("after-numvfs-0", 0);
                        }
                }
                /* fail-numvfs-N: the kernel refusing the new count after
                 * it took the 0, for the real-kernel tier, where no
                 * driver can be made to. */
                if (rc->r >= 0 && rc->plan->to > 0 && fault_inject("fail-numvfs-N", 0))
                        rc->r = svff_error_set(&rc->err, -ENOMEM, "Failed to set sriov_numvfs of PF %s to %u: %s "
                                               "(injected)", pf, rc->plan->to, strerror(ENOMEM));
                else if (rc->r >= 0 && rc->plan->to > 0)
                        rc->r = svff_pf_set_numvfs_scaled(rc->ctx, pf, rc->plan->to, rc->numvfs_timeout,
                                                          rc->numvfs_per_vf, &rc->err);
        }
        if (rc->r >= 0)
                fault_point("after-numvfs-N", 0);
        /* What exists now, also after a failure: the rest depends on it. */
        if (rc->r != -ETIMEDOUT && svff_pf_load(rc->ctx, pf, &rc->after, &lerr) < 0)
                rc->after = NULL;
        (void) worker_pool_post(rc->m->ops_pool, numvfs_done, rc);
}

static void bind_run(void *userdata) {
        struct reconf *rc = userdata;

        for (size_t i = 0; rc->after && i < rc->after->n_vfs; i++) {
                _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

                if (svff_dev_bind(rc->ctx, rc->after->vfs[i].address, rc->plan->driver, NULL, &err) < 0 &&
                    rc->n_bind_failed++ == 0)
                        rc->bind_message = strdup(svff_error_message(&err));
        }
        fault_point("after-rebind", 0);
        (void) worker_pool_post(rc->m->ops_pool, bind_done, rc);
}

/* The PF's desired state and its VF records as they are now; the
 * records of VFs the change destroyed go, original drivers stay. */
static int record_vfs(struct reconf *rc) {
        struct manager *m = rc->m;
        _cleanup_strv_free_ char **gone = NULL;
        size_t n_gone = 0;
        int r;

        r = svff_store_set_pf(m->store, rc->plan->pf, rc->n_now, rc->plan->driver);
        if (r < 0)
                return r;
        json_object_object_foreach(svff_store_vfs(m->store), key, rec) {
                const char *pf;
                char **n;

                if (svff_json_get_string(rec, "pf", &pf) < 0 || !streq(pf, rc->plan->pf) ||
                    (rc->after && svff_pf_find_vf(rc->after, key)))
                        continue;
                n = realloc(gone, (n_gone + 2) * sizeof(char *));
                if (!n)
                        return -ENOMEM;
                gone = n;
                gone[n_gone] = strdup(key);
                if (!gone[n_gone])
                        return -ENOMEM;
                gone[++n_gone] = NULL;
        }
        for (size_t i = 0; i < n_gone; i++)
                svff_store_remove_vf(m->store, gone[i]);
        for (size_t i = 0; rc->after && i < rc->after->n_vfs; i++) {
                const struct svff_vf *vf = &rc->after->vfs[i];
                const char *orig = vf->driver;

                if (svff_store_get_vf(m->store, vf->address, NULL, &orig) == 0)
                        orig = vf->driver;
                r = svff_store_set_vf(m->store, vf->address, rc->plan->pf, vf->index, orig, rc->plan->driver);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Same index, new address (offset or stride changed): each record
 * follows its VF. All are taken out first, as one item's new address
 * may be another's old one. */
static void move_records(struct reconf *rc) {
        struct manager *m = rc->m;
        size_t n = rc->plan->n_items;
        _cleanup_free_ struct svff_assignment *recs = calloc(n ? n : 1, sizeof(*recs));
        _cleanup_free_ bool *have = calloc(n ? n : 1, sizeof(bool));

        if (!recs || !have) {
                log_oom();
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct item *st = &rc->items[i];

                if (st->unrecorded || streq(st->vf, st->rec_vf))
                        continue;
                if (svff_store_get_assignment(m->store, st->rec_vf, &recs[i]) > 0 &&
                    streq(recs[i].uuid, rc->plan->items[i].a.uuid)) {
                        svff_store_remove_assignment(m->store, st->rec_vf);
                        have[i] = true;
                }
        }
        for (size_t i = 0; i < n; i++)
                if (have[i] && svff_store_set_assignment(m->store, rc->items[i].vf, &recs[i]) >= 0)
                        snprintf(rc->items[i].rec_vf, sizeof(rc->items[i].rec_vf), "%s", rc->items[i].vf);
}

static void numvfs_done(void *userdata) {
        struct reconf *rc = userdata;
        struct manager *m = rc->m;
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        const struct svff_reconf_step *s;
        int r;

        manager_sysfs_changed(m, rc->plan->pf);
        if (rc->r == -ETIMEDOUT) {
                /* The write is still pending in the kernel: nothing can be
                 * done to the PF until the holder lets go. */
                for (size_t i = 0; i < rc->plan->n_items; i++)
                        if (rc->items[i].state == IS_QUIESCED)
                                set_message(&rc->items[i].message,
                                            "the VF count change is blocked (%s); the assignment stays paused with "
                                            "its guest address reserved", svff_error_message(&rc->err));
                reconf_abort(rc, SVFF_ERROR_TIMEOUT, true,
                             "%s. The assignments stay paused with their reservations and the journal is kept: "
                             "once the holder lets go, run 'svffctl reconf %s %u' again (or restart svffd) to "
                             "%s", svff_error_message(&rc->err), rc->plan->pf, rc->plan->to,
                             rc->rollback ? "finish its rollback" : "complete it");
                return;
        }

        rc->n_now = rc->after ? (unsigned) rc->after->n_vfs : 0;
        if (rc->r < 0 && !rc->rollback && !rc->recovery && rc->wrote_zero && rc->n_now == 0) {
                /* The VFs are gone and the new count was refused: nothing
                 * may stay half done. Back to the count the reconf started
                 * from, journaled as a rollback before the write, then
                 * every assignment put back. (A driver that created only
                 * part of the VFs accepted the write: what exists is
                 * bound and restored, below.) */
                if (rc->plan->from > 0 && (s = find_step(rc, SVFF_RECONF_PHASE_NUMVFS, -1, SVFF_RECONF_DO_NUMVFS, 0)))
                        log_step(rc, s, NULL, 0, NULL, SVFF_PAUSE_NONE);
                set_message(&rc->message, "%s; PF %s went back to %u VFs", svff_error_message(&rc->err),
                            rc->plan->pf, rc->plan->from);
                log_warning("Reconf of PF %s: %s after the VFs were removed; rolling back to %u VFs.", rc->plan->pf,
                            svff_error_message(&rc->err), rc->plan->from);
                rc->error = SVFF_ERROR_RECONF_FAILED;
                rollback_set(rc);
                svff_error_free(&rc->err);
                svff_pf_free(rc->after);
                rc->after = NULL;
                if (journal_rollback(rc, &err) < 0)
                        log_error("Journaling the rollback of the reconf of PF %s failed, continuing: %s",
                                  rc->plan->pf, svff_error_message(&err));
                start_numvfs(rc);
                return;
        }
        if (rc->r < 0 && rc->rollback) {
                /* Going back failed too: the journal stays, so the next
                 * start (or the same Reconf) tries again. */
                rc->keep_journal = true;
                set_message(&rc->message, "%s; going back to %u VFs failed too (%s), PF %s has %u VFs: the journal "
                            "is kept, run 'svffctl reconf %s %u' or restart svffd to retry the rollback",
                            rc->message ?: "the reconf failed", rc->rollback_to, svff_error_message(&rc->err),
                            rc->plan->pf, rc->n_now, rc->plan->pf, rc->plan->to);
                rc->error = SVFF_ERROR_RECONF_FAILED;
                rc->failed = true;
        } else if (rc->r < 0) {
                if (!rc->wrote_zero && rc->after && rc->n_now == rc->plan->from) {
                        rollback_set(rc);
                        set_message(&rc->message, "%s; nothing was changed", svff_error_message(&rc->err));
                } else
                        set_message(&rc->message, "%s; PF %s has %u VFs now", svff_error_message(&rc->err),
                                    rc->plan->pf, rc->n_now);
                rc->error = SVFF_ERROR_RECONF_FAILED;
                rc->failed = true;
        } else if (!rc->rollback) {
                if (!rc->recovery && rc->plan->from > 0 &&
                    (s = find_step(rc, SVFF_RECONF_PHASE_NUMVFS, -1, SVFF_RECONF_DO_NUMVFS, 0)))
                        log_step(rc, s, NULL, 0, NULL, SVFF_PAUSE_NONE);
                if (rc->plan->to > 0 && (s = find_step(rc, SVFF_RECONF_PHASE_NUMVFS, -1, SVFF_RECONF_DO_NUMVFS,
                                                       rc->plan->to)))
                        log_step(rc, s, NULL, 0, NULL, SVFF_PAUSE_NONE);
        }

        /* Each assignment's VF is the one with its index now. */
        for (size_t i = 0; i < rc->plan->n_items; i++) {
                const struct svff_reconf_item *it = &rc->plan->items[i];
                struct item *st = &rc->items[i];

                if (it->index < rc->n_now && rc->after) {
                        for (size_t k = 0; k < rc->after->n_vfs; k++)
                                if (rc->after->vfs[k].index == it->index)
                                        snprintf(st->vf, sizeof(st->vf), "%s", rc->after->vfs[k].address);
                } else if (it->fate == SVFF_RECONF_SURVIVES || rc->rollback) {
                        if (st->state == IS_QUIESCED || it->a.state != SVFF_ASSIGN_ATTACHED) {
                                if (st->state == IS_QUIESCED)
                                        st->state = IS_LOST_VF;
                                set_message(&st->message, "VF %u of PF %s does not exist (%s)", it->index,
                                            rc->plan->pf, rc->message ?: "the PF has fewer VFs");
                        }
                }
        }
        move_records(rc);

        r = record_vfs(rc);
        if (r >= 0)
                r = rc->rollback ? journal_rollback(rc, &err) : journal_phase(rc, "bind", &err);
        if (r < 0)
                log_error("Recording the VFs of PF %s failed: %s", rc->plan->pf,
                          svff_error_is_set(&err) ? svff_error_message(&err) : strerror(-r));
        if (m->shutting_down) {
                /* The numvfs phase completed and is journaled: a safe
                 * point. The next start binds and restores, as after a
                 * crash here. */
                reconf_abort(rc, SVFF_ERROR_SHUTTING_DOWN, true,
                             "svffd is stopping; PF %s has %u VFs now, %s at its next start", rc->plan->pf,
                             rc->n_now, resume_what(rc));
                return;
        }
        if (rc->n_now == 0) {
                start_restore(rc);
                return;
        }
        rc->op->phase = "bind";
        if (m->exiting || worker_pool_submit(m->ops_pool, bind_run, rc) < 0)
                reconf_abort(rc, SVFF_ERROR_SHUTTING_DOWN, true, "svffd is shutting down; %s at its next start",
                             resume_what(rc));
}

static void bind_done(void *userdata) {
        struct reconf *rc = userdata;
        const struct svff_reconf_step *s;

        manager_sysfs_changed(rc->m, rc->plan->pf);
        if (rc->n_bind_failed > 0) {
                log_warning("%u of %u VFs of PF %s could not be bound to %s; first: %s", rc->n_bind_failed,
                            rc->n_now, rc->plan->pf, rc->plan->driver, strna(rc->bind_message));
                if (!rc->message)
                        set_message(&rc->message, "%u VF(s) could not be bound to %s: %s", rc->n_bind_failed,
                                    rc->plan->driver, strna(rc->bind_message));
        } else if (!rc->rollback && !rc->failed &&
                   (s = find_step(rc, SVFF_RECONF_PHASE_BIND, -1, SVFF_RECONF_DO_BIND, 0)))
                log_step(rc, s, NULL, 0, NULL, SVFF_PAUSE_NONE);
        if (rc->m->shutting_down) {
                /* The bind phase completed; the journal (bind, or rollback)
                 * has the next start bind again (idempotent) and restore. */
                reconf_abort(rc, SVFF_ERROR_SHUTTING_DOWN, true, "svffd is stopping; %s at its next start",
                             resume_what(rc));
                return;
        }
        start_restore(rc);
}

static void start_numvfs(struct reconf *rc) {
        rc->op->phase = rc->rollback ? "rollback" : "numvfs";
        if (rc->m->shutting_down || worker_pool_submit(rc->m->ops_pool, numvfs_run, rc) < 0)
                reconf_abort(rc, SVFF_ERROR_SHUTTING_DOWN, true, "svffd is shutting down; %s at its next start",
                             resume_what(rc));
}

/* ---- restore ---- */

static void start_restore(struct reconf *rc) {
        rc->op->phase = rc->rollback ? "rollback" : "restore";
        if (rc->m->exiting) {
                reconf_abort(rc, SVFF_ERROR_SHUTTING_DOWN, true,
                             "svffd stopped before the assignments were put back; %s at its next start",
                             resume_what(rc));
                return;
        }
        if (!rc->rollback && !rc->failed)
                for (size_t i = 0; i < rc->plan->n_items; i++) {
                        const struct svff_reconf_step *s;

                        if (rc->plan->items[i].fate != SVFF_RECONF_RELEASED)
                                continue;
                        rc->items[i].state = IS_RELEASED;
                        s = find_step(rc, SVFF_RECONF_PHASE_RESTORE, (int) i, SVFF_RECONF_DO_FORGET, 0);
                        if (s)
                                log_step(rc, s, NULL, 0, NULL, SVFF_PAUSE_NONE);
                }
        rc->pending = rc->conn ? submit_domain_jobs(rc, JOB_RESTORE, want_restore) : 0;
        if (rc->pending == 0)
                restore_done(rc);
}

static void restore_done(struct reconf *rc) {
        struct manager *m = rc->m;

        for (size_t i = 0; i < rc->plan->n_items; i++) {
                const struct svff_reconf_item *it = &rc->plan->items[i];
                struct item *st = &rc->items[i];
                struct svff_assignment a;

                /* From the record as it is now, not the plan's copy:
                 * libvirt's lifecycle events may have changed it during
                 * the reconf, and one that is gone stays gone. */
                if (st->unrecorded || svff_store_get_assignment(m->store, st->rec_vf, &a) <= 0 ||
                    !streq(a.uuid, it->a.uuid)) {
                        if (st->state != IS_RELEASED && st->state != IS_UNTOUCHED &&
                            st->state != IS_QUIESCE_FAILED)
                                log_warning("The assignment of VF %s to domain '%s' is no longer recorded (the "
                                            "domain went away during the reconf?): not recording it again.",
                                            st->vf, it->a.domain);
                        continue;
                }
                if (!streq(st->rec_vf, st->vf)) {
                        svff_store_remove_assignment(m->store, st->rec_vf);
                        snprintf(st->rec_vf, sizeof(st->rec_vf), "%s", st->vf);
                }

                switch (st->state) {
                case IS_RESTORED:
                        a.state = SVFF_ASSIGN_ATTACHED;
                        a.pause_mode = SVFF_PAUSE_NONE;
                        if (*st->guest_address)
                                snprintf(a.guest_address, sizeof(a.guest_address), "%s", st->guest_address);
                        (void) svff_store_set_assignment(m->store, st->vf, &a);
                        break;
                case IS_RELEASED:
                        log_info("VF %s released from domain '%s' (--force): it no longer exists.", it->vf,
                                 it->a.domain);
                        svff_store_remove_assignment(m->store, st->vf);
                        break;
                case IS_QUIESCED:
                case IS_RESTORE_FAILED:
                case IS_LOST_VF:
                        /* Off its domain: the record keeps the reservation. */
                        a.state = SVFF_ASSIGN_PAUSED;
                        a.pause_mode = st->mode != SVFF_PAUSE_NONE ? st->mode : SVFF_PAUSE_DETACH;
                        (void) svff_store_set_assignment(m->store, st->vf, &a);
                        if (!st->message)
                                set_message(&st->message, "not restored: %s", rc->message ?: "the reconf stopped");
                        break;
                default:
                        break;
                }
        }
        if (!rc->error && rc->n_bind_failed > 0)
                rc->failed = true;
        if (!rc->rollback && !rc->failed && !rc->error) {
                const struct svff_reconf_step *s = find_step(rc, SVFF_RECONF_PHASE_COMMIT, -1, SVFF_RECONF_DO_COMMIT, 0);

                if (s)
                        log_step(rc, s, NULL, 0, NULL, SVFF_PAUSE_NONE);
        }
        /* A rollback is a failure of what was asked, except when
         * recovering: then putting everything back is the goal. */
        if (rc->rollback && !rc->error && !rc->recovery)
                rc->error = SVFF_ERROR_RECONF_FAILED;
        reconf_finish(rc);
}

/* ---- starting ---- */

static struct reconf *reconf_new(struct manager *m, struct svff_reconf_plan *plan) {
        struct reconf *rc = calloc(1, sizeof(*rc));

        if (!rc)
                return NULL;
        rc->m = m;
        rc->plan = plan;
        rc->ctx = svff_ctx_ref(m->ctx);
        rc->log = json_object_new_array();
        rc->items = calloc(plan->n_items ? plan->n_items : 1, sizeof(*rc->items));
        rc->pause_cmd = strdup(m->config.device_pause_command);
        rc->unpause_cmd = strdup(m->config.device_unpause_command);
        rc->detach_timeout = m->config.detach_timeout_usec;
        rc->numvfs_timeout = m->config.numvfs_timeout_usec;
        rc->numvfs_per_vf = m->config.numvfs_timeout_per_vf_usec;
        if (!rc->log || !rc->items || !rc->pause_cmd || !rc->unpause_cmd) {
                rc->plan = NULL;
                reconf_free(rc);
                return NULL;
        }
        for (size_t i = 0; i < plan->n_items; i++) {
                snprintf(rc->items[i].vf, sizeof(rc->items[i].vf), "%s", plan->items[i].vf);
                snprintf(rc->items[i].rec_vf, sizeof(rc->items[i].rec_vf), "%s", plan->items[i].vf);
        }
        rc->n_now = plan->from;
        return rc;
}

/* Recovery: item i's record, under the plan's VF address or, when the
 * interrupted run's numvfs phase moved it there, under the address of
 * the VF with the same index now; rec_vf says where. */
static int find_record(struct reconf *rc, size_t i, struct svff_assignment *ret) {
        const struct svff_reconf_item *it = &rc->plan->items[i];
        struct item *st = &rc->items[i];

        if (svff_store_get_assignment(rc->m->store, it->vf, ret) > 0 && streq(ret->uuid, it->a.uuid))
                return 1;
        json_object_object_foreach(svff_store_vfs(rc->m->store), key, vrec) {
                const char *vpf = NULL;
                unsigned idx;

                if (svff_json_get_string(vrec, "pf", &vpf) < 0 || !streq(vpf, rc->plan->pf) ||
                    svff_json_get_unsigned(vrec, "index", &idx) < 0 || idx != it->index)
                        continue;
                if (svff_store_get_assignment(rc->m->store, key, ret) > 0 && streq(ret->uuid, it->a.uuid)) {
                        snprintf(st->rec_vf, sizeof(st->rec_vf), "%s", key);
                        snprintf(st->vf, sizeof(st->vf), "%s", key);
                        return 1;
                }
        }
        return 0;
}

static bool plan_needs_libvirt(const struct svff_reconf_plan *p) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].item >= 0 && p->steps[i].action != SVFF_RECONF_DO_FORGET)
                        return true;
        return false;
}

/* Takes plan; borrows journal, the decoded entry to recover from (NULL:
 * a new reconf, journaled here). With a call, every failure is
 * answered. */
static int reconf_start(struct manager *m, struct call *call, struct svff_reconf_plan *plan,
                        const struct reconf_journal *journal) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        bool recovery = journal != NULL;
        const char *journal_phase_name = journal ? journal->phase : "quiesce";
        const char *rollback_reason = journal ? journal->rollback_reason : NULL;
        struct reconf *rc;
        struct json_object *ev;
        int r;

        rc = reconf_new(m, plan);
        if (!rc) {
                svff_reconf_plan_free(plan);
                if (call)
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return -ENOMEM;
        }
        rc->recovery = recovery;
        if (recovery && journal->rollback) {
                /* The interrupted run was going back: so does this one,
                 * to the count it recorded (reconf-journal.h). */
                rollback_set(rc);
                rc->rollback_to = journal->rollback_to;
                rc->n_now = rc->rollback_to;
        }
        if (plan_needs_libvirt(plan)) {
                rc->conn = hv_conn_ref(m->hv, &err);
                if (!rc->conn) {
                        if (call)
                                call_errorf(call, SVFF_ERROR_HYPERVISOR_UNAVAILABLE, "uri", hv_uri(m->hv), "%s",
                                            svff_error_message(&err));
                        reconf_free(rc);
                        return -ENOTCONN;
                }
        }
        for (size_t i = 0; i < plan->n_items; i++)
                if (hv_vf_set_busy(m->hv, plan->items[i].vf) < 0) {
                        for (size_t k = 0; k < i; k++)
                                hv_vf_clear_busy(m->hv, plan->items[k].vf);
                        if (call)
                                call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", plan->items[i].vf,
                                            "An attach, detach, pause or unpause of VF %s is in progress; "
                                            "reconf PF %s once it is done.", plan->items[i].vf, plan->pf);
                        reconf_free(rc);
                        return -EBUSY;
                }
        r = manager_add_operation(m, plan->pf, "reconf", call, &rc->op);
        if (r < 0) {
                for (size_t i = 0; i < plan->n_items; i++)
                        hv_vf_clear_busy(m->hv, plan->items[i].vf);
                if (call)
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                reconf_free(rc);
                return r;
        }
        rc->op->data = rc;
        rc->op->total = (unsigned) plan->n_steps;

        if (!recovery) {
                rc->op->phase = "quiesce";
                r = journal_write(rc, "quiesce");
                if (r >= 0)
                        r = manager_commit(m, &err);
                if (r < 0) {
                        journal_clear(m, plan->pf);
                        reconf_abort(rc, SVFF_ERROR_STORE, false, "Journaling the plan in '%s' failed: %s; nothing was changed",
                                     svff_store_path(m->store),
                                     svff_error_is_set(&err) ? svff_error_message(&err) : strerror(-r));
                        return r;
                }
                fault_point("after-journal", 0);
                log_info("Reconf of PF %s: %u -> %u VFs, %zu assignment(s), mode %s%s%s.", plan->pf, plan->from,
                         plan->to, plan->n_items, svff_reconf_mode_to_string(plan->mode),
                         plan->force ? ", forced" : "",
                         call ? "" : " (svffd's own)");
        } else if (rc->rollback)
                log_info("Finishing the interrupted rollback of the reconf of PF %s to %u VFs: back to %u VFs "
                         "(it failed: %s).", plan->pf, plan->to, rc->rollback_to,
                         rollback_reason ?: "no reason recorded");
        else
                log_info("Recovering the interrupted reconf of PF %s to %u VFs (journal phase '%s').", plan->pf,
                         plan->to, journal_phase_name);

        ev = event_new(rc, recovery ? "reconf-recovering" : "reconf-started");
        if (ev) {
                json_object_object_add(ev, "total", json_object_new_int64((int64_t) plan->n_steps));
                json_object_object_add(ev, "mode", json_object_new_string(svff_reconf_mode_to_string(plan->mode)));
                if (recovery)
                        json_object_object_add(ev, "reason", json_object_new_string(journal_phase_name));
                if (recovery && rc->rollback) {
                        json_object_object_add(ev, "numvfs", json_object_new_int64(rc->rollback_to));
                        if (rollback_reason)
                                json_object_object_add(ev, "message", json_object_new_string(rollback_reason));
                }
        }
        manager_emit(m, rc->op, ev);

        if (recovery) {
                /* Where each assignment is, from the store: paused ones
                 * were taken off their domain by the interrupted run. */
                for (size_t i = 0; i < plan->n_items; i++) {
                        const struct svff_reconf_item *it = &plan->items[i];
                        struct svff_assignment a;

                        if (it->a.state != SVFF_ASSIGN_ATTACHED)
                                continue;
                        if (find_record(rc, i, &a) <= 0) {
                                set_message(&rc->items[i].message, "the assignment is no longer recorded");
                                rc->items[i].state = IS_RELEASED;
                                rc->items[i].unrecorded = true;
                                continue;
                        }
                        rc->items[i].state = IS_QUIESCED;
                        rc->items[i].mode = a.state == SVFF_ASSIGN_PAUSED ? a.pause_mode : SVFF_PAUSE_DETACH;
                }
                if (streq(journal_phase_name, "quiesce")) {
                        /* Nothing was destroyed yet: put everything back. */
                        rollback_set(rc);
                        set_message(&rc->message, "svffd stopped before the VF count changed");
                        start_restore(rc);
                } else {
                        /* Resuming, or the rollback's own steps: the count
                         * back (where it normally still is), its VFs bound,
                         * every assignment put back. Each is idempotent. */
                        if (rc->rollback)
                                set_message(&rc->message, "svffd stopped while rolling back a failed reconf (%s)",
                                            rollback_reason ?: "no reason recorded");
                        start_numvfs(rc);
                }
                return 0;
        }

        rc->pending = rc->conn ? submit_domain_jobs(rc, JOB_QUIESCE, want_quiesce) : 0;
        if (rc->pending == 0)
                quiesce_done(rc);
        return 0;
}

int reconf_journaled(struct manager *m, const char *pf) {
        struct json_object *e = journal_get(m, pf);
        const char *op = NULL;
        unsigned n = 0;

        if (!e || svff_json_get_string(e, "op", &op) < 0 || !streq(op, "reconf") ||
            svff_json_get_unsigned(e, "numvfs", &n) < 0)
                return -1;
        return (int) n;
}

bool reconf_pf_has_assignments(struct manager *m, const char *pf) {
        json_object_object_foreach(svff_store_assignments(m->store), vf, rec) {
                const char *vpf = NULL;

                (void) rec;
                if (svff_store_get_vf(m->store, vf, &vpf, NULL) > 0 && vpf && streq(vpf, pf))
                        return true;
        }
        return false;
}

/* The assignments of pf's VFs, for the planner. */
static int collect_items(struct manager *m, const char *pf, struct svff_reconf_item **ret, size_t *ret_n,
                         char **ret_bad) {
        _cleanup_free_ struct svff_reconf_item *items = NULL;
        size_t n = 0, alloc = 0;

        json_object_object_foreach(svff_store_assignments(m->store), vf, rec) {
                const char *vpf = NULL;
                struct json_object *vrec;
                struct svff_reconf_item it = {};
                int r;

                (void) rec;
                if (svff_store_get_vf(m->store, vf, &vpf, NULL) <= 0 || !vpf || !streq(vpf, pf))
                        continue;
                r = svff_store_get_assignment(m->store, vf, &it.a);
                vrec = json_object_object_get(svff_store_vfs(m->store), vf);
                if (r <= 0 || svff_json_get_unsigned(vrec, "index", &it.index) < 0) {
                        *ret_bad = strdup(vf);
                        return -EBADMSG;
                }
                snprintf(it.vf, sizeof(it.vf), "%s", vf);
                if (n == alloc) {
                        size_t a = alloc ? alloc * 2 : 16;
                        struct svff_reconf_item *p = realloc(items, a * sizeof(*p));

                        if (!p)
                                return -ENOMEM;
                        items = p;
                        alloc = a;
                }
                items[n++] = it;
        }
        *ret = TAKE_PTR(items);
        *ret_n = n;
        return 0;
}

static void reply_plan_refused(struct call *call, const struct svff_reconf_plan *p) {
        struct json_object *params = json_object_new_object();
        char msg[MESSAGE_MAX];
        size_t off = 0;

        off += (size_t) snprintf(msg, sizeof(msg), "Reconf of PF %s to %u VFs would lose", p->pf, p->to);
        for (size_t i = 0; i < p->n_items && off < sizeof(msg); i++) {
                const struct svff_reconf_item *it = &p->items[i];

                if (it->fate == SVFF_RECONF_REFUSED || it->fate == SVFF_RECONF_BLOCKED)
                        off += (size_t) snprintf(msg + off, sizeof(msg) - off, " VF %u (%s) of domain '%s'%s,",
                                                 it->index, it->vf, it->a.domain,
                                                 it->fate == SVFF_RECONF_BLOCKED ? " which is still detaching" : "");
        }
        if (off < sizeof(msg))
                snprintf(msg + off - 1, sizeof(msg) - off + 1, ". %s",
                         p->n_blocked > 0 ? "Finish the pending detach first ('svffctl detach VF')."
                                          : "Detach them first, or pass --force to release them.");
        json_object_object_add(params, "device", json_object_new_string(p->pf));
        json_object_object_add(params, "message", json_object_new_string(msg));
        json_object_object_add(params, "plan", svff_reconf_plan_to_json(p));
        call_error(call, p->n_blocked > 0 ? SVFF_ERROR_GUEST_NOT_RELEASED : SVFF_ERROR_ASSIGNMENTS_WOULD_BE_LOST,
                   params);
        json_object_put(params);
}

static void reconf_with_snapshot(struct manager *m, struct call *call) {
        struct json_object *params = call_request(call)->parameters;
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *plan = NULL;
        _cleanup_free_ struct svff_reconf_item *items = NULL;
        _cleanup_free_ char *bad = NULL;
        const struct svff_pf *found = NULL;
        struct svff_reconf_input in = {};
        const char *pf = NULL, *mode_s = NULL, *driver = NULL;
        bool dry_run = false, force = false;
        struct operation *op;
        unsigned numvfs = 0;
        size_t n = 0;
        int r, mode = SVFF_RECONF_PAUSE;

        (void) svff_json_get_string(params, "pf", &pf);
        (void) svff_json_get_unsigned(params, "numvfs", &numvfs);
        (void) svff_json_get_bool(params, "dry_run", &dry_run);
        (void) svff_json_get_bool(params, "force", &force);
        if (svff_json_get_string_or_null(params, "mode", &mode_s) >= 0 && mode_s)
                mode = svff_reconf_mode_from_string(mode_s);

        for (size_t i = 0; m->snapshot && i < m->snapshot->n_pfs; i++)
                if (streq(m->snapshot->pfs[i]->address, pf))
                        found = m->snapshot->pfs[i];
        if (!found) {
                call_errorf(call, SVFF_ERROR_NO_SUCH_DEVICE, "device", pf,
                            "No SR-IOV PF %s; 'svffctl list' shows the PFs there are.", pf);
                return;
        }
        if (numvfs > found->totalvfs) {
                call_errorf(call, SVFF_ERROR_TOO_MANY_VFS, "device", pf,
                            "PF %s supports at most %u VFs (sriov_totalvfs: its driver's limit, which may be "
                            "below the device's), not %u.", pf, found->totalvfs, numvfs);
                return;
        }
        if (!dry_run && (op = manager_find_operation(m, pf))) {
                call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", pf,
                            "A %s of PF %s is in progress (%s, %u/%u); wait for it ('svffctl status').", op->kind,
                            pf, op->phase, op->done, op->total);
                return;
        }
        if (!dry_run && assign_pf_changing(m, pf, call))
                return;
        r = collect_items(m, pf, &items, &n, &bad);
        if (r < 0) {
                call_errorf(call, r == -ENOMEM ? SVFF_ERROR_INTERNAL : SVFF_ERROR_STORE, "path",
                            svff_store_path(m->store), "The records of VF %s in '%s' cannot be read.", strna(bad),
                            svff_store_path(m->store));
                return;
        }
        if (svff_store_get_pf(m->store, pf, NULL, &driver) <= 0 || !driver)
                driver = m->config.vf_driver;
        in = (struct svff_reconf_input) {
                .pf = pf, .numvfs = found->numvfs, .driver = driver, .items = items, .n_items = n,
        };
        r = svff_reconf_plan_new(&in, numvfs, (enum svff_reconf_mode) mode, force, &plan);
        if (r < 0) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Planning the reconf of PF %s failed: %s.", pf,
                            strerror(-r));
                return;
        }
        if (dry_run) {
                struct json_object *p = json_object_new_object();

                json_object_object_add(p, "pf", json_object_new_string(pf));
                json_object_object_add(p, "dry_run", json_object_new_boolean(true));
                json_object_object_add(p, "executable", json_object_new_boolean(svff_reconf_plan_ok(plan)));
                {
                        /* What the numvfs writes and the binding may take,
                         * and the keys that set it (svff.conf(5)). */
                        struct json_object *d = json_object_new_object();
                        uint64_t w = (found->numvfs > 0 ? svff_config_numvfs_timeout(&m->config, found->numvfs) : 0) +
                                     (numvfs > 0 ? svff_config_numvfs_timeout(&m->config, numvfs) : 0);

                        json_object_object_add(d, "numvfs_msec", json_object_new_int64((int64_t) (w / 1000)));
                        json_object_object_add(d, "bind_msec", json_object_new_int64((int64_t) (
                                svff_config_bind_timeout(&m->config, numvfs) / 1000)));
                        json_object_object_add(p, "deadlines", d);
                        json_object_object_add(p, "totalvfs", json_object_new_int64(found->totalvfs));
                }
                json_object_object_add(p, "plan", svff_reconf_plan_to_json(plan));
                call_reply(call, p);
                json_object_put(p);
                return;
        }
        if (!svff_reconf_plan_ok(plan)) {
                reply_plan_refused(call, plan);
                return;
        }
        log_info("Reconf of PF %s to %u VFs requested by uid %u.", pf, numvfs, (unsigned) call_peer(call)->uid);
        (void) reconf_start(m, call, TAKE_PTR(plan), NULL);
}

/* Resumes the journaled reconf of pf (entry e); call may be NULL. */
static int resume_journal(struct manager *m, struct call *call, const char *pf, struct json_object *e) {
        struct reconf_journal j = {};
        int r;

        r = reconf_journal_decode(e, &j);
        if (r < 0 || !streq(j.plan->pf, pf)) {
                reconf_journal_done(&j);
                log_error("The journal of PF %s holds a reconf plan svffd cannot read; leaving it for the operator.",
                          pf);
                if (call)
                        call_errorf(call, SVFF_ERROR_STORE, "path", svff_store_path(m->store),
                                    "The journaled reconf plan of PF %s in '%s' cannot be read.", pf,
                                    svff_store_path(m->store));
                return -EBADMSG;
        }
        r = reconf_start(m, call, TAKE_PTR(j.plan), &j);
        reconf_journal_done(&j);
        return r;
}

void reconf_recover(struct manager *m) {
        struct json_object *j = svff_store_journal(m->store), *pfs;
        _cleanup_strv_free_ char **todo = NULL;
        size_t n = 0;

        /* A stopping svffd leaves the journals to its next start. */
        if (m->shutting_down)
                return;
        if (!j || !json_object_object_get_ex(j, "pfs", &pfs) || !json_object_is_type(pfs, json_type_object))
                return;
        json_object_object_foreach(pfs, pf, e) {
                const char *op = NULL;
                char **t;

                if (svff_json_get_string(e, "op", &op) < 0 || !streq(op, "reconf") || manager_find_operation(m, pf))
                        continue;
                t = realloc(todo, (n + 2) * sizeof(char *));
                if (!t)
                        return;
                todo = t;
                todo[n] = strdup(pf);
                if (!todo[n])
                        return;
                todo[++n] = NULL;
        }
        /* Collected first: starting one edits the journal. */
        for (size_t i = 0; i < n; i++) {
                struct json_object *entry = journal_get(m, todo[i]);

                if (entry)
                        (void) resume_journal(m, NULL, todo[i], entry);
        }
}

void method_reconf(struct manager *m, struct call *call) {
        static const char *const allowed[] = { "pf", "numvfs", "mode", "dry_run", "force", NULL };
        struct json_object *params = call_request(call)->parameters, *v, *e;
        char pf[SVFF_PCI_ADDR_STRLEN];
        const char *mode = NULL, *jop = NULL;
        unsigned numvfs;
        bool dry_run = false, b;
        int r;

        if (!params_check_known(call, SVFF_ERROR_INVALID_PARAMETER, allowed) || !params_get_address(call, "pf", pf))
                return;
        r = svff_json_get_unsigned(params, "numvfs", &numvfs);
        if (r < 0 || numvfs > 65535) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "numvfs",
                            r == -ENOENT ? "Parameter 'numvfs' is required."
                                         : "Parameter 'numvfs' must be an integer from 0 to 65535.");
                return;
        }
        for (const char *const *k = (const char *const[]) { "dry_run", "force", NULL }; *k; k++)
                if (json_object_object_get_ex(params, *k, &v) && v && svff_json_get_bool(params, *k, &b) < 0) {
                        call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", *k,
                                    "Parameter '%s' must be true or false.", *k);
                        return;
                }
        if ((json_object_object_get_ex(params, "mode", &v) && v &&
             (svff_json_get_string(params, "mode", &mode) < 0 || svff_reconf_mode_from_string(mode) < 0))) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "mode",
                            "Parameter 'mode' must be 'pause' or 'detach'.");
                return;
        }
        (void) svff_json_get_bool(params, "dry_run", &dry_run);
        if (!dry_run && !require_privileged(m, call))
                return;
        json_object_object_add(params, "pf", json_object_new_string(pf));

        /* An interrupted reconf of this PF (a numvfs write blocked past
         * its deadline, or svffd stopped): the same request completes it. */
        e = journal_get(m, pf);
        if (!dry_run && e && svff_json_get_string(e, "op", &jop) >= 0 && streq(jop, "reconf") &&
            !manager_find_operation(m, pf)) {
                unsigned jn = 0;

                (void) svff_json_get_unsigned(e, "numvfs", &jn);
                if (jn != numvfs) {
                        call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", pf,
                                    "An interrupted reconf of PF %s to %u VFs is journaled; run 'svffctl reconf %s %u' "
                                    "to complete it first.", pf, jn, pf, jn);
                        return;
                }
                log_info("Completing the interrupted reconf of PF %s as requested by uid %u.", pf,
                         (unsigned) call_peer(call)->uid);
                (void) resume_journal(m, call, pf, e);
                return;
        }
        manager_with_snapshot(m, call, reconf_with_snapshot);
}
