/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "busy.h"
#include "classes.h"
#include "flash-hook.h"
#include "interface.h"
#include "journal.h"
#include "json-util.h"
#include "libvirt.h"
#include "log.h"
#include "params.h"
#include "pciaddr.h"
#include "plan-deadlines.h"
#include "reconf-guests.h"
#include "reconf-journal.h"
#include "reconf-machine.h"
#include "reconf-ops.h"
#include "reconf.h"
#include "reconfigure.h"

#define MESSAGE_MAX 2048

/* ---- the outcome ---- */

static struct json_object *outcome_json(struct reconf_run *run) {
        struct reconf_machine *rm = run->rm;
        const struct svff_reconf_plan *plan = reconf_machine_plan(rm);
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < plan->n_items; i++) {
                const struct svff_reconf_item *it = &plan->items[i];
                const struct reconf_item *s = reconf_machine_item(rm, i);
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
                json_object_object_add(o, "outcome", json_object_new_string(reconf_machine_item_outcome(rm, i)));
                json_object_object_add(o, "has_vf", json_object_new_boolean(reconf_machine_item_has_vf(rm, i)));
                json_object_object_add(o, "mode", s->mode != SVFF_PAUSE_NONE
                                                          ? json_object_new_string(svff_pause_mode_to_string(s->mode))
                                                          : NULL);
                json_object_object_add(o, "message", s->message ? json_object_new_string(s->message) : NULL);
                json_object_object_add(o, "device_off_msec",
                                       run->items[i].off_usec > 0
                                               ? json_object_new_int64((int64_t) (run->items[i].off_usec / USEC_PER_MSEC))
                                               : NULL);
                json_object_array_add(a, o);
        }
        return a;
}

static void recovered_add(struct reconf_run *run, const char *outcome, const char *message) {
        struct operation *op = run->userdata;
        struct manager *m = op->manager;
        struct json_object *o = json_object_new_object();

        if (!o)
                return;
        json_object_object_add(o, "pf", json_object_new_string(reconf_machine_plan(run->rm)->pf));
        json_object_object_add(o, "outcome", json_object_new_string(outcome));
        json_object_object_add(o, "numvfs", json_object_new_int64(reconf_machine_numvfs_now(run->rm)));
        json_object_object_add(o, "message", json_object_new_string(message));
        json_object_object_add(o, "assignments", outcome_json(run));
        json_object_object_add(o, "after_restart", json_object_new_boolean(reconf_machine_after_restart(run->rm)));
        if (!m->recovered)
                m->recovered = json_object_new_array();
        if (!m->recovered || json_object_array_add(m->recovered, o) < 0)
                json_object_put(o);
}

static const char *error_name(enum reconf_error e) {
        switch (e) {
        case RECONF_OK:
                return NULL;
        case RECONF_ERR_TIMEOUT:
                return SVFF_ERROR_TIMEOUT;
        case RECONF_ERR_STORE:
                return SVFF_ERROR_STORE;
        case RECONF_ERR_SHUTTING_DOWN:
                return SVFF_ERROR_SHUTTING_DOWN;
        case RECONF_ERR_INTERRUPTED:
                return SVFF_ERROR_REPROGRAM_INTERRUPTED;
        case RECONF_ERR_FAILED:
        default:
                return SVFF_ERROR_RECONF_FAILED;
        }
}

/* What the run measured, for the next prediction of the PF's guests:
 * each domain's hot-unplug and re-attach per device, and the host part
 * between the last quiesce and the first restore. Only from devices
 * that were hot-unplugged (not natively paused) from a guest that saw
 * them go and come back (reconf-ops.c times those alone). */
static bool item_measured(struct reconf_run *run, size_t i) {
        return run->items[i].restore_ended_usec > 0 &&
               reconf_machine_item(run->rm, i)->mode == SVFF_PAUSE_DETACH;
}

static void record_figures(struct manager *m, struct reconf_run *run) {
        const struct svff_reconf_plan *plan = reconf_machine_plan(run->rm);
        _cleanup_free_ struct reconf_domain_figure *d = calloc(plan->n_items ?: 1, sizeof(*d));
        usec_t quiesced = 0, restored = UINT64_MAX;
        size_t n = 0;

        if (!d)
                return;
        for (size_t i = 0; i < plan->n_items; i++) {
                usec_t unplug = 0, reattach = 0;
                unsigned devices = 0;
                bool seen = false;

                if (!item_measured(run, i))
                        continue;
                quiesced = MAX(quiesced, run->items[i].quiesce_ended_usec);
                restored = MIN(restored, run->items[i].restore_began_usec);
                for (size_t k = 0; k < n; k++)
                        seen = seen || streq(d[k].uuid, plan->items[i].a.uuid);
                if (seen)
                        continue;
                /* The domain's devices go and come back one at a time. */
                for (size_t k = i; k < plan->n_items; k++) {
                        const struct reconf_item_glue *g = &run->items[k];

                        if (!item_measured(run, k) || !streq(plan->items[k].a.uuid, plan->items[i].a.uuid))
                                continue;
                        unplug += g->quiesce_ended_usec - g->quiesce_began_usec;
                        reattach += g->restore_ended_usec - g->restore_began_usec;
                        devices++;
                }
                snprintf(d[n].uuid, sizeof(d[n].uuid), "%s", plan->items[i].a.uuid);
                d[n].unplug_usec = MAX(unplug / devices, 1u);
                d[n].reattach_usec = MAX(reattach / devices, 1u);
                n++;
        }
        if (n == 0)
                return;
        if (reconf_figures_record(&m->reconf_figures, plan->pf, restored > quiesced ? restored - quiesced : 1, d,
                                  n) < 0)
                log_warning("Out of memory: the figures of this reconf of PF %s are not kept for the next.",
                            plan->pf);
}

static uint64_t realtime_usec(void);

/* What to do about a guest that did not answer the unplug: the first
 * assignment whose quiesce ran out of time, named with its domain, and
 * the request to run again once the domain lets its VF go, as sentences
 * that follow the failure's; "" when there is none. The quiesce comes
 * before every PF step, so a PF still at its old count was not changed. */
static void unanswered_unplug(struct manager *m, struct reconf_machine *rm, unsigned n_now, char *buf, size_t size) {
        const struct svff_reconf_plan *plan = reconf_machine_plan(rm);

        *buf = '\0';
        for (size_t i = 0; i < plan->n_items; i++) {
                const struct reconf_item *s = reconf_machine_item(rm, i);
                char again[96];

                if (s->state != RECONF_ITEM_QUIESCE_FAILED || s->r != -ETIMEDOUT)
                        continue;
                if (reconf_machine_reprogram(rm))
                        snprintf(again, sizeof(again), "the reprogram");
                else
                        snprintf(again, sizeof(again), "'svffctl reconf %s %u%s'", plan->pf, plan->to,
                                 plan->from == plan->to ? " --cycle" : "");
                snprintf(buf, size,
                         ". Domain '%s' did not let VF %s go within %" PRIu64 " s (reconf_detach_timeout_sec): its "
                         "guest did not answer the unplug (no OS, hung, or busy), and the VF stays in it, "
                         "'detaching'.%s Once the domain lets the VF go, or is shut down, run %s again.",
                         plan->items[i].a.domain, plan->items[i].vf,
                         m->config.reconf_detach_timeout_usec / USEC_PER_SEC,
                         n_now == plan->from ? " The VF count was not changed." : "", again);
                return;
        }
}

/* The machine ended: the reply (or, for svffd's own recovery, the
 * Status record), the events, and the run freed. */
static void reconf_finished(struct reconf_run *run) {
        struct operation *op = run->userdata;
        struct manager *m = op->manager;
        struct reconf_machine *rm = run->rm;
        const struct svff_reconf_plan *plan = reconf_machine_plan(rm);
        struct json_object *p = json_object_new_object(), *ev;
        unsigned n_with = 0, n_without = 0, n_now = reconf_machine_numvfs_now(rm);
        bool recovery = reconf_machine_recovery(rm), rollback = reconf_machine_rollback(rm);
        const char *message = NULL, *error;
        const char *what = reconf_machine_reprogram(rm) ? "Reprogram" : "Reconf";
        char msg[MESSAGE_MAX];
        bool outcomes;
        LOG_CONTEXT(.pf = plan->pf, .operation = recovery ? "recover"
                                                  : reconf_machine_reprogram(rm) ? "reprogram" : "reconf");

        error = error_name(reconf_machine_result(rm, &message));
        manager_sysfs_changed(m, plan->pf);
        /* A reprogram's host part holds its flash, and a recovery times
         * only what it did itself: neither is a reconf to plan from. */
        if (!error && !rollback && !recovery && !reconf_machine_reprogram(rm))
                record_figures(m, run);
        {
                uint64_t t = realtime_usec();

                metrics_observe_reconf(m->metrics, t > op->started_usec ? t - op->started_usec : 0);
                for (size_t i = 0; i < plan->n_items; i++)
                        if (run->items[i].off_usec > 0)
                                metrics_observe_downtime(m->metrics, run->items[i].off_usec);
                for (unsigned i = reconf_machine_provision_failed(rm); i > 0; i--)
                        metrics_count_provision_failure(m->metrics);
        }
        for (size_t i = 0; i < plan->n_items; i++) {
                hv_vf_clear_busy(m->hv, plan->items[i].vf);
                if (reconf_machine_item(rm, i)->state == RECONF_ITEM_RELEASED)
                        continue;
                if (reconf_machine_item_has_vf(rm, i))
                        n_with++;
                else
                        n_without++;
        }
        if (error && streq(error, SVFF_ERROR_STORE) && message)
                snprintf(msg, sizeof(msg), "%s of PF %s to %u VFs failed: %s (in '%s'). %u assignment(s) have "
                         "their VF, %u do not", what, plan->pf, plan->to, message, svff_store_path(m->store), n_with,
                         n_without);
        else if (error && plan->n_items == 0)
                /* No assignment to account for: no "0 do not". */
                snprintf(msg, sizeof(msg), "%s of PF %s to %u VFs failed: %s", what, plan->pf, plan->to,
                         message ?: "see the steps");
        else if (error) {
                char hint[768];

                unanswered_unplug(m, rm, n_now, hint, sizeof(hint));
                snprintf(msg, sizeof(msg), "%s of PF %s to %u VFs failed: %s. %u assignment(s) have their VF, "
                         "%u do not%s%s", what, plan->pf, plan->to, message ?: "see the assignments", n_with,
                         n_without, n_without > 0 ? " (see each one's message)" : "", hint);
        }
        else if (rollback)
                /* Only a recovery rolls back without an error. */
                snprintf(msg, sizeof(msg), "PF %s is back at %u VFs on %s, its reconf to %u VFs rolled back; "
                         "%u assignment(s) kept", plan->pf, n_now, plan->driver, plan->to, n_with);
        else
                snprintf(msg, sizeof(msg), "PF %s has %u VFs on %s; %u assignment(s) kept%s", plan->pf, n_now,
                         plan->driver, n_with, plan->n_released > 0 ? ", the released ones dropped" : "");

        /* The reply and each error carry the fields they declare, no
         * more: a typed client drops or rejects the others. */
        outcomes = !error || streq(error, SVFF_ERROR_RECONF_FAILED) || streq(error, SVFF_ERROR_TIMEOUT) ||
                   streq(error, SVFF_ERROR_REPROGRAM_INTERRUPTED);
        if (!error) {
                json_object_object_add(p, "pf", json_object_new_string(plan->pf));
                json_object_object_add(p, "numvfs", json_object_new_int64(n_now));
        } else if (streq(error, SVFF_ERROR_STORE))
                json_object_object_add(p, "path", json_object_new_string(svff_store_path(m->store)));
        else if (outcomes)
                json_object_object_add(p, "device", json_object_new_string(plan->pf));
        json_object_object_add(p, "message", json_object_new_string(msg));
        if (outcomes) {
                json_object_object_add(p, "assignments", outcome_json(run));
                /* Not the plan again: with 252 assignments the reply would
                 * pass the message cap; the dry run and the journal have it.
                 * The steps are those done, as the machine logged them. */
                json_object_object_add(p, "steps", json_object_get(reconf_machine_log(rm)));
        }

        if (recovery)
                recovered_add(run, reconf_machine_interrupted(rm) ? "interrupted" : error ? "failed"
                                   : rollback ? "rolled-back" : "resumed", msg);

        ev = reconf_run_event(run, recovery ? (error ? "reconf-recovery-failed" : "reconf-recovered")
                                            : (error ? "reconf-failed" : "reconf-done"));
        if (ev) {
                json_object_object_add(ev, "message", json_object_new_string(msg));
                json_object_object_add(ev, "total", json_object_new_int64(n_now));
                if (recovery)
                        json_object_object_add(ev, "reason", json_object_new_string(
                                rollback ? "rolled back from the journal" : "resumed from the journal"));
                if (error)
                        json_object_object_add(ev, "error", json_object_new_string(error));
        }
        manager_emit(m, op, ev);

        if (error) {
                log_warning("%s", msg);
                for (size_t i = 0; i < plan->n_items; i++) {
                        const struct reconf_item *s = reconf_machine_item(rm, i);

                        if (!reconf_machine_item_has_vf(rm, i) && s->state != RECONF_ITEM_RELEASED)
                                log_warning("  Domain '%s' does not have VF %s: %s", plan->items[i].a.domain, s->vf,
                                            s->message ?: reconf_machine_item_outcome(rm, i));
                }
                if (op->call)
                        call_error(op->call, error, p);
        } else {
                log_info("%s%s", recovery ? "Recovered: " : "", msg);
                if (op->call)
                        call_reply(op->call, p);
        }
        json_object_put(p);
        if (op->finished)
                op->finished(m, plan->pf, error ? msg : NULL);
        manager_remove_operation(m, op);
        reconf_run_free(run);
}

/* ---- what a run is given ---- */

static void env_stopping(void *userdata, bool *ret_stop, bool *ret_now) {
        struct operation *op = userdata;

        *ret_stop = op->manager->shutting_down;
        *ret_now = op->manager->exiting;
}

static int env_commit(void *userdata, const char *pf, struct json_object *journal, struct svff_error *err) {
        struct operation *op = userdata;
        int r;

        if (journal) {
                r = journal_set(op->manager, pf, journal);
                if (r < 0)
                        return svff_error_set(err, r, "Out of memory");
        } else
                journal_clear(op->manager, pf);
        return manager_commit(op->manager, err);
}

static void env_sysfs_changed(void *userdata, const char *pf) {
        struct operation *op = userdata;

        manager_sysfs_changed(op->manager, pf);
}

static void env_phase(void *userdata, const char *phase) {
        struct operation *op = userdata;

        op->phase = phase;
}

static struct json_object *env_class_record(void *userdata, const char *vf) {
        struct operation *op = userdata;
        struct json_object *rec = classes_vf_record(op->manager, vf);

        return rec ? svff_json_copy(rec) : NULL;
}

static void env_class_recorded(void *userdata, const char *vf, struct json_object *record) {
        struct operation *op = userdata;

        /* Committed with the run's next journal write. */
        (void) classes_record_vf(op->manager, vf, record);
}

/* A step done or failed: Monitor and the caller (when it asked for
 * "more") see it with the operation's progress. */
static void env_step(void *userdata, struct json_object *step, int item, int r, const char *message) {
        struct operation *op = userdata;
        struct reconf_run *run = op->data;
        struct json_object *ev = reconf_run_event(run, r < 0 ? "reconf-step-failed" : "reconf-step");
        const char *action = NULL;

        /* A device class's provision of a VF is a step of the plan only
         * where the plan knew the class (total counts those): done never
         * passes total. */
        (void) svff_json_get_string(step, "action", &action);
        if (!action || !streq(action, "provision") || reconf_machine_plan(run->rm)->provision)
                op->done++;
        op->phase = reconf_machine_phase(run->rm);
        if (!ev)
                return;
        /* An event's deadline_msec is a numvfs write's, not the plan's
         * (which only a dry run's steps carry). */
        json_object_object_foreach(step, k, v)
                if (!streq(k, "vf") && !streq(k, "pf") && !streq(k, "deadline_msec"))
                        json_object_object_add(ev, k, json_object_get(v));
        if (item >= 0) {
                const struct reconf_item *it = reconf_machine_item(run->rm, (size_t) item);

                json_object_object_add(ev, "device", json_object_new_string(it->vf));
                if (it->mode != SVFF_PAUSE_NONE && r >= 0)
                        json_object_object_add(ev, "mode", json_object_new_string(svff_pause_mode_to_string(it->mode)));
                if (it->state == RECONF_ITEM_RESTORED && run->items[item].off_usec > 0)
                        json_object_object_add(ev, "device_off_msec", json_object_new_int64(
                                (int64_t) (run->items[item].off_usec / USEC_PER_MSEC)));
        } else if (json_object_object_get_ex(step, "vf", NULL))
                json_object_object_add(ev, "device", json_object_get(json_object_object_get(step, "vf")));
        json_object_object_add(ev, "done", json_object_new_int64(op->done));
        json_object_object_add(ev, "total", json_object_new_int64(op->total));
        if (r < 0) {
                json_object_object_add(ev, "error", json_object_new_string(strerror(-r)));
                if (message)
                        json_object_object_add(ev, "message", json_object_new_string(message));
        }
        manager_emit(op->manager, op, ev);
}

/* A numvfs write in the kernel: the VFs so far, on Monitor and to the
 * caller, as init shows its own (its done and total stay the plan's
 * steps). */
static void env_numvfs_progress(void *userdata, unsigned target, unsigned n, usec_t deadline) {
        struct operation *op = userdata;
        struct reconf_run *run = op->data;
        struct json_object *ev = reconf_run_event(run, "numvfs-progress");
        char msg[160];

        if (!ev)
                return;
        if (target > 0)
                snprintf(msg, sizeof(msg), "%u of %u VFs so far; the write is given up after %llu s", n, target,
                         (unsigned long long) (deadline / USEC_PER_SEC));
        else
                snprintf(msg, sizeof(msg), "%u VF%s left to remove; the write is given up after %llu s", n,
                         n == 1 ? "" : "s", (unsigned long long) (deadline / USEC_PER_SEC));
        json_object_object_add(ev, "phase", json_object_new_string(reconf_machine_rollback(run->rm) ? "rollback"
                                                                                                   : "numvfs"));
        json_object_object_add(ev, "numvfs", json_object_new_int64(target));
        json_object_object_add(ev, "vfs", json_object_new_int64(n));
        json_object_object_add(ev, "deadline_msec", json_object_new_int64((int64_t) (deadline / USEC_PER_MSEC)));
        json_object_object_add(ev, "done", json_object_new_int64(op->done));
        json_object_object_add(ev, "total", json_object_new_int64(op->total));
        json_object_object_add(ev, "message", json_object_new_string(msg));
        manager_emit(op->manager, op, ev);
}

/* ---- starting ---- */

/* CLOCK_REALTIME, as an operation's started_usec: the journal records it
 * before the operation exists. */
static uint64_t realtime_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

enum { RESUME_NONE, RESUME_RESCAN, RESUME_REMOVE };

/* Takes plan; borrows journal, the decoded entry to recover from (NULL:
 * a new reconf, journaled first by the machine). With a call, every
 * failure is answered. image: a reprogram's (NULL: a reconf, or a
 * recovery's own), ids the identities it may leave the PF with
 * (borrowed). resume: for an interrupted reprogram's journal, go on from
 * the removal (a reprogram again) or the rescan (a reconf). owner: who
 * owns the PF's count once the reconf went through (NULL: the journal's,
 * if any). */

static int reconf_start(struct manager *m, struct call *call, struct svff_reconf_plan *plan,
                        const struct reconf_journal *journal, const char *image, struct json_object *ids,
                        int resume, const char *owner) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        bool recovery = journal != NULL;
        _cleanup_(json_object_putp) struct json_object *class_policy = NULL;
        const struct svff_policy *pol = manager_pf_policy(m, plan->pf);
        virConnectPtr conn = NULL;
        struct reconf_run *run;
        struct reconf_env env;
        struct json_object *ev;
        uint64_t started;
        int r;

        LOG_CONTEXT(.pf = plan->pf, .operation = (image || (journal && journal->reprogram)) ? "reprogram" : "reconf");

        if (svff_reconf_plan_needs_libvirt(plan)) {
                conn = hv_conn_ref(m->hv, &err);
                if (!conn) {
                        if (call)
                                call_errorf(call, SVFF_ERROR_HYPERVISOR_UNAVAILABLE, "uri", hv_uri(m->hv), "%s",
                                            svff_error_message(&err));
                        svff_reconf_plan_free(plan);
                        return -ENOTCONN;
                }
        }
        env = (struct reconf_env) {
                .ctx = m->ctx,
                .store = m->store,
                .event = m->event,
                .ops_pool = m->ops_pool,
                .virt_pool = hv_pool(m->hv),
                .disc_pool = snapshot_cache_pool(m->snapshots),
                .removals = hv_removals(m->hv),
                .pause_cmd = m->config.device_pause_command,
                .unpause_cmd = m->config.device_unpause_command,
                .detach_timeout = m->config.reconf_detach_timeout_usec,
                .numvfs_timeout = m->config.numvfs_timeout_usec,
                .numvfs_per_vf = m->config.numvfs_timeout_per_vf_usec,
                .bind_timeout = m->config.bind_timeout_usec,
                .bind_per_vf = m->config.bind_timeout_per_vf_usec,
                .flash_hook = m->config.flash_hook,
                .flash_image_dir = m->config.flash_image_dir,
                .flash_timeout = m->config.flash_timeout_usec,
                .class_policy = class_policy = classes_policy_settings(m, plan->pf),
                .verify_image_sha256 = pol && pol->verify_sha256,
                .stopping = env_stopping,
                .commit = env_commit,
                .sysfs_changed = env_sysfs_changed,
                .phase = env_phase,
                .numvfs_progress = env_numvfs_progress,
                .step = env_step,
                .finished = reconf_finished,
                .class_record = env_class_record,
                .class_recorded = env_class_recorded,
        };
        /* The run takes plan and conn, also when it fails; its userdata
         * is the operation, made below. */
        started = journal && journal->started_usec > 0 ? journal->started_usec : realtime_usec();
        r = reconf_run_new(&env, NULL, plan, journal, started, conn, &run);
        if (r < 0) {
                if (call)
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return r;
        }
        plan = NULL;
        r = image ? reconf_machine_set_reprogram(run->rm, image, ids) : 0;
        if (r >= 0 && owner)
                r = reconf_machine_set_owner(run->rm, owner);
        if (r < 0) {
                if (call)
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "%s",
                                    r == -ENOMEM ? "Out of memory."
                                                 : "The image's path or the policy's reprogram_ids cannot be "
                                                   "recorded in the plan.");
                reconf_run_free(run);
                return r;
        }
        if (resume != RESUME_NONE)
                reconf_machine_resume_reprogram(run->rm, resume == RESUME_REMOVE);
        reconf_machine_set_after_restart(run->rm, recovery && journal_left_by_earlier_run(m, journal->started_usec));
        if (!recovery) {
                /* Each survivor's device-class record goes into the
                 * journal before numvfs 0 wipes the VF: provision puts it
                 * back from there, also after a crash. */
                const struct svff_reconf_plan *p = reconf_machine_plan(run->rm);

                for (size_t i = 0; i < p->n_items; i++) {
                        struct json_object *rec = classes_vf_record(m, p->items[i].vf);

                        if (rec)
                                reconf_machine_set_class(run->rm, i, svff_json_copy(rec));
                }
        }
        {
                const struct svff_reconf_plan *p = reconf_machine_plan(run->rm);
                struct operation *op;

                for (size_t i = 0; i < p->n_items; i++)
                        if (hv_vf_set_busy(m->hv, p->items[i].vf) < 0) {
                                for (size_t k = 0; k < i; k++)
                                        hv_vf_clear_busy(m->hv, p->items[k].vf);
                                if (call)
                                        call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", p->items[i].vf,
                                                    "An attach, detach, pause or unpause of VF %s is in progress; "
                                                    "reconf PF %s once it is done.", p->items[i].vf, p->pf);
                                reconf_run_free(run);
                                return -EBUSY;
                        }
                r = manager_add_operation(m, p->pf, reconf_machine_reprogram(run->rm) ? "reprogram" : "reconf", call,
                                          &op);
                if (r < 0) {
                        for (size_t i = 0; i < p->n_items; i++)
                                hv_vf_clear_busy(m->hv, p->items[i].vf);
                        if (call)
                                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                        reconf_run_free(run);
                        return r;
                }
                op->data = run;
                run->userdata = op;
                if (!recovery)
                        op->started_usec = started;
                op->phase = reconf_machine_phase(run->rm);
                op->total = (unsigned) p->n_steps;
        }
        {
                const struct svff_reconf_plan *p = reconf_machine_plan(run->rm);
                bool rollback = reconf_machine_rollback(run->rm);
                const char *reason = journal ? journal->rollback_reason : NULL;

                if (!recovery)
                        log_info("%s of PF %s: %u -> %u VFs, %zu assignment(s), mode %s%s%s.",
                                 reconf_machine_reprogram(run->rm) ? "Reprogram" : "Reconf", p->pf, p->from,
                                 p->to, p->n_items, svff_reconf_mode_to_string(p->mode), p->force ? ", forced" : "",
                                 call ? "" : " (svffd's own)");
                else if (rollback)
                        log_info("Finishing the interrupted rollback of the reconf of PF %s to %u VFs: back to %u "
                                 "VFs (it failed: %s).", p->pf, p->to, reconf_machine_rollback_to(run->rm),
                                 reason ?: "no reason recorded");
                else
                        log_info("Recovering the interrupted reconf of PF %s to %u VFs (journal phase '%s').", p->pf,
                                 p->to, journal->phase);

                ev = reconf_run_event(run, recovery ? "reconf-recovering" : "reconf-started");
                if (ev) {
                        json_object_object_add(ev, "total", json_object_new_int64((int64_t) p->n_steps));
                        json_object_object_add(ev, "mode", json_object_new_string(svff_reconf_mode_to_string(p->mode)));
                        if (recovery)
                                json_object_object_add(ev, "reason", json_object_new_string(journal->phase));
                        if (recovery && rollback) {
                                json_object_object_add(ev, "numvfs",
                                                       json_object_new_int64(reconf_machine_rollback_to(run->rm)));
                                if (reason)
                                        json_object_object_add(ev, "message", json_object_new_string(reason));
                        }
                }
                manager_emit(m, run->userdata, ev);
        }
        if (recovery)
                /* Where each assignment is, from the store: paused ones
                 * were taken off their domain by the interrupted run. */
                reconf_run_recover_items(run);
        reconf_run_start(run);
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

/* A dry run waiting for its device class's plan: the reply so far and
 * the plan it shows. */
struct dry_run {
        struct call *call;
        struct json_object *reply;
        struct svff_reconf_plan *plan;
        bool strict;            /* a class that cannot plan refuses it */
};

static void dry_run_free(struct dry_run *d) {
        if (!d)
                return;
        call_unref(d->call);
        json_object_put(d->reply);
        svff_reconf_plan_free(d->plan);
        free(d);
}

/* The dry run's reply, with the device class's plan. */
static void dry_run_class_done(struct manager *m, int r, const char *message, struct json_object *class_plan,
                               void *userdata) {
        struct dry_run *d = userdata;

        /* The dry run never waits for a step on the PF: it says so. */
        if (r == -EBUSY && !class_plan) {
                call_errorf(d->call, SVFF_ERROR_DEVICE_BUSY, "device", d->plan->pf,
                            "%s, so the dry run cannot read PF %s now: ask again when it ends ('svffctl status' "
                            "shows the operation).", strna(message), d->plan->pf);
                dry_run_free(d);
                return;
        }
        /* A PF with a device class has each new VF provisioned after
         * the count and before it is bound: the plan's steps say so. */
        if (r >= 0 && class_plan && svff_reconf_plan_set_provision(d->plan, true) >= 0) {
                struct json_object *p;

                plan_set_deadlines(m, d->plan);
                p = svff_reconf_plan_to_json(d->plan);

                if (p)
                        json_object_object_add(d->reply, "plan", p);
        }
        if (r < 0 && (class_plan || d->strict))
                json_object_object_add(d->reply, "executable", json_object_new_boolean(false));
        if (r < 0 && !class_plan)
                log_warning("The device class of the dry run could not plan: %s", strna(message));
        json_object_object_add(d->reply, "class_plan", class_plan);
        call_reply(d->call, d->reply);
        dry_run_free(d);
}

void reconf_dry_run_reply(struct manager *m, struct call *call, struct json_object *reply, struct svff_reconf_plan *plan,
                          bool strict) {
        struct dry_run *d = calloc(1, sizeof(*d));

        /* The device class's steps need the device: on a worker, and
         * the reply waits for them. */
        if (d) {
                *d = (struct dry_run) { .call = call_ref(call), .reply = reply, .plan = plan, .strict = strict };
                if (classes_plan_start(m, plan->pf, plan->to, dry_run_class_done, d) >= 0)
                        return;
                reply = TAKE_PTR(d->reply);
                dry_run_free(d);
        } else
                svff_reconf_plan_free(plan);
        call_reply(call, reply);
        json_object_put(reply);
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

/* What a Reconf or Reprogram asks for, from its call or from svffd
 * itself (a policy naming an image). */
struct reconf_request {
        const char *pf;
        bool keep_numvfs;               /* a reprogram keeping the count */
        unsigned numvfs;
        enum svff_reconf_mode mode;
        bool force, dry_run;
        bool cycle;                     /* through 0 even at the count the PF has */
        const char *image;              /* a reprogram's */
        const char *driver;             /* for the VFs; NULL: the stored one, else the global */
        const char *reason;             /* svffd's own: why, for the log */
        const char *owner;              /* svffd's own: who owns the count from now on */
};

/* Reconf's final reply for a count the PF has already: its dry run's
 * too, a plan with no step. */
static void reply_nothing_to_do(struct call *call, const char *pf, unsigned numvfs, bool dry_run) {
        struct json_object *p = json_object_new_object();
        char msg[MESSAGE_MAX];

        if (!p) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        snprintf(msg, sizeof(msg), "PF %s: already %u VF%s; nothing to do (--cycle takes them through 0 anyway)",
                 pf, numvfs, numvfs == 1 ? "" : "s");
        if (!dry_run)
                log_info("Reconf of PF %s to %u VFs: it has them already, nothing to do.", pf, numvfs);
        json_object_object_add(p, "pf", json_object_new_string(pf));
        if (dry_run) {
                json_object_object_add(p, "dry_run", json_object_new_boolean(true));
                json_object_object_add(p, "executable", json_object_new_boolean(true));
        }
        json_object_object_add(p, "numvfs", json_object_new_int64(numvfs));
        json_object_object_add(p, "message", json_object_new_string(msg));
        json_object_object_add(p, "assignments", json_object_new_array());
        json_object_object_add(p, "steps", json_object_new_array());
        call_reply(call, p);
        json_object_put(p);
}

/* A request refused: answered when there is a call, and said in err. */
static void refuse(struct call *call, struct svff_error *err, const char *error, const char *key, const char *value,
                   const char *fmt, ...) _printf_(6, 7);
static void refuse(struct call *call, struct svff_error *err, const char *error, const char *key, const char *value,
                   const char *fmt, ...) {
        char msg[MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (call)
                call_errorf(call, error, key, value, "%s", msg);
        if (err)
                (void) svff_error_set(err, -EINVAL, "%s", msg);
}

/* Whether the image passes the checks (the hook is svff.conf's, never
 * the caller's; the image is checked before anything is touched), else
 * refused. */
static bool image_allowed(struct manager *m, struct call *call, const char *pf, const char *image,
                          struct svff_error *ret_err) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

        if (!m->config.flash_hook || !m->config.flash_image_dir) {
                refuse(call, ret_err, SVFF_ERROR_NO_FLASH_HOOK, "device", pf,
                       "No flash hook is configured: set 'flash_hook' and 'flash_image_dir' in svff.conf(5).");
                return false;
        }
        if (svff_flash_image_check(m->config.flash_image_dir, image, &err) < 0) {
                refuse(call, ret_err, SVFF_ERROR_INVALID_IMAGE, "image", image, "%s", svff_error_message(&err));
                return false;
        }
        /* The hook too, before anything is destroyed (found only after
         * the PF left the bus, a refusal would leave it interrupted). */
        if (svff_flash_hook_check(m->config.flash_hook, &err) < 0) {
                refuse(call, ret_err, SVFF_ERROR_NO_FLASH_HOOK, "device", pf, "%s: fix it, or 'flash_hook' in "
                       "svff.conf(5).", svff_error_message(&err));
                return false;
        }
        return true;
}

/* The owner of pf's count as it is now, made explicit before an
 * operator's reconf: the PF record the reconf writes must not change it
 * (a record of another count than the policy's, without an owner, reads
 * as one from before owners: the operator's) unless the reconf goes
 * through, which then records the operator (reconf-ops.c,
 * record_owner()). */
static void pin_owner(struct manager *m, const struct svff_pf *found, const char *driver) {
        const struct svff_policy *pol;
        const char *owner;
        char buf[256];

        if (svff_store_get_pf_owner(m->store, found->address))
                return;
        pol = svff_config_find_policy(&m->config, found->address, found->vendor_id, found->device_id, found->netdev);
        owner = manager_pf_owner(m, found->address, pol, buf, sizeof(buf));
        if (!owner)
                return;
        if (svff_store_get_pf(m->store, found->address, NULL, NULL) <= 0)
                (void) svff_store_set_pf(m->store, found->address, found->numvfs, driver);
        (void) svff_store_set_pf_owner(m->store, found->address, owner);
}

/* An NVMe PF: class 01 (storage), subclass 08. */
static bool nvme_pf(const struct svff_pf *pf) {
        return pf && (pf->class >> 8) == 0x0108;
}

/* Plans req against the current snapshot and starts it (or, with a
 * call, answers its dry run). call NULL: svffd's own, refusals only in
 * err. guests[0..n_guests): how the live assignments' guests see it
 * (reconf-guests.h; borrowed). Returns 0 once started or answered, else
 * a -errno. */
static int request_start(struct manager *m, struct call *call, const struct reconf_request *req,
                         const struct reconf_guest *guests, size_t n_guests, struct svff_error *err) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *plan = NULL;
        _cleanup_free_ struct svff_reconf_item *items = NULL;
        _cleanup_free_ char *bad = NULL;
        const struct svff_pf *found;
        struct svff_reconf_input in = {};
        const char *pf = req->pf, *driver = req->driver, *image = req->image;
        _cleanup_(json_object_putp) struct json_object *ids = NULL, *guests_json = NULL;
        _cleanup_(svff_error_free) struct svff_error busy = SVFF_ERROR_NULL;
        bool dry_run = req->dry_run && call;   /* answered to a caller only */
        unsigned numvfs = req->numvfs;
        size_t n = 0;
        LOG_CONTEXT(.pf = pf, .operation = image ? "reprogram" : "reconf");
        int r;

        found = manager_snapshot_pf(m, pf);
        if (!found) {
                refuse(call, err, SVFF_ERROR_NO_SUCH_DEVICE, "device", pf,
                       "No SR-IOV PF %s; 'svffctl list' shows the PFs there are.", pf);
                return -ENODEV;
        }
        /* A reprogram keeps the count unless told: the new image's
         * sriov_totalvfs is checked once the PF is back. */
        if (req->keep_numvfs)
                numvfs = found->numvfs;
        if (image) {
                const struct svff_policy *pol = svff_config_find_policy(&m->config, pf, found->vendor_id,
                                                                        found->device_id, found->netdev);
                char id[16];

                /* What the image may turn the PF into: its policy's
                 * reprogram_ids, and what it is now. */
                if (!image_allowed(m, call, pf, image, err))
                        return -EINVAL;
                snprintf(id, sizeof(id), "%04x:%04x", found->vendor_id, found->device_id);
                ids = json_object_new_array();
                if (!ids || json_object_array_add(ids, json_object_new_string(id)) < 0) {
                        refuse(call, err, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                        return -ENOMEM;
                }
                for (size_t i = 0; pol && pol->reprogram_ids && i < json_object_array_length(pol->reprogram_ids);
                     i++) {
                        const char *s = json_object_get_string(json_object_array_get_idx(pol->reprogram_ids, i));

                        if (!streq(s, id))
                                json_object_array_add(ids, json_object_new_string(s));
                }
        }
        if (!image && numvfs > found->totalvfs) {
                refuse(call, err, SVFF_ERROR_TOO_MANY_VFS, "device", pf,
                       "PF %s supports at most %u VFs (sriov_totalvfs: its driver's limit, which may be "
                       "below the device's), not %u.", pf, found->totalvfs, numvfs);
                return -ERANGE;
        }
        /* Its dry run refuses what it would. A count write still in the
         * kernel (another process's, or svffd's past its deadline) would
         * hold the machine's numvfs step, or a reprogram's remove, after
         * the domains gave their VFs up: refused before anything moves. */
        if (pf_busy(m, pf, pf, PF_BUSY_OPERATION | PF_BUSY_ASSIGN | PF_BUSY_WRITE, &busy) < 0) {
                refuse(call, err, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", pf, "%s", svff_error_message(&busy));
                return -EBUSY;
        }
        /* The count the PF has, every VF of it present: an operator's
         * reconf to it would pause every guest and go through 0 for
         * nothing. Nothing is touched, the owner included, unless cycle
         * asks for the full cycle. A PF that lost a VF (no virtfnK) gets
         * it back only through the cycle, so that reconf goes ahead. */
        if (call && !image && !req->cycle && numvfs == found->numvfs && found->n_vfs == numvfs &&
            found->vf_missing == UINT_MAX) {
                reply_nothing_to_do(call, pf, numvfs, dry_run);
                return 0;
        }
        r = collect_items(m, pf, &items, &n, &bad);
        if (r < 0) {
                refuse(call, err, r == -ENOMEM ? SVFF_ERROR_INTERNAL : SVFF_ERROR_STORE, "path",
                       svff_store_path(m->store), "The records of VF %s in '%s' cannot be read.", strna(bad),
                       svff_store_path(m->store));
                return r;
        }
        if (!driver && (svff_store_get_pf(m->store, pf, NULL, &driver) <= 0 || !driver))
                driver = m->config.vf_driver;
        in = (struct svff_reconf_input) {
                .pf = pf, .numvfs = found->numvfs, .driver = driver, .items = items, .n_items = n,
                .image = image, .ids = ids,
        };
        r = svff_reconf_plan_new(&in, numvfs, req->mode, req->force, &plan);
        if (r < 0) {
                refuse(call, err, SVFF_ERROR_INTERNAL, NULL, NULL, "Planning the reconf of PF %s failed: %s.", pf,
                       strerror(-r));
                return r;
        }
        {
                /* A guest that cannot see its VF go and come back
                 * refuses the reconf, dry run or not, before anything. */
                int refused = -1;

                guests_json = reconf_guests_json(plan, guests, n_guests, nvme_pf(found),
                                                 reconf_figures_get(m->reconf_figures, pf), &refused);
                if (refused >= 0) {
                        const struct svff_reconf_item *it = &plan->items[refused];
                        const struct reconf_guest *g = reconf_guests_find(plan, (size_t) refused, guests, n_guests);

                        if (call) {
                                struct json_object *params = json_object_new_object();
                                struct svff_pci_addr ga = {};
                                char msg[MESSAGE_MAX];

                                /* As --guest-address takes it: only domain 0 has a port. */
                                (void) svff_pci_addr_parse(g->guest_address, &ga);
                                snprintf(msg, sizeof(msg), "%s of PF %s refused: VF %u (%s) of domain '%s' is at "
                                         "guest address %02x:%02x.%x on %s, which has no hotplug, so the running "
                                         "guest cannot let it go and take it back. Detach it first ('svffctl "
                                         "detach %s'), or shut the domain down, or give the domain a port with "
                                         "hotplug.", image ? "Reprogram" : "Reconf", pf, it->index, it->vf,
                                         it->a.domain, ga.bus, ga.slot, ga.func, g->port, it->vf);
                                json_object_object_add(params, "device", json_object_new_string(pf));
                                json_object_object_add(params, "domain", json_object_new_string(it->a.domain));
                                json_object_object_add(params, "port", json_object_new_string(g->port));
                                json_object_object_add(params, "message", json_object_new_string(msg));
                                call_error(call, SVFF_ERROR_NO_HOTPLUG, params);
                                json_object_put(params);
                        }
                        refuse(NULL, err, NULL, NULL, NULL, "VF %s of domain '%s' is on %s, which has no hotplug",
                               it->vf, it->a.domain, g->port);
                        return -EOPNOTSUPP;
                }
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
                        json_object_object_add(d, "detach_msec", json_object_new_int64((int64_t) (
                                m->config.reconf_detach_timeout_usec / 1000)));
                        json_object_object_add(p, "deadlines", d);
                        json_object_object_add(p, "totalvfs", json_object_new_int64(found->totalvfs));
                }
                plan_set_deadlines(m, plan);
                json_object_object_add(p, "plan", svff_reconf_plan_to_json(plan));
                json_object_object_add(p, "guests", TAKE_PTR(guests_json));
                if (image) {
                        json_object_object_add(p, "image", json_object_new_string(image));
                        json_object_object_add(p, "ids", json_object_get(ids));
                }
                reconf_dry_run_reply(m, call, p, TAKE_PTR(plan), false);
                return 0;
        }
        if (!svff_reconf_plan_ok(plan)) {
                if (call)
                        reply_plan_refused(call, plan);
                refuse(NULL, err, NULL, NULL, NULL, "%u assignment(s) of PF %s would lose their VF",
                       plan->n_refused + plan->n_blocked, pf);
                return -EBUSY;
        }
        if (call)
                log_info("%s of PF %s to %u VFs requested by uid %u%s%s.", image ? "Reprogram" : "Reconf", pf, numvfs,
                         (unsigned) call_peer(call)->uid, image ? ", image " : "", image ?: "");
        else
                log_info("%s of PF %s to %u VFs for %s%s%s.", image ? "Reprogram" : "Reconf", pf, numvfs,
                         strna(req->reason), image ? ", image " : "", image ?: "");
        if (req->owner) {
                /* Recorded with the reconf's first commit: the policy
                 * acts on the count. */
                if (svff_store_get_pf(m->store, pf, NULL, NULL) <= 0)
                        (void) svff_store_set_pf(m->store, pf, found->numvfs, driver);
                (void) svff_store_set_pf_owner(m->store, pf, req->owner);
        } else
                pin_owner(m, found, driver);
        /* The count is the operator's once it goes through, unless a
         * reprogram keeps the one the PF has. */
        r = reconf_start(m, call, TAKE_PTR(plan), NULL, image, ids, RESUME_NONE,
                         req->owner ?: (req->keep_numvfs ? NULL : SVFF_PF_OWNER_OPERATOR));
        if (r < 0 && err && !svff_error_is_set(err))
                (void) svff_error_set(err, r, "starting the %s of PF %s failed: %s", image ? "reprogram" : "reconf",
                                      pf, r == -ENOTCONN ? "libvirt is not connected" : strerror(-r));
        return r;
}

/* A Reconf or Reprogram call's request, decoded once from its
 * parameters and owned: what the waits for a snapshot and for the
 * guests' read carry, instead of the call's JSON. */
struct reconf_call {
        struct call *call;              /* during the guests' read */
        struct reconf_request req;      /* .pf and .image point below */
        char pf[SVFF_PCI_ADDR_STRLEN];
        char *image;
};

static void reconf_call_free(void *userdata) {
        struct reconf_call *rc = userdata;

        if (!rc)
                return;
        call_unref(rc->call);
        free(rc->image);
        free(rc);
}

static struct reconf_call *reconf_call_new(const struct reconf_request *req) {
        struct reconf_call *rc = calloc(1, sizeof(*rc));

        if (!rc)
                return NULL;
        rc->req = *req;
        snprintf(rc->pf, sizeof(rc->pf), "%s", req->pf);
        rc->req.pf = rc->pf;
        if (req->image && !(rc->image = strdup(req->image))) {
                free(rc);
                return NULL;
        }
        rc->req.image = rc->image;
        return rc;
}

static void guests_read(struct manager *m, struct reconf_guest *guests, size_t n, void *userdata) {
        struct reconf_call *rc = userdata;

        if (m->shutting_down)
                call_errorf(rc->call, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL, "svffd is shutting down.");
        else
                (void) request_start(m, rc->call, &rc->req, guests, n, NULL);
        free(guests);
        reconf_call_free(rc);
}

static void reconf_with_snapshot(struct manager *m, struct call *call, void *userdata) {
        _cleanup_free_ struct svff_reconf_item *items = NULL;
        _cleanup_free_ char *bad = NULL;
        struct reconf_call *rc = userdata;
        bool nvme;
        size_t n = 0;
        int r;

        nvme = nvme_pf(manager_snapshot_pf(m, rc->req.pf));
        /* How each live assignment's guest will see it, from its
         * domain's live XML (on the libvirt pool) first; for the dry run
         * of an NVMe PF, what each guest's agent says of its heads too
         * (a real reconf does not wait for agents). */
        if (collect_items(m, rc->req.pf, &items, &n, &bad) >= 0) {
                rc->call = call_ref(call);
                r = reconf_guests_start(m, items, n, rc->req.dry_run && nvme, guests_read, rc);
                if (r > 0)
                        return;
                rc->call = call_unref(rc->call);
                if (r < 0) {
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                        reconf_call_free(rc);
                        return;
                }
        }
        (void) request_start(m, call, &rc->req, NULL, 0, NULL);
        reconf_call_free(rc);
}

/* Waits for a snapshot fresh enough for the call, then plans req. */
static void request_with_snapshot(struct manager *m, struct call *call, const struct reconf_request *req) {
        struct reconf_call *rc = reconf_call_new(req);

        if (!rc) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        /* A change plans from the PF read after it was asked for: a
         * reading up to list_max_age_msec old may show a count another
         * process is writing now, which svffd learns of only by reading
         * it (under the pass's deadline), and which the change would
         * wait behind. The read is of this PF only, one the snapshot
         * has (any other address is answered from the snapshot). A dry
         * run plans from the snapshot as reads do. */
        if (!req->dry_run && manager_snapshot_pf(m, req->pf))
                manager_sysfs_changed(m, req->pf);
        manager_with_snapshot(m, call, reconf_with_snapshot, rc, reconf_call_free);
}

int reconf_reprogram_own(struct manager *m, const char *pf, const char *image, int numvfs, const char *driver,
                         const char *reason, const char *owner, struct svff_error *err) {
        struct reconf_request req = {
                .pf = pf, .keep_numvfs = numvfs < 0, .numvfs = numvfs < 0 ? 0 : (unsigned) numvfs,
                .mode = SVFF_RECONF_PAUSE, .image = image, .driver = driver, .reason = reason, .owner = owner,
        };

        return request_start(m, NULL, &req, NULL, 0, err);
}

/* Whether e is a reprogram that nothing resumes by itself. */
static bool journal_interrupted(struct json_object *e) {
        const char *ph = NULL;

        return svff_json_get_string(e, "phase", &ph) >= 0 && streq(ph, "interrupted") &&
               json_object_object_get_ex(e, "reprogram", NULL);
}

/* Resumes the journaled reconf of pf (entry e); call may be NULL.
 * owner: who owns the count once it goes through (NULL: the journal's). */
static int resume_journal(struct manager *m, struct call *call, const char *pf, struct json_object *e,
                          const char *image, int resume, const char *owner) {
        struct reconf_journal j = {};
        int r;

        LOG_CONTEXT(.pf = pf, .operation = "recover");
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
        r = reconf_start(m, call, TAKE_PTR(j.plan), &j, image, NULL, resume, owner);
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
        /* Collected first: starting one edits the journal. Those that
         * need libvirt wait for its connection, which calls this again
         * (journal_recovery_waits() says so meanwhile). */
        for (size_t i = 0; i < n; i++) {
                struct json_object *entry = journal_get(m, todo[i]);

                if (entry)
                        (void) resume_journal(m, NULL, todo[i], entry, NULL, RESUME_NONE, NULL);
        }
}

/* Reconf's and Reprogram's parameters (params.h). */
struct reconf_params {
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned numvfs;                /* UINT_MAX: not given (Reprogram) */
        bool dry_run, force, cycle;
        const char *mode;               /* NULL: pause */
        const char *image;              /* Reprogram's image; Reconf's reprogram */
};

#define RP(field) offsetof(struct reconf_params, field)
#define RECONF_PARAM_FLAGS                                                                      \
        { "dry_run", PARAM_BOOL, false, RP(dry_run), 0, "true or false" },                     \
        { "force", PARAM_BOOL, false, RP(force), 0, "true or false" }

static const struct param reconf_param_table[] = {
        { "pf", PARAM_ADDRESS, true, RP(pf), 0, NULL },
        { "numvfs", PARAM_UNSIGNED, true, RP(numvfs), 65535, "an integer from 0 to 65535" },
        RECONF_PARAM_FLAGS,
        { "cycle", PARAM_BOOL, false, RP(cycle), 0, "true or false" },
        { "mode", PARAM_STRING_OR_NULL, false, RP(mode), 0, "'pause' or 'detach'" },
        /* reconf --reprogram IMAGE: a Reprogram to numvfs */
        { "reprogram", PARAM_STRING_OR_NULL, false, RP(image), 0, "the path of an image" },
        PARAM_END,
};

static const struct param reprogram_param_table[] = {
        { "pf", PARAM_ADDRESS, true, RP(pf), 0, NULL },
        { "image", PARAM_STRING_OR_NULL, false, RP(image), 0,
          "the path of the image the flash hook writes" },
        { "numvfs", PARAM_UNSIGNED, false, RP(numvfs), 65535, "an integer from 0 to 65535" },
        RECONF_PARAM_FLAGS,
        { "mode", PARAM_STRING_OR_NULL, false, RP(mode), 0, "'pause' or 'detach'" },
        PARAM_END,
};

/* p as the dispatcher decoded it, the mode checked, into *ret (pointing
 * into p); false once a bad one is answered. */
static bool request_decode(struct call *call, const struct reconf_params *p, struct reconf_request *ret) {
        int mode;

        mode = p->mode ? svff_reconf_mode_from_string(p->mode) : SVFF_RECONF_PAUSE;
        if (mode < 0) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "mode",
                            "Parameter 'mode' must be 'pause' or 'detach'.");
                return false;
        }
        *ret = (struct reconf_request) {
                .pf = p->pf,
                .keep_numvfs = p->numvfs == UINT_MAX,
                .numvfs = p->numvfs == UINT_MAX ? 0 : p->numvfs,
                .mode = (enum svff_reconf_mode) mode,
                .force = p->force,
                .dry_run = p->dry_run,
                .cycle = p->cycle,
                .image = p->image,
        };
        return true;
}

static void reprogram_request(struct manager *m, struct call *call, const struct reconf_request *req);

static void method_reconf(struct manager *m, struct call *call, void *params) {
        struct reconf_request req;
        const char *jop = NULL;
        struct json_object *e;

        if (!request_decode(call, params, &req))
                return;
        if (req.image) {
                /* A reprogram always goes through 0. */
                req.cycle = false;
                if (require_privileged(m, call))
                        reprogram_request(m, call, &req);
                return;
        }
        if (!req.dry_run && !require_privileged(m, call))
                return;

        /* An interrupted reconf of this PF (a numvfs write blocked past
         * its deadline, or svffd stopped): the same request completes it. */
        e = journal_get(m, req.pf);
        if (!req.dry_run && e && svff_json_get_string(e, "op", &jop) >= 0 && streq(jop, "reconf") &&
            !manager_find_operation(m, req.pf)) {
                unsigned jn = 0;

                (void) svff_json_get_unsigned(e, "numvfs", &jn);
                if (jn != req.numvfs) {
                        call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", req.pf,
                                    "An interrupted reconf of PF %s to %u VFs is journaled; run 'svffctl reconf %s %u' "
                                    "to complete it first.", req.pf, jn, req.pf, jn);
                        return;
                }
                /* Its count step would wait behind a write still in the
                 * kernel, as a new reconf's would. */
                if (pf_busy_refuse(m, req.pf, req.pf, PF_BUSY_WRITE, call))
                        return;
                {
                        LOG_CONTEXT(.pf = req.pf, .operation = "reconf");

                        log_info("Completing the interrupted reconf of PF %s as requested by uid %u.", req.pf,
                                 (unsigned) call_peer(call)->uid);
                }
                (void) resume_journal(m, call, req.pf, e, NULL, journal_interrupted(e) ? RESUME_RESCAN : RESUME_NONE,
                                      SVFF_PF_OWNER_OPERATOR);
                return;
        }
        request_with_snapshot(m, call, &req);
}

static void method_reprogram(struct manager *m, struct call *call, void *params) {
        struct reconf_request req;

        /* Privileged (the method table; Reconf's --reprogram checks
         * before it comes here), its dry run too: it names an image path,
         * which only an administrator may have svffd look at. */
        if (!request_decode(call, params, &req))
                return;
        if (!req.image) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "image",
                            "Parameter 'image' is required: the path of the image the flash hook writes.");
                return;
        }
        reprogram_request(m, call, &req);
}

static void reprogram_request(struct manager *m, struct call *call, const struct reconf_request *req) {
        const char *jop = NULL;
        struct json_object *e;

        if (!image_allowed(m, call, req->pf, req->image, NULL))
                return;

        e = journal_get(m, req->pf);
        if (e && svff_json_get_string(e, "op", &jop) >= 0 && streq(jop, "reconf") &&
            !manager_find_operation(m, req->pf)) {
                unsigned jn = 0;

                (void) svff_json_get_unsigned(e, "numvfs", &jn);
                if (req->dry_run || !journal_interrupted(e) || (!req->keep_numvfs && req->numvfs != jn)) {
                        call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", req->pf,
                                    "An interrupted %s of PF %s to %u VFs is journaled; %s.",
                                    journal_interrupted(e) ? "reprogram" : "reconf", req->pf, jn,
                                    journal_interrupted(e) ? "reprogram it to the same count, or reconf it"
                                                           : "run 'svffctl reconf' to complete it first");
                        return;
                }
                /* Its removal of the PF would wait behind a count write
                 * still in the kernel, as the completion of a reconf's
                 * count step would. */
                if (pf_busy_refuse(m, req->pf, req->pf, PF_BUSY_WRITE, call))
                        return;
                {
                        LOG_CONTEXT(.pf = req->pf, .operation = "reprogram");

                        log_info("Reprogramming PF %s again after an interrupted reprogram, image %s, as "
                                 "requested by uid %u.", req->pf, req->image, (unsigned) call_peer(call)->uid);
                }
                /* The count is the operator's only when they gave one. */
                (void) resume_journal(m, call, req->pf, e, req->image, RESUME_REMOVE,
                                      req->keep_numvfs ? NULL : SVFF_PF_OWNER_OPERATOR);
                return;
        }
        request_with_snapshot(m, call, req);
}

static const struct reconf_params reconf_initial = { .numvfs = UINT_MAX };

/* Not privileged as a whole: its dry run is a read (method_reconf()). */
const struct method reconf_method = {
        "Reconf", method_reconf, reconf_param_table, sizeof(struct reconf_params), &reconf_initial, METHOD_MUTATING,
};

const struct method reprogram_method = {
        "Reprogram", method_reprogram, reprogram_param_table, sizeof(struct reconf_params), &reconf_initial,
        METHOD_MUTATING | METHOD_PRIVILEGED,
};
