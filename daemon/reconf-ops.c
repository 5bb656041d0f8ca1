/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind.h"
#include "class.h"
#include "classes.h"
#include "fault.h"
#include "flash-hook.h"
#include "flash-unit.h"
#include "hypervisor.h"
#include "json-util.h"
#include "log.h"
#include "pciaddr.h"
#include "plan-deadlines.h"
#include "qmp.h"
#include "reconf-ops.h"
#include "sriov.h"
#include "sysfs.h"


/* svffd's stop and the loss of the libvirt connection, as the
 * machine's inputs: given before every completion and every start, so
 * the machine decides at its own safe points. */
static bool exiting(struct reconf_run *run) {
        bool stop = false, now = false;

        run->env.stopping(run->userdata, &stop, &now);
        return now;
}

static void forward_stop(struct reconf_run *run) {
        bool stop = false, now = false;

        run->env.stopping(run->userdata, &stop, &now);
        if (stop)
                reconf_machine_stop(run->rm, now);
        if (run->conn && virConnectIsAlive(run->conn) == 0)
                reconf_machine_lost_libvirt(run->rm);
}

struct json_object *reconf_run_event(struct reconf_run *run, const char *name) {
        const char *pf = reconf_machine_plan(run->rm)->pf;
        struct json_object *e = json_object_new_object();

        if (!e)
                return NULL;
        json_object_object_add(e, "event", json_object_new_string(name));
        json_object_object_add(e, "device", json_object_new_string(pf));
        json_object_object_add(e, "pf", json_object_new_string(pf));
        return e;
}

static void op_step(void *userdata, struct json_object *step, int item, int r, const char *message) {
        struct reconf_run *run = userdata;

        run->env.step(run->userdata, step, item, r, message);
}

/* ---- domain jobs (virt pool) ---- */

enum job_kind { JOB_QUIESCE, JOB_RESTORE };

struct dom_job {
        struct reconf_run *run;
        enum job_kind kind;
        virConnectPtr conn;
        /* Copies: the job never reads the machine from its thread. */
        struct svff_reconf_item *items;
        struct reconf_item *state;
        size_t *idx;
        size_t n;
        enum svff_reconf_mode mode;
};

struct item_result {
        struct reconf_run *run;
        enum job_kind kind;
        size_t i;
        int r;
        char *message;
        enum svff_pause_mode mode;
        char guest_address[SVFF_PCI_ADDR_STRLEN];
        usec_t began_usec, ended_usec;  /* CLOCK_MONOTONIC, around the step */
};

static void dom_job_free(struct dom_job *j) {
        if (!j)
                return;
        if (j->conn)
                virConnectClose(j->conn);
        free(j->items);
        free(j->state);
        free(j->idx);
        free(j);
}

static unsigned hv_flags(bool live, bool config) {
        return (live ? SVFF_HV_LIVE : 0) | (config ? SVFF_HV_CONFIG : 0);
}

/* The definitions a reconf takes a device out of (svff_reconf_item_defs()). */
static unsigned reconf_flags(const struct svff_reconf_item *it, bool active) {
        bool live, config;

        svff_reconf_item_defs(it, active, &live, &config);
        return hv_flags(live, config);
}

/* ---- the domain steps, for every executor (virt pool) ---- */

int reconf_ops_pause(virDomainPtr dom, const char *vf, const char *alias, bool native, const char *pause_cmd,
                     unsigned flags, usec_t deadline, struct svff_hv_removals *removals,
                     enum svff_pause_mode *ret_mode, struct svff_error *err) {
        if (native) {
                _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
                struct svff_error qerr = SVFF_ERROR_NULL;
                int r;

                r = svff_qmp_new_libvirt(dom, &q);
                if (r >= 0)
                        r = svff_qmp_device_pause(q, pause_cmd, alias, PLAN_QMP_TIMEOUT_USEC, &qerr);
                if (r < 0 && r != -EOPNOTSUPP) {
                        *err = qerr;
                        return r;
                }
                svff_error_free(&qerr);
                if (r >= 0) {
                        *ret_mode = SVFF_PAUSE_NATIVE;
                        return 0;
                }
        }
        /* Detach (with the reservation kept in the record). */
        *ret_mode = SVFF_PAUSE_DETACH;
        if (flags == 0)
                return 0;
        return svff_hv_detach(dom, vf, alias, flags, deadline, removals, err);
}

int reconf_ops_unpause_native(virDomainPtr dom, const char *unpause_cmd, const char *alias, struct svff_error *err) {
        _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
        int r;

        r = svff_qmp_new_libvirt(dom, &q);
        if (r >= 0)
                r = svff_qmp_device_pause(q, unpause_cmd, alias, PLAN_QMP_TIMEOUT_USEC, err);
        return r;
}

/* ---- the reconf's domain jobs (virt pool) ---- */

static int quiesce_one(struct dom_job *j, virDomainPtr dom, const struct svff_domain_info *info, size_t k,
                       struct item_result *res, struct svff_error *err) {
        struct reconf_run *run = j->run;
        const struct svff_reconf_item *it = &j->items[k];
        bool live = it->a.live && info->active;

        return reconf_ops_pause(dom, it->vf, it->a.alias,
                                it->fate == SVFF_RECONF_SURVIVES && j->mode == SVFF_RECONF_PAUSE && live,
                                run->env.pause_cmd, reconf_flags(it, info->active),
                                svff_now_usec() + run->env.detach_timeout, run->env.removals, &res->mode, err);
}

/* Whether item k's VF came back at another host address than the one
 * its domain was given (same index, a new offset or stride). */
static bool item_moved(const struct dom_job *j, size_t k) {
        return *j->state[k].vf && !streq(j->state[k].vf, j->items[k].vf);
}

/* Item k's VF moved: the device its domain holds at the old host
 * address, natively paused in the live definition or kept in the
 * persistent one, goes from both before the VF comes back at the new
 * address, so that no definition names a host address another VF may
 * now have. Only the device with the item's alias: another item's VF
 * may have moved to this address and be there already. Nothing at the
 * old address (a restart after this ran) is done. */
static int move_out(struct dom_job *j, virDomainPtr dom, const struct svff_domain_info *info, size_t k,
                    struct svff_error *err) {
        struct reconf_run *run = j->run;
        const struct svff_reconf_item *it = &j->items[k];
        struct svff_reconf_restore rs;
        unsigned flags;

        svff_reconf_restore_of(it, info->active, j->state[k].mode, true, &rs);
        flags = hv_flags(rs.move_out_live, rs.move_out_config);
        for (unsigned f = SVFF_HV_LIVE; f <= SVFF_HV_CONFIG; f <<= 1) {
                struct svff_hostdev hd;
                int r;

                if (!(flags & f))
                        continue;
                r = svff_hv_get_hostdev(dom, it->vf, f, &hd, err);
                if (r < 0)
                        return r;
                if (r == 0 || !streq(hd.alias, it->a.alias))
                        continue;
                r = svff_hv_detach(dom, it->vf, it->a.alias, f,
                                   f == SVFF_HV_LIVE ? svff_now_usec() + run->env.detach_timeout : 0,
                                   run->env.removals, err);
                if (r < 0)
                        return r;
                log_info("VF %s of domain '%s' is at %s now: its device at the old address removed from the %s "
                         "definition.", it->vf, info->name, j->state[k].vf, f == SVFF_HV_LIVE ? "live" : "persistent");
        }
        return 0;
}

static int restore_one(struct dom_job *j, virDomainPtr dom, const struct svff_domain_info *info, size_t k,
                       struct item_result *res, struct svff_error *err) {
        struct reconf_run *run = j->run;
        const struct svff_reconf_item *it = &j->items[k];
        const struct reconf_item *s = &j->state[k];
        bool moved = item_moved(j, k);
        struct svff_reconf_restore rs;
        _cleanup_free_ char *drv = NULL;
        struct svff_hostdev hd;
        unsigned flags;
        int r;

        /* A moved VF's device at the old address is gone (move_out()). */
        svff_reconf_restore_of(it, info->active, s->mode, moved, &rs);
        flags = hv_flags(rs.attach_live, rs.attach_config && !rs.attach_config_first);
        res->mode = s->mode;
        if (rs.unpause)
                return reconf_ops_unpause_native(dom, run->env.unpause_cmd, it->a.alias, err);
        if (flags == 0)
                return svff_error_set(err, -EINVAL,
                                      "domain '%s' is no longer running and VF %s was assigned live only: "
                                      "nothing to re-attach to", info->name, s->vf);
        r = svff_dev_get_driver(run->env.ctx, s->vf, &drv);
        if (r < 0)
                return svff_error_set(err, -ENODEV, "VF %s does not exist", s->vf);
        if (!drv || !streq(drv, "vfio-pci"))
                return svff_error_set(err, -EBUSY, "VF %s is on %s, not vfio-pci, so it cannot be re-attached",
                                      s->vf, drv ?: "no driver");

        if (fault_inject("fail-reattach", __atomic_add_fetch(&run->n_attaching, 1, __ATOMIC_SEQ_CST)))
                return svff_error_set(err, -EIO, "Attaching VF %s to domain '%s': injected failure", s->vf,
                                      info->name);
        if (rs.attach_config_first) {
                /* On its own: the persistent definition names the new
                 * address whether or not the live attach goes through,
                 * as the record does. Already there: a restart. */
                r = svff_hv_attach(dom, s->vf, it->a.alias, *it->a.guest_address ? it->a.guest_address : NULL,
                                   &it->a.failover, SVFF_HV_CONFIG, &hd, err);
                if (r < 0 && svff_hv_get_hostdev(dom, s->vf, SVFF_HV_CONFIG, &hd, NULL) <= 0)
                        return r;
                svff_error_free(err);
        }
        r = svff_hv_attach(dom, s->vf, it->a.alias, *it->a.guest_address ? it->a.guest_address : NULL,
                           &it->a.failover, flags, &hd, err);
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
                if (!moved && s->mode == SVFF_PAUSE_NONE && j->mode == SVFF_RECONF_PAUSE && (flags & SVFF_HV_LIVE)) {
                        /* A recovery that cannot tell whether the interrupted
                         * run paused it natively before recording so: found
                         * in the domain, it is unpaused (an error from a
                         * device that was not paused is no failure). */
                        _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
                        _cleanup_(svff_error_free) struct svff_error qerr = SVFF_ERROR_NULL;

                        if (svff_qmp_new_libvirt(dom, &q) >= 0)
                                (void) svff_qmp_device_pause(q, run->env.unpause_cmd, it->a.alias, PLAN_QMP_TIMEOUT_USEC, &qerr);
                }
        }
        snprintf(res->guest_address, sizeof(res->guest_address), "%s", hd.guest_address);
        if (*it->a.guest_address && !streq(hd.guest_address, it->a.guest_address))
                log_warning("VF %s came back at %s in domain '%s', not at the recorded %s.", s->vf,
                            hd.guest_address, info->name, it->a.guest_address);
        return 0;
}

static void item_done(void *userdata) {
        struct item_result *res = userdata;
        struct reconf_run *run = res->run;

        forward_stop(run);
        /* The device is off from the unplug's request to the re-attach's
         * return, as far as the host can tell. */
        if (res->kind == JOB_QUIESCE && res->r >= 0) {
                run->items[res->i].off_since_usec = res->began_usec;
                run->items[res->i].quiesce_began_usec = res->began_usec;
                run->items[res->i].quiesce_ended_usec = res->ended_usec;
        } else if (res->kind == JOB_RESTORE && res->r >= 0 && res->ended_usec > 0 &&
                   run->items[res->i].off_since_usec > 0) {
                run->items[res->i].off_usec = res->ended_usec - run->items[res->i].off_since_usec;
                run->items[res->i].restore_began_usec = res->began_usec;
                run->items[res->i].restore_ended_usec = res->ended_usec;
        }
        if (res->kind == JOB_QUIESCE)
                reconf_machine_quiesce_done(run->rm, res->i, res->r, res->mode, res->message);
        else
                reconf_machine_restore_done(run->rm, res->i, res->r, res->guest_address, res->message);
        free(res->message);
        free(res);
}

static void dom_job_run(void *userdata) {
        struct dom_job *j = userdata;
        struct reconf_run *run = j->run;
        _cleanup_(svff_error_free) struct svff_error lerr = SVFF_ERROR_NULL;
        struct svff_domain_info info = {};
        virDomainPtr dom = NULL;
        _cleanup_free_ int *moved_r = NULL;
        struct svff_error *moved_err = NULL;
        int lr;

        lr = svff_hv_lookup_running(j->conn, j->items[0].a.uuid, &info, &dom, &lerr);
        if (lr >= 0 && j->kind == JOB_RESTORE) {
                /* Every moved VF's old device out of the domain before
                 * any comes back: one's new address may be another's old
                 * one. */
                moved_r = calloc(j->n, sizeof(int));
                moved_err = calloc(j->n, sizeof(struct svff_error));
                for (size_t k = 0; moved_r && moved_err && k < j->n; k++)
                        if (item_moved(j, k))
                                moved_r[k] = move_out(j, dom, &info, k, &moved_err[k]);
        }
        for (size_t k = 0; k < j->n; k++) {
                struct item_result *res = calloc(1, sizeof(*res));
                struct svff_error err = SVFF_ERROR_NULL;

                if (!res)
                        continue;  /* never completes: the reconf stays in Status as stuck */
                res->run = run;
                res->kind = j->kind;
                res->i = j->idx[k];
                if (lr == -ENOENT && j->kind == JOB_QUIESCE && j->items[k].fate == SVFF_RECONF_RELEASED)
                        res->r = 0;  /* released anyway: the domain is gone */
                else if (lr < 0) {
                        res->r = lr;
                        res->message = strdup(svff_error_message(&lerr));
                } else if (j->kind == JOB_RESTORE && item_moved(j, k) && (!moved_r || !moved_err)) {
                        res->r = -ENOMEM;
                        res->message = strdup(strerror(ENOMEM));
                } else {
                        if (j->kind == JOB_RESTORE && moved_r && moved_r[k] < 0) {
                                res->r = moved_r[k];
                                err = moved_err[k];
                                moved_err[k] = SVFF_ERROR_NULL;
                        } else {
                                /* Timed only where a guest sees the device go. */
                                bool seen = j->items[k].a.live && info.active;

                                res->began_usec = seen ? svff_now_usec() : 0;
                                res->r = j->kind == JOB_QUIESCE ? quiesce_one(j, dom, &info, k, res, &err)
                                                                : restore_one(j, dom, &info, k, res, &err);
                                res->ended_usec = seen ? svff_now_usec() : 0;
                        }
                        if (res->r < 0)
                                res->message = strdup(svff_error_is_set(&err) ? svff_error_message(&err)
                                                                              : strerror(-res->r));
                }
                /* Cut short by the connection going away: not a failure
                 * of the step, which the next connection takes up. */
                if (res->r < 0 && virConnectIsAlive(j->conn) == 0)
                        res->r = -ENOTCONN;
                svff_error_free(&err);
                if (worker_pool_post(run->env.virt_pool, item_done, res) < 0) {
                        free(res->message);
                        free(res);
                }
        }
        for (size_t k = 0; moved_err && k < j->n; k++)
                svff_error_free(&moved_err[k]);
        free(moved_err);
        if (dom)
                virDomainFree(dom);
        dom_job_free(j);
}

static int submit_dom_job(struct reconf_run *run, enum job_kind kind, const size_t *items, size_t n) {
        const struct svff_reconf_plan *plan = reconf_machine_plan(run->rm);
        struct dom_job *j;
        int r;

        if (exiting(run))
                return -ESHUTDOWN;
        if (fault_inject(kind == JOB_QUIESCE ? "fail-submit-quiesce" : "fail-submit-restore",
                         ++run->n_jobs[kind]))
                return -ENOMEM;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->run = run;
        j->kind = kind;
        j->n = n;
        j->mode = plan->mode;
        j->items = calloc(n, sizeof(*j->items));
        j->state = calloc(n, sizeof(*j->state));
        j->idx = calloc(n, sizeof(*j->idx));
        if (!j->items || !j->state || !j->idx) {
                dom_job_free(j);
                return -ENOMEM;
        }
        for (size_t k = 0; k < n; k++) {
                j->idx[k] = items[k];
                j->items[k] = plan->items[items[k]];
                j->state[k] = *reconf_machine_item(run->rm, items[k]);
                j->state[k].message = NULL;
                j->state[k].class_state = NULL;
        }
        if (virConnectRef(run->conn) < 0) {
                dom_job_free(j);
                return -ENOTCONN;
        }
        j->conn = run->conn;
        r = worker_pool_submit(run->env.virt_pool, dom_job_run, j);
        if (r < 0)
                dom_job_free(j);
        return r;
}

static int op_quiesce(void *userdata, const size_t *items, size_t n) {
        return submit_dom_job(userdata, JOB_QUIESCE, items, n);
}

static int op_restore(void *userdata, const size_t *items, size_t n) {
        return submit_dom_job(userdata, JOB_RESTORE, items, n);
}

/* ---- the steps, for every executor (ops pool) ---- */

int reconf_ops_numvfs(struct svff_ctx *ctx, const char *pf, unsigned n, usec_t base, usec_t per_vf,
                      struct svff_pf **ret_after, struct svff_error *err) {
        _cleanup_(svff_error_free) struct svff_error lerr = SVFF_ERROR_NULL;
        int r;

        *ret_after = NULL;
        r = svff_pf_set_numvfs_scaled(ctx, pf, n, base, per_vf, err);
        if (r != -ETIMEDOUT && svff_pf_load(ctx, pf, ret_after, &lerr) < 0)
                *ret_after = NULL;
        return r;
}

size_t reconf_ops_bind(struct svff_ctx *ctx, const char *pf, const char *driver, const char *const *vfs, size_t n,
                       usec_t base, usec_t per_vf, bool (*stop)(void *userdata),
                       void (*each)(void *userdata, size_t k, int r, const char *message), void *userdata) {
        usec_t deadline = svff_now_usec() + base + per_vf * n;
        size_t n_failed = 0;

        for (size_t k = 0; k < n; k++) {
                _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
                int r;

                if (stop && stop(userdata))
                        break;
                if (svff_now_usec() >= deadline)
                        r = svff_bind_budget_error(&err, pf, driver, n, k - n_failed, base, per_vf);
                else
                        r = svff_dev_bind(ctx, vfs[k], driver, NULL, &err);
                if (r < 0)
                        n_failed++;
                each(userdata, k, r, r < 0 ? svff_error_message(&err) : NULL);
        }
        return n_failed;
}

/* ---- numvfs, provision and bind (ops pool) ---- */

struct pf_job {
        struct reconf_run *run;
        char pf[SVFF_PCI_ADDR_STRLEN];
        char driver[SVFF_RECONF_DRIVER_MAX];
        unsigned target;
        bool inject_refusal;
        unsigned *idx;
        char **vfs;                     /* the addresses of idx */
        struct json_object **cls;       /* provision: the class records, refs */
        bool *tenant;                   /* provision: back to the domain that had it */
        struct json_object *policy;     /* provision: the policy's class members */
        size_t *items;                  /* release_class: the plan items of idx */
        size_t n;
        /* results */
        int r;
        struct svff_error err;
        struct svff_pf *after;
        int *rs;
        char **messages;
        struct json_object **states;
};

static void pf_job_free(struct pf_job *j) {
        if (!j)
                return;
        for (size_t k = 0; k < j->n; k++) {
                free(j->vfs ? j->vfs[k] : NULL);
                free(j->messages ? j->messages[k] : NULL);
                json_object_put(j->cls ? j->cls[k] : NULL);
                json_object_put(j->states ? j->states[k] : NULL);
        }
        free(j->idx);
        free(j->items);
        free(j->vfs);
        free(j->cls);
        free(j->tenant);
        free(j->rs);
        free(j->messages);
        free(j->states);
        json_object_put(j->policy);
        svff_error_free(&j->err);
        svff_pf_free(j->after);
        free(j);
}

static struct pf_job *pf_job_new(struct reconf_run *run, const unsigned *indexes, size_t n) {
        const struct svff_reconf_plan *plan = reconf_machine_plan(run->rm);
        unsigned n_vfs = 0;
        const char *const *vfs = reconf_machine_vfs(run->rm, &n_vfs, NULL);
        struct pf_job *j = calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        j->run = run;
        snprintf(j->pf, sizeof(j->pf), "%s", plan->pf);
        snprintf(j->driver, sizeof(j->driver), "%s", plan->driver);
        j->n = n;
        if (n > 0) {
                j->idx = calloc(n, sizeof(*j->idx));
                j->vfs = calloc(n, sizeof(*j->vfs));
                j->cls = calloc(n, sizeof(*j->cls));
                j->tenant = calloc(n, sizeof(*j->tenant));
                j->rs = calloc(n, sizeof(*j->rs));
                j->messages = calloc(n, sizeof(*j->messages));
                j->states = calloc(n, sizeof(*j->states));
                if (!j->idx || !j->vfs || !j->cls || !j->tenant || !j->rs || !j->messages || !j->states) {
                        pf_job_free(j);
                        return NULL;
                }
        }
        for (size_t k = 0; k < n; k++) {
                j->idx[k] = indexes[k];
                /* "" for a VF not read back yet: release_class runs
                 * before the numvfs write */
                j->vfs[k] = strdup(vfs && indexes[k] < n_vfs ? vfs[indexes[k]] : "");
                if (!j->vfs[k]) {
                        pf_job_free(j);
                        return NULL;
                }
        }
        return j;
}

static void numvfs_done(void *userdata) {
        struct pf_job *j = userdata;
        struct reconf_run *run = j->run;
        _cleanup_free_ const char **vfs = NULL;
        int n = -1;

        run->env.sysfs_changed(run->userdata, j->pf);
        if (j->r != -ETIMEDOUT) {
                /* The kernel's count, and VF k at vfs[k] as virtfn<k>
                 * names it: "" for an index with no VF, which the
                 * machine refuses rather than close up. */
                n = j->after ? (int) j->after->numvfs : 0;
                vfs = calloc((size_t) n + 1, sizeof(char *));
                for (int k = 0; vfs && k < n; k++)
                        vfs[k] = "";
                if (!vfs)
                        n = 0;
                for (size_t v = 0; vfs && j->after && v < j->after->n_vfs; v++)
                        if (j->after->vfs[v].index < (unsigned) n)
                                vfs[j->after->vfs[v].index] = j->after->vfs[v].address;
        }
        run->numvfs_watch = numvfs_watch_free(run->numvfs_watch);
        svff_pf_free(run->after);
        run->after = TAKE_PTR(j->after);
        forward_stop(run);
        reconf_machine_numvfs_done(run->rm, j->r, vfs, n, svff_error_is_set(&j->err) ? svff_error_message(&j->err)
                                                                                      : NULL);
        pf_job_free(j);
}

static void numvfs_run(void *userdata) {
        struct pf_job *j = userdata;
        struct reconf_run *run = j->run;
        _cleanup_(svff_error_free) struct svff_error lerr = SVFF_ERROR_NULL;

        /* fail-numvfs-N: the kernel refusing the new count after it took
         * the 0, for the real-kernel tier, where no driver can be made to. */
        if (j->inject_refusal && fault_inject("fail-numvfs-N", 0)) {
                j->r = svff_error_set(&j->err, -ENOMEM, "Failed to set sriov_numvfs of PF %s to %u: %s (injected)",
                                      j->pf, j->target, strerror(ENOMEM));
                if (svff_pf_load(run->env.ctx, j->pf, &j->after, &lerr) < 0)
                        j->after = NULL;
        } else {
                /* Through 0 only when the count differs (a recovery finds
                 * it wherever the crash left it). What exists now is read
                 * also after a failure: the rest depends on it. */
                j->r = reconf_ops_numvfs(run->env.ctx, j->pf, j->target, run->env.numvfs_timeout,
                                         run->env.numvfs_per_vf, &j->after, &j->err);
                if (j->r >= 0)
                        fault_point(j->target == 0 ? "after-numvfs-0" : "after-numvfs-N", 0);
        }
        (void) worker_pool_post(run->env.ops_pool, numvfs_done, j);
}

static void numvfs_seen(void *userdata, unsigned n) {
        struct reconf_run *run = userdata;

        run->env.numvfs_progress(run->userdata, run->numvfs_target, n, run->numvfs_deadline);
}

static int op_set_numvfs(void *userdata, unsigned n) {
        struct reconf_run *run = userdata;
        const struct svff_reconf_plan *plan = reconf_machine_plan(run->rm);
        struct pf_job *j;
        int r;

        if (exiting(run))
                return -ESHUTDOWN;
        j = pf_job_new(run, NULL, 0);
        if (!j)
                return -ENOMEM;
        j->target = n;
        /* Only the reconf's own write of its new count, after the 0. */
        j->inject_refusal = n > 0 && n == plan->to && !reconf_machine_rollback(run->rm) &&
                            !reconf_machine_recovery(run->rm);
        run->env.phase(run->userdata, reconf_machine_phase(run->rm));
        r = worker_pool_submit(run->env.ops_pool, numvfs_run, j);
        if (r < 0) {
                pf_job_free(j);
                return r;
        }
        /* The write's deadline as numvfs_run() scales it: by the VFs it
         * makes, or those it removes. */
        run->numvfs_target = n;
        run->numvfs_deadline = run->env.numvfs_timeout +
                               run->env.numvfs_per_vf * (n > 0 ? n : run->after ? run->after->numvfs : plan->from);
        run->numvfs_watch = numvfs_watch_free(run->numvfs_watch);
        if (run->env.disc_pool && run->env.numvfs_progress)
                (void) numvfs_watch_start(run->env.event, run->env.disc_pool, run->env.ctx, plan->pf, numvfs_seen,
                                          run, &run->numvfs_watch);
        return 0;
}

static void provision_done(void *userdata) {
        struct pf_job *j = userdata;
        struct reconf_run *run = j->run;

        forward_stop(run);
        for (size_t k = 0; k < j->n; k++) {
                /* The store's VF record follows (an item's, through the
                 * machine's journal and record, too). */
                if (j->rs[k] >= 0 && j->states[k] && j->vfs[k] && run->env.class_recorded)
                        run->env.class_recorded(run->userdata, j->vfs[k], json_object_get(j->states[k]));
                reconf_machine_provision_done(run->rm, j->idx[k], j->rs[k], TAKE_PTR(j->states[k]), j->messages[k]);
        }
        pf_job_free(j);
}

static void provision_run(void *userdata) {
        struct pf_job *j = userdata;
        _cleanup_(svff_error_free) struct svff_error oerr = SVFF_ERROR_NULL;
        struct classes_open *co = NULL;
        int ro;

        /* The PF read and its class opened once for all of the job's VFs. */
        ro = classes_open_sync(j->run->env.ctx, j->pf, &co, &oerr);
        for (size_t k = 0; k < j->n; k++) {
                _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

                if (ro < 0) {
                        j->rs[k] = ro;
                        j->messages[k] = strdup(svff_error_is_set(&oerr) ? svff_error_message(&oerr)
                                                                         : strerror(-ro));
                        continue;
                }

                /* A PF without a class: 0 and no state (a bare PCI
                 * function needs nothing before its driver). */
                j->rs[k] = classes_provision_recorded_open(co, j->idx[k], j->cls[k], j->policy, j->tenant[k],
                                                           &j->states[k], &err);
                if (j->rs[k] > 0)
                        j->rs[k] = 0;
                if (j->rs[k] < 0)
                        j->messages[k] = strdup(svff_error_is_set(&err) ? svff_error_message(&err)
                                                                        : strerror(-j->rs[k]));
        }
        classes_close(co);
        (void) worker_pool_post(j->run->env.ops_pool, provision_done, j);
}

static int op_provision(void *userdata, const unsigned *indexes, size_t n, struct json_object *const *class_state) {
        struct reconf_run *run = userdata;
        struct pf_job *j;
        int r;

        if (exiting(run))
                return -ESHUTDOWN;
        j = pf_job_new(run, indexes, n);
        if (!j)
                return -ENOMEM;
        for (size_t k = 0; k < n; k++) {
                /* No journaled record (a VF with no assignment item):
                 * the store's, or else the policy's for a new VF. */
                j->tenant[k] = class_state[k];
                if (class_state[k])
                        j->cls[k] = svff_json_copy(class_state[k]);
                else if (j->vfs[k] && run->env.class_record)
                        j->cls[k] = run->env.class_record(run->userdata, j->vfs[k]);
        }
        j->policy = svff_json_copy(run->env.class_policy);
        run->env.phase(run->userdata, reconf_machine_phase(run->rm));
        r = worker_pool_submit(run->env.ops_pool, provision_run, j);
        if (r < 0)
                pf_job_free(j);
        return r;
}

static void bind_done(void *userdata) {
        struct pf_job *j = userdata;
        struct reconf_run *run = j->run;

        run->env.sysfs_changed(run->userdata, j->pf);
        forward_stop(run);
        for (size_t k = 0; k < j->n; k++)
                reconf_machine_bind_done(run->rm, j->idx[k], j->rs[k], j->messages[k]);
        pf_job_free(j);
}

static void bind_one(void *userdata, size_t k, int r, const char *message) {
        struct pf_job *j = userdata;

        j->rs[k] = r;
        if (r < 0)
                j->messages[k] = strdup(message);
}

static void bind_run(void *userdata) {
        struct pf_job *j = userdata;
        const struct reconf_env *env = &j->run->env;
        size_t n_failed;

        /* One job, one VF after the other: the PF's VFs probe in turn,
         * under the budget the dry run shows. */
        n_failed = reconf_ops_bind(env->ctx, j->pf, j->driver, (const char *const *) j->vfs, j->n, env->bind_timeout,
                                   env->bind_per_vf, NULL, bind_one, j);
        if (n_failed > 0)
                log_warning("%zu of %zu VFs of PF %s could not be bound to %s.", n_failed, j->n, j->pf, j->driver);
        fault_point("after-rebind", 0);
        (void) worker_pool_post(j->run->env.ops_pool, bind_done, j);
}

static int op_bind(void *userdata, const unsigned *indexes, size_t n) {
        struct reconf_run *run = userdata;
        struct pf_job *j;
        int r;

        if (exiting(run))
                return -ESHUTDOWN;
        j = pf_job_new(run, indexes, n);
        if (!j)
                return -ENOMEM;
        run->env.phase(run->userdata, reconf_machine_phase(run->rm));
        r = worker_pool_submit(run->env.ops_pool, bind_run, j);
        if (r < 0)
                pf_job_free(j);
        return r;
}

/* ---- the device class's release of the VFs the new count drops, before the write (ops pool) ---- */

static void release_class_done(void *userdata) {
        struct pf_job *j = userdata;
        struct reconf_run *run = j->run;

        forward_stop(run);
        for (size_t k = 0; k < j->n; k++)
                reconf_machine_forget_done(run->rm, j->items[k], j->rs[k], j->messages[k]);
        pf_job_free(j);
}

static void release_class_run(void *userdata) {
        struct pf_job *j = userdata;

        for (size_t k = 0; k < j->n; k++) {
                _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

                if (fault_inject("fail-class-release", (unsigned) k + 1))
                        j->rs[k] = svff_error_set(&err, -EIO, "VF %u of PF %s: injected failure", j->idx[k], j->pf);
                else
                        /* The journaled record's state: what the class set up. */
                        j->rs[k] = classes_release_sync(j->run->env.ctx, j->pf, j->idx[k],
                                                        json_object_object_get(j->cls[k], "state"), &err);
                if (j->rs[k] < 0) {
                        j->messages[k] = strdup(svff_error_is_set(&err) ? svff_error_message(&err)
                                                                        : strerror(-j->rs[k]));
                        log_warning("VF %u of PF %s, released by the reconf: %s", j->idx[k], j->pf,
                                    strna(j->messages[k]));
                } else if (j->rs[k] > 0) {
                        log_info("VF %u of PF %s, released by the reconf: its device class's setup undone.",
                                 j->idx[k], j->pf);
                        j->rs[k] = 0;
                }
                fault_point("after-class-release", (unsigned) k + 1);
        }
        (void) worker_pool_post(j->run->env.ops_pool, release_class_done, j);
}

static int op_release_class(void *userdata, const size_t *items, size_t n, struct json_object *const *class_state) {
        struct reconf_run *run = userdata;
        const struct svff_reconf_plan *plan = reconf_machine_plan(run->rm);
        _cleanup_free_ unsigned *indexes = calloc(n ? n : 1, sizeof(unsigned));
        struct pf_job *j;
        int r;

        if (exiting(run))
                return -ESHUTDOWN;
        if (!indexes)
                return -ENOMEM;
        for (size_t k = 0; k < n; k++)
                indexes[k] = plan->items[items[k]].index;
        j = pf_job_new(run, indexes, n);
        if (!j)
                return -ENOMEM;
        j->items = calloc(n ? n : 1, sizeof(*j->items));
        if (!j->items) {
                pf_job_free(j);
                return -ENOMEM;
        }
        for (size_t k = 0; k < n; k++) {
                j->items[k] = items[k];
                j->cls[k] = svff_json_copy(class_state[k]);
        }
        r = worker_pool_submit(run->env.ops_pool, release_class_run, j);
        if (r < 0)
                pf_job_free(j);
        return r;
}

/* ---- a reprogram's PF operations (ops pool) ---- */

struct pfop_job {
        struct reconf_run *run;
        enum reconf_pf_op op;
        char pf[SVFF_PCI_ADDR_STRLEN];
        char *image;
        struct json_object *ids;        /* a copy, or NULL */
        struct json_object *class_policy;       /* a copy, or NULL */
        unsigned numvfs;
        char pf_id[16];                 /* remove: what the PF was */
        struct json_object *identity;   /* flash: the file the hook wrote, or NULL */
        /* remove: the image as the PF leaves the bus; flash: the image
         * before the hook ran (as the removal saw it, when it did; NULL:
         * not known); in a systemd unit: its name, and whether it ended
         * (the result in r) */
        char *unit;
        struct json_object *before;
        bool unit_ended;
        int r;
        struct svff_error err;
};

static void pfop_job_free(struct pfop_job *j) {
        if (!j)
                return;
        free(j->image);
        json_object_put(j->ids);
        json_object_put(j->class_policy);
        json_object_put(j->identity);
        free(j->unit);
        json_object_put(j->before);
        svff_error_free(&j->err);
        free(j);
}

static bool ops_cancelled(void *userdata) {
        struct reconf_run *run = userdata;

        return worker_pool_cancelled(run->env.ops_pool);
}

/* Which file the image is now, with its content's hash when the PF's
 * policy compares content; NULL: not known. */
static struct json_object *image_identity(struct reconf_run *run, const char *image_dir, const char *image) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *identity = NULL;
        struct stat st;

        if (!image)
                return NULL;
        if (run->env.verify_image_sha256) {
                if (svff_flash_image_hash(image_dir, image, ops_cancelled, run, &identity, &err) < 0)
                        log_warning("%s.", svff_error_message(&err));
                return identity;
        }
        if (svff_flash_image_stat(image_dir, image, &st, NULL) < 0)
                return NULL;
        return svff_flash_image_identity(image, &st);
}

/* svffd never reads the image, so which file the hook wrote is known
 * only when the file was the same one, unchanged, before and after it
 * ran. */
static void flash_identity(struct pfop_job *j, const char *image_dir) {
        if (!j->before) {
                log_notice("The image PF %s was flashed with was not seen before the flash: the PF is not recorded "
                           "as holding it.", j->pf);
                return;
        }
        j->identity = image_identity(j->run, image_dir, j->image);
        if (!svff_flash_image_same(j->before, j->identity) ||
            (j->run->env.verify_image_sha256 && !svff_flash_image_same_content(j->before, j->identity))) {
                json_object_put(j->identity);
                j->identity = NULL;
                log_warning("Image '%s' changed while the flash hook ran: PF %s is not recorded as holding it.",
                            j->image, j->pf);
        }
}

/* Runs the hook as svffd's child: the fallback without systemd. */
static int flash(struct pfop_job *j, const struct svff_flash_hook *hook) {
        int r;

        if (!j->before)
                j->before = image_identity(j->run, hook->image_dir, j->image);
        r = svff_flash_hook_run(j->run->env.ctx, hook, j->pf, j->image, &j->err);
        if (r < 0)
                return r;
        flash_identity(j, hook->image_dir);
        return 0;
}

/* Before the hook runs in its unit: the checks svff_flash_hook_run()
 * makes, and the image as it is. */
static int flash_unit_prepare(struct pfop_job *j, const struct svff_flash_hook *hook) {
        int r;

        r = svff_flash_hook_check(hook->path, &j->err);
        if (r < 0)
                return r;
        r = svff_flash_image_check(hook->image_dir, j->image, &j->err);
        if (r < 0)
                return r;
        if (!j->before)
                j->before = image_identity(j->run, hook->image_dir, j->image);
        return 0;
}

static void flash_output(void *userdata, const char *line) {
        struct pfop_job *j = userdata;

        log_info("Flash hook for PF %s: %s", j->pf, line);
}

static int pf_exists(struct svff_ctx *ctx, const char *pf) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "bus/pci/devices/%s", pf) < 0)
                return -ENOMEM;
        return svff_sysfs_exists(svff_ctx_get_rootfd(ctx), p);
}

static int pf_remove(struct pfop_job *j) {
        struct svff_ctx *ctx = j->run->env.ctx;
        _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
        _cleanup_free_ char *p = NULL;
        int r;

        r = pf_exists(ctx, j->pf);
        if (r == 0)
                return 0;       /* gone already: a resumed removal */
        r = svff_pf_load(ctx, j->pf, &pf, &j->err);
        if (r < 0)
                return r;
        snprintf(j->pf_id, sizeof(j->pf_id), "%04x:%04x", pf->vendor_id, pf->device_id);
        if (pf->numvfs > 0)
                /* Never: the kernel orphans the VFs of a PF removed or
                 * unbound with VFs enabled. */
                return svff_error_set(&j->err, -EBUSY, "PF %s still has %u VFs; it is not removed with VFs "
                                      "enabled", j->pf, pf->numvfs);
        if (pf->driver) {
                r = svff_dev_unbind(ctx, j->pf, &j->err);
                if (r < 0)
                        return r;
        }
        if (asprintf(&p, "bus/pci/devices/%s/remove", j->pf) < 0)
                return -ENOMEM;
        r = svff_sysfs_write(svff_ctx_get_rootfd(ctx), p, "1");
        if (r < 0)
                return svff_error_set_errno(&j->err, r, "Cannot remove PF %s", j->pf);
        return 0;
}

/* The rescan that brings the PF back scans only behind its own upstream
 * bridge: the kernel's rescan of the PF's bus, class/pci_bus/DDDD:BB/rescan
 * (rescan_store(): below a bridge with no device left on the bus, it
 * rescans from that bridge). bus/pci/rescan would scan every bus and bring
 * back devices an operator removed on purpose. */
static int pf_rescan_wait(struct pfop_job *j) {
        struct svff_ctx *ctx = j->run->env.ctx;
        usec_t waited = 0, timeout = j->run->env.rescan_timeout ?: PLAN_RESCAN_TIMEOUT_USEC;
        _cleanup_free_ char *rescan = NULL;
        struct svff_pci_addr a;
        int r;

        r = svff_pci_addr_parse(j->pf, &a);
        if (r < 0)
                return svff_error_set_errno(&j->err, r, "PF '%s' is not a PCI address", j->pf);
        if (asprintf(&rescan, "class/pci_bus/%04x:%02x/rescan", a.domain, a.bus) < 0)
                return -ENOMEM;
        r = svff_sysfs_write(svff_ctx_get_rootfd(ctx), rescan, "1");
        if (r < 0)
                return svff_error_set_errno(&j->err, r, "Cannot rescan bus %04x:%02x, where PF %s was ('%s')",
                                            a.domain, a.bus, j->pf, rescan);
        /* The PF comes back at the address it had, or not at all: an
         * image that moves it is not one this PF's policy describes. */
        for (;;) {
                r = pf_exists(ctx, j->pf);
                if (r > 0)
                        return 0;
                if (r < 0)
                        return svff_error_set_errno(&j->err, r, "Cannot look for PF %s", j->pf);
                if (waited >= timeout)
                        return svff_error_set(&j->err, -ETIMEDOUT, "PF %s did not appear at its address within "
                                              "%llu ms of the rescan", j->pf,
                                              (unsigned long long) (timeout / USEC_PER_MSEC));
                (void) usleep(50 * 1000);
                waited += 50 * USEC_PER_MSEC;
        }
}

static int pf_check_identity(struct pfop_job *j) {
        _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
        char id[16];
        bool ok = false;
        size_t n;
        int r;

        r = svff_pf_load(j->run->env.ctx, j->pf, &pf, &j->err);
        if (r < 0)
                return r;
        snprintf(id, sizeof(id), "%04x:%04x", pf->vendor_id, pf->device_id);
        n = j->ids ? json_object_array_length(j->ids) : 0;
        for (size_t k = 0; k < n; k++)
                if (streq(json_object_get_string(json_object_array_get_idx(j->ids, k)), id))
                        ok = true;
        if (n == 0)
                ok = !*j->pf_id || streq(j->pf_id, id);
        if (!ok)
                return svff_error_set(&j->err, -EPROTO, "it is %s, not one of the identities its policy's "
                                      "reprogram_ids allow%s%s%s", id, *j->pf_id ? " (it was " : "",
                                      *j->pf_id ? j->pf_id : "", *j->pf_id ? ")" : "");
        if (pf->totalvfs < j->numvfs)
                return svff_error_set(&j->err, -ERANGE, "it is %s with sriov_totalvfs %u, fewer than the %u VFs "
                                      "asked for", id, pf->totalvfs, j->numvfs);
        log_info("PF %s came back as %s with sriov_totalvfs %u.", j->pf, id, pf->totalvfs);
        return 0;
}

/* Its class's PF-wide set-up (a QDMA PF's qmax), before any VF exists,
 * as init does: a rescanned PF starts from nothing. Straight through the
 * class registry: no other class step runs on the PF while the reprogram
 * holds it. Each VF's settings are the policy's. */
static int pf_prepare(struct pfop_job *j) {
        struct svff_ctx *ctx = j->run->env.ctx;
        _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
        struct svff_class_settings **loaded = NULL;
        struct svff_class_pf *c = NULL;
        const struct svff_class *class;
        int r;

        r = svff_pf_load(ctx, j->pf, &pf, &j->err);
        if (r < 0)
                return r;
        class = svff_class_find(ctx, pf);
        if (!class || !class->prepare)
                return 0;
        if (class->open) {
                r = class->open(ctx, pf, &c, &j->err);
                if (r < 0)
                        return r;
        }
        r = classes_load_all(class, c, j->class_policy, NULL, j->numvfs, &loaded, &j->err);
        if (r >= 0)
                r = class->prepare(c, pf, j->numvfs, loaded, &j->err);
        svff_class_unload_all(class, loaded, j->numvfs);
        if (class->close)
                class->close(c);
        return r < 0 ? r : 0;
}

static int pf_bind(struct pfop_job *j) {
        struct svff_ctx *ctx = j->run->env.ctx;
        _cleanup_free_ char *driver = NULL;
        int r;

        /* The rescan probed it: its own driver, by its id tables. Probe
         * once more when none took it (autoprobe was off, or slow). */
        r = svff_dev_get_driver(ctx, j->pf, &driver);
        if (r >= 0 && !driver) {
                (void) svff_sysfs_write(svff_ctx_get_rootfd(ctx), "bus/pci/drivers_probe", j->pf);
                r = svff_dev_get_driver(ctx, j->pf, &driver);
        }
        if (r < 0)
                return svff_error_set_errno(&j->err, r, "Cannot read the driver of PF %s", j->pf);
        if (!driver)
                return svff_error_set(&j->err, -ENODEV, "no driver took PF %s after the rescan", j->pf);
        if (streq(driver, "vfio-pci"))
                return svff_error_set(&j->err, -EBUSY, "PF %s went to vfio-pci, not to a driver that creates "
                                      "VFs", j->pf);
        return pf_prepare(j);
}

static int flash_unit_begin(struct reconf_run *run, struct pfop_job *j);

static void flash_unit_end(struct reconf_run *run) {
        run->flash = flash_unit_free(run->flash);
        run->flash_job = NULL;
        run->flash_poll = sd_event_source_disable_unref(run->flash_poll);
        run->flash_ended = sd_event_source_disable_unref(run->flash_ended);
}

static void pfop_done(void *userdata) {
        struct pfop_job *j = userdata;
        struct reconf_run *run = j->run;

        if (j->op == RECONF_PF_FLASH && j->unit) {
                if (!j->unit_ended && j->r >= 0 && flash_unit_begin(run, j) >= 0)
                        return;         /* the unit's end completes it */
                flash_unit_end(run);
        }
        run->env.sysfs_changed(run->userdata, j->pf);
        if (j->op == RECONF_PF_REMOVE && j->r >= 0 && *j->pf_id)
                memcpy(run->pf_id, j->pf_id, sizeof(run->pf_id));
        if (j->op == RECONF_PF_REMOVE && j->r >= 0)
                reconf_machine_set_image_before(run->rm, j->before);
        if (j->op == RECONF_PF_FLASH && j->r >= 0)
                reconf_machine_set_image_identity(run->rm, j->identity);
        forward_stop(run);
        reconf_machine_pf_done(run->rm, j->op, j->r, svff_error_is_set(&j->err) ? svff_error_message(&j->err) : NULL);
        pfop_job_free(j);
}

static void pfop_run(void *userdata) {
        struct pfop_job *j = userdata;
        struct reconf_run *run = j->run;

        switch (j->op) {
        case RECONF_PF_REMOVE:
                j->r = pf_remove(j);
                /* The image as the PF leaves the bus, journaled with the
                 * flash for a result taken up after a restart. */
                if (j->r >= 0 && j->image)
                        j->before = image_identity(run, run->env.flash_image_dir, j->image);
                break;
        case RECONF_PF_FLASH: {
                struct svff_flash_hook hook = {
                        .path = run->env.flash_hook,
                        .image_dir = run->env.flash_image_dir,
                        .timeout_usec = run->env.flash_timeout,
                        .output = flash_output,
                        .userdata = j,
                };

                if (j->unit_ended) {
                        /* the unit's result is in r already */
                        if (j->r >= 0)
                                flash_identity(j, hook.image_dir);
                } else if (!hook.path)
                        j->r = svff_error_set(&j->err, -ENOEXEC, "no flash_hook is configured");
                else if (j->unit)
                        j->r = flash_unit_prepare(j, &hook);
                else
                        j->r = flash(j, &hook);
                break;
        }
        case RECONF_PF_RESCAN:
                j->r = pf_rescan_wait(j);
                break;
        case RECONF_PF_IDENTITY:
                j->r = pf_check_identity(j);
                break;
        case RECONF_PF_BIND:
        default:
                j->r = pf_bind(j);
                break;
        }
        (void) worker_pool_post(run->env.ops_pool, pfop_done, j);
}

static struct pfop_job *pfop_new(struct reconf_run *run, enum reconf_pf_op op, const char *image,
                                 struct json_object *ids, unsigned numvfs, const char *unit) {
        struct pfop_job *j = calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        j->run = run;
        j->op = op;
        j->numvfs = numvfs;
        snprintf(j->pf, sizeof(j->pf), "%s", reconf_machine_plan(run->rm)->pf);
        memcpy(j->pf_id, run->pf_id, sizeof(j->pf_id));
        /* The removal and the flash (a unit's taken up too) know their
         * image from the reprogram; the flash compares the file with
         * what it was at the removal. */
        if (!image && (op == RECONF_PF_REMOVE || op == RECONF_PF_FLASH))
                image = reconf_machine_image(run->rm);
        if (op == RECONF_PF_FLASH && reconf_machine_image_before(run->rm) &&
            json_object_deep_copy(reconf_machine_image_before(run->rm), &j->before, NULL) < 0) {
                pfop_job_free(j);
                return NULL;
        }
        if ((image && !(j->image = strdup(image))) || (ids && json_object_deep_copy(ids, &j->ids, NULL) < 0) ||
            (run->env.class_policy && json_object_deep_copy(run->env.class_policy, &j->class_policy, NULL) < 0) ||
            (unit && !(j->unit = strdup(unit)))) {
                pfop_job_free(j);
                return NULL;
        }
        return j;
}

static int pfop_submit(struct reconf_run *run, enum reconf_pf_op op, const char *image, struct json_object *ids,
                       unsigned numvfs) {
        struct pfop_job *j;
        int r;

        if (exiting(run))
                return -ESHUTDOWN;
        j = pfop_new(run, op, image, ids, numvfs,
                     op == RECONF_PF_FLASH ? reconf_machine_flash_unit(run->rm) : NULL);
        if (!j)
                return -ENOMEM;
        run->env.phase(run->userdata, reconf_machine_phase(run->rm));
        r = worker_pool_submit(run->env.ops_pool, pfop_run, j);
        if (r < 0)
                pfop_job_free(j);
        return r;
}

/* ---- the flash hook in its own systemd unit (flash-unit.h) ---- */

/* The unit ended (a later loop iteration than systemd's answer, which
 * the unit's connection is not freed from): which file the hook wrote,
 * on the ops pool, then the flash completes. */
static int on_flash_ended(sd_event_source *s, void *userdata) {
        struct reconf_run *run = userdata;
        struct pfop_job *j = run->flash_job;
        LOG_CONTEXT(.pf = j->pf, .operation = "reprogram");

        run->flash_ended = sd_event_source_disable_unref(run->flash_ended);
        if (j->r < 0 || worker_pool_submit(run->env.ops_pool, pfop_run, j) < 0)
                pfop_done(j);
        return 0;
}

static void flash_unit_done(void *userdata, int r, const char *message) {
        struct reconf_run *run = userdata;
        struct pfop_job *j = run->flash_job;
        LOG_CONTEXT(.pf = j->pf, .operation = "reprogram");

        j->unit_ended = true;
        j->r = r;
        if (r < 0)
                (void) svff_error_set(&j->err, r, "%s", message ?: strerror(-r));
        else
                log_info("Flash unit '%s' for PF %s succeeded.", j->unit, j->pf);
        run->flash_poll = sd_event_source_disable_unref(run->flash_poll);
        if (sd_event_add_defer(run->env.event, &run->flash_ended, on_flash_ended, run) < 0)
                /* No later iteration to wait for: the ops pool's answer
                 * comes in one. */
                (void) on_flash_ended(NULL, run);
}

/* svffd's stop does not stop the flash: the unit is not in svffd's
 * cgroup. The run ends with the journal in phase "flash", naming the
 * unit, and the next start takes up its result. Nothing calls down into
 * a run when the stop begins, so the wait polls for it. */
static int on_flash_poll(sd_event_source *s, uint64_t usec, void *userdata) {
        struct reconf_run *run = userdata;
        struct pfop_job *j = run->flash_job;
        bool stop = false, now = false;
        LOG_CONTEXT(.pf = j->pf, .operation = "reprogram");

        run->env.stopping(run->userdata, &stop, &now);
        if (!stop) {
                (void) sd_event_source_set_time_relative(s, USEC_PER_SEC);
                return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        log_notice("svffd stops while the flash hook of PF %s runs in unit '%s': the flash goes on, and the next "
                   "start of svffd takes up its result.", j->pf, j->unit);
        j->unit_ended = true;
        j->r = svff_error_set(&j->err, -EINPROGRESS, "svffd stopped while flash unit '%s' ran", j->unit);
        pfop_done(j);
        return 0;
}

static int flash_unit_wait(struct reconf_run *run, struct pfop_job *j) {
        int r;

        r = sd_event_add_time_relative(run->env.event, &run->flash_poll, CLOCK_MONOTONIC, USEC_PER_SEC,
                                       USEC_PER_SEC / 10, on_flash_poll, run);
        if (r < 0) {
                run->flash = flash_unit_free(run->flash);
                return r;
        }
        run->flash_job = j;
        return 0;
}

static int flash_unit_begin(struct reconf_run *run, struct pfop_job *j) {
        int r;

        r = flash_unit_start(run->env.event, j->unit, run->env.flash_hook, j->pf, j->image, run->env.flash_timeout,
                             flash_unit_done, run, &run->flash);
        if (r >= 0)
                r = flash_unit_wait(run, j);
        if (r < 0)
                j->r = svff_error_set_errno(&j->err, r, "Cannot start flash unit '%s' for PF %s through systemd",
                                            j->unit, j->pf);
        return r;
}

static int op_flash_unit(void *userdata, char **ret) {
        struct reconf_run *run = userdata;

        /* Under systemd the hook runs in a unit of its own; without it
         * (a test on pcisim, a hand-run svffd in the VM tier) as svffd's
         * child, the fallback. */
        if (!run->env.flash_hook || !flash_unit_available()) {
                *ret = NULL;
                return 0;
        }
        return flash_unit_name(reconf_machine_plan(run->rm)->pf, ret);
}

static int op_flash_resume(void *userdata, const char *unit) {
        struct reconf_run *run = userdata;
        struct pfop_job *j;
        int r;

        if (exiting(run))
                return -ESHUTDOWN;
        j = pfop_new(run, RECONF_PF_FLASH, NULL, NULL, 0, unit);
        if (!j)
                return -ENOMEM;
        run->env.phase(run->userdata, "flash");
        log_info("Taking up the result of flash unit '%s', which ran the flash hook of PF %s while svffd was "
                 "stopped.", unit, j->pf);
        r = flash_unit_watch(run->env.event, unit, run->env.flash_timeout, flash_unit_done, run, &run->flash);
        if (r >= 0)
                r = flash_unit_wait(run, j);
        if (r < 0) {
                log_error_errno(r, "Cannot look up flash unit '%s' of PF %s through systemd: %m", unit, j->pf);
                pfop_job_free(j);
        }
        return r;
}

static int op_remove_pf(void *userdata) {
        return pfop_submit(userdata, RECONF_PF_REMOVE, NULL, NULL, 0);
}

static int op_flash(void *userdata, const char *image) {
        return pfop_submit(userdata, RECONF_PF_FLASH, image, NULL, 0);
}

static int op_rescan_wait(void *userdata) {
        return pfop_submit(userdata, RECONF_PF_RESCAN, NULL, NULL, 0);
}

static int op_check_identity(void *userdata, struct json_object *ids, unsigned numvfs) {
        return pfop_submit(userdata, RECONF_PF_IDENTITY, NULL, ids, numvfs);
}

static int op_bind_pf(void *userdata) {
        struct reconf_run *run = userdata;

        return pfop_submit(userdata, RECONF_PF_BIND, NULL, NULL, reconf_machine_plan(run->rm)->to);
}

/* ---- the store (main thread) ---- */

/* The PF's desired state and its VF records as they are now; the
 * records of VFs the change destroyed go, original drivers stay. A VF's
 * class record goes with its index: where the VFs moved, the one at an
 * address may have been another VF's (its secondary controller, its
 * namespace), which a reprovision must not be given as its own. */
static int record_vfs(struct reconf_run *run) {
        struct svff_store *store = run->env.store;
        const struct svff_reconf_plan *plan = reconf_machine_plan(run->rm);
        const struct svff_pf *after = run->after;
        _cleanup_(json_object_putp) struct json_object *classes = json_object_new_object();
        _cleanup_strv_free_ char **gone = NULL;
        size_t n_gone = 0;
        int r;

        if (!classes)
                return -ENOMEM;
        r = svff_store_set_pf(store, plan->pf, reconf_machine_numvfs_now(run->rm), plan->driver);
        if (r < 0)
                return r;
        json_object_object_foreach(svff_store_vfs(store), key, rec) {
                struct json_object *cls;
                const char *pf;
                unsigned index;
                char **t, ikey[16];

                if (svff_json_get_string(rec, "pf", &pf) < 0 || !streq(pf, plan->pf))
                        continue;
                if (svff_json_get_unsigned(rec, "index", &index) >= 0 &&
                    json_object_object_get_ex(rec, "class", &cls) && cls) {
                        snprintf(ikey, sizeof(ikey), "%u", index);
                        if (json_object_object_add(classes, ikey, json_object_get(cls)) < 0)
                                return -ENOMEM;
                }
                if (after && svff_pf_find_vf(after, key))
                        continue;
                t = realloc(gone, (n_gone + 2) * sizeof(char *));
                if (!t)
                        return -ENOMEM;
                gone = t;
                gone[n_gone] = strdup(key);
                if (!gone[n_gone])
                        return -ENOMEM;
                gone[++n_gone] = NULL;
        }
        for (size_t i = 0; i < n_gone; i++)
                svff_store_remove_vf(store, gone[i]);
        for (size_t i = 0; after && i < after->n_vfs; i++) {
                const struct svff_vf *vf = &after->vfs[i];
                const char *orig = vf->driver;

                if (svff_store_get_vf(store, vf->address, NULL, &orig) == 0)
                        orig = vf->driver;
                r = svff_store_set_vf(store, vf->address, plan->pf, vf->index, orig, plan->driver);
                if (r >= 0) {
                        struct json_object *cls = NULL;
                        char ikey[16];

                        snprintf(ikey, sizeof(ikey), "%u", vf->index);
                        (void) json_object_object_get_ex(classes, ikey, &cls);
                        r = svff_store_set_vf_class(store, vf->address, json_object_get(cls));
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Same index, new address (offset or stride changed): each record
 * follows its VF. All are taken out first, as one item's new address
 * may be another's old one. */
static void move_records(struct reconf_run *run) {
        struct svff_store *store = run->env.store;
        const struct svff_reconf_plan *plan = reconf_machine_plan(run->rm);
        size_t n = plan->n_items;
        _cleanup_free_ struct svff_assignment *recs = calloc(n ? n : 1, sizeof(*recs));
        _cleanup_free_ struct json_object **cls = calloc(n ? n : 1, sizeof(struct json_object *));
        _cleanup_free_ bool *have = calloc(n ? n : 1, sizeof(bool));

        if (!recs || !cls || !have) {
                log_oom();
                return;
        }
        for (size_t i = 0; i < n; i++) {
                const struct reconf_item *st = reconf_machine_item(run->rm, i);
                char *rec_vf = run->items[i].rec_vf;

                if (st->unrecorded || streq(st->vf, rec_vf))
                        continue;
                if (svff_store_get_assignment(store, rec_vf, &recs[i]) > 0 &&
                    streq(recs[i].uuid, plan->items[i].a.uuid)) {
                        /* The assignment's class settings go with it. */
                        cls[i] = svff_json_copy(svff_store_get_assignment_class(store, rec_vf));
                        svff_store_remove_assignment(store, rec_vf);
                        have[i] = true;
                }
        }
        for (size_t i = 0; i < n; i++) {
                const struct reconf_item *st = reconf_machine_item(run->rm, i);

                if (have[i] && svff_store_set_assignment(store, st->vf, &recs[i]) >= 0) {
                        snprintf(run->items[i].rec_vf, sizeof(run->items[i].rec_vf), "%s", st->vf);
                        if (cls[i] && svff_store_set_assignment_class(store, st->vf, TAKE_PTR(cls[i])) < 0)
                                log_warning("The class settings of the assignment of VF %s to domain '%s' could "
                                            "not be kept with its new address", st->vf, recs[i].domain);
                }
                json_object_put(cls[i]);
        }
}

/* Item i's record as the machine says, edited from the record as it is
 * now (lifecycle events may have changed it; one that is gone stays
 * gone). */
static void apply_record(struct reconf_run *run, size_t i) {
        struct svff_store *store = run->env.store;
        const struct svff_reconf_item *it = &reconf_machine_plan(run->rm)->items[i];
        const char *rec_vf = run->items[i].rec_vf;
        struct reconf_record rec;
        struct svff_assignment a;

        reconf_machine_record(run->rm, i, &rec);
        if (rec.action == RECONF_RECORD_KEEP)
                return;
        if (svff_store_get_assignment(store, rec_vf, &a) <= 0 || !streq(a.uuid, it->a.uuid)) {
                if (rec.action == RECONF_RECORD_SET && rec.state == SVFF_ASSIGN_ATTACHED)
                        log_warning("The assignment of VF %s to domain '%s' is no longer recorded (the domain "
                                    "went away during the reconf?): not recording it again.", rec.vf, it->a.domain);
                return;
        }
        if (rec.action == RECONF_RECORD_REMOVE) {
                log_info("VF %s released from domain '%s' (--force): it no longer exists.", it->vf, it->a.domain);
                svff_store_remove_assignment(store, rec_vf);
                return;
        }
        if (!streq(rec_vf, rec.vf)) {
                svff_store_remove_assignment(store, rec_vf);
                snprintf(run->items[i].rec_vf, sizeof(run->items[i].rec_vf), "%s", rec.vf);
        }
        if (a.state == rec.state && a.pause_mode == rec.mode && streq(rec_vf, rec.vf) &&
            (!rec.guest_address || !*rec.guest_address || streq(a.guest_address, rec.guest_address)))
                return;
        a.state = rec.state;
        a.pause_mode = rec.mode;
        if (rec.guest_address && *rec.guest_address)
                snprintf(a.guest_address, sizeof(a.guest_address), "%s", rec.guest_address);
        (void) svff_store_set_assignment(store, rec.vf, &a);
}

/* What the PF holds, in the same commit as the journal that says it:
 * nothing known once the hook may run (phase "flash"), the file the hook
 * wrote (the journal's image identity, if known) once the flash
 * succeeded and the PF came back as allowed ("flashed"). A start-up compares a policy's image with it
 * and flashes only when they differ, so a record must never claim more
 * than the journal knows. */
static void record_image(struct reconf_run *run, struct json_object *journal) {
        const char *pf = reconf_machine_plan(run->rm)->pf, *phase = NULL;
        struct json_object *rp = NULL, *identity = NULL;
        bool flashed = false;
        int r = 0;

        if (!journal || svff_json_get_object(journal, "reprogram", &rp) < 0 || !rp)
                return;
        (void) svff_json_get_bool(rp, "flashed", &flashed);
        (void) svff_json_get_string(journal, "phase", &phase);
        if (flashed) {
                if (json_object_object_get_ex(rp, "image_identity", &identity) &&
                    json_object_is_type(identity, json_type_object)) {
                        struct json_object *stored = svff_store_get_pf_image(run->env.store, pf);

                        if (!stored || !json_object_equal(stored, identity))
                                r = svff_store_set_pf_image(run->env.store, pf, svff_json_copy(identity));
                } else if (svff_store_get_pf_image(run->env.store, pf))
                        /* flashed, but which file it was is not known */
                        r = svff_store_set_pf_image(run->env.store, pf, NULL);
        } else if (phase && streq(phase, "flash") && svff_store_get_pf_image(run->env.store, pf))
                r = svff_store_set_pf_image(run->env.store, pf, NULL);
        if (r < 0 && r != -ENOENT)
                log_error("Recording the image of PF %s failed, continuing: %s", pf, strerror(-r));
}

/* Who owns the PF's count, in the commit that ends the reconf: whoever
 * asked for it (the journal's owner) once the PF took the new count. A
 * reconf refused or rolled back leaves the owner as it was, and one
 * whose journal stays (not every assignment settled) records it when it
 * is completed. */
static void record_owner(struct reconf_run *run, struct json_object *journal) {
        const char *pf = reconf_machine_plan(run->rm)->pf, *owner = reconf_machine_owner(run->rm);
        int r;

        if (journal || !owner || !reconf_machine_count_set(run->rm))
                return;
        r = svff_store_set_pf_owner(run->env.store, pf, owner);
        if (r < 0)
                log_error("Recording '%s' as the owner of the VF count of PF %s failed, continuing: %s", owner, pf,
                          strerror(-r));
}

static int commit_now(struct reconf_run *run, struct json_object *journal, struct svff_error *err) {
        const char *pf = reconf_machine_plan(run->rm)->pf;
        unsigned gen;
        int r;

        (void) reconf_machine_vfs(run->rm, NULL, &gen);
        if (gen != run->vfs_gen) {
                move_records(run);
                r = record_vfs(run);
                if (r < 0)
                        /* The journal still goes to disk: it says where a
                         * restart picks up, whatever the VF records say. */
                        log_error("Recording the VFs of PF %s failed, continuing: %s", pf, strerror(-r));
                else
                        run->vfs_gen = gen;
        }
        for (size_t i = 0; i < reconf_machine_plan(run->rm)->n_items; i++)
                apply_record(run, i);
        record_image(run, journal);
        record_owner(run, journal);
        return run->env.commit(run->userdata, pf, json_object_get(journal), err);
}

static void commit_finish(struct reconf_run *run, struct json_object *journal) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        int r;

        r = commit_now(run, journal, &err);
        json_object_put(journal);
        forward_stop(run);
        reconf_machine_commit_done(run->rm, r, r < 0 ? svff_error_message(&err) : NULL);
        /* The run may be gone. */
}

struct commit_req {
        struct reconf_run *run;
        struct json_object *journal;    /* NULL: cleared */
};

static int on_commit(sd_event_source *s, void *userdata) {
        struct commit_req *c = userdata;
        struct reconf_run *run = c->run;
        struct json_object *journal = c->journal;
        /* the run goes on from here: what it submits carries its PF */
        LOG_CONTEXT(.pf = reconf_machine_plan(run->rm)->pf,
                    .operation = reconf_machine_recovery(run->rm) ? "recover"
                                 : reconf_machine_reprogram(run->rm) ? "reprogram" : "reconf");

        (void) s;
        free(c);
        run->commit_source = sd_event_source_unref(run->commit_source);
        commit_finish(run, journal);
        return 0;
}

/* Deferred to the end of this event loop iteration: the records of the
 * completions delivered together (a batch of restores, of native
 * pauses) reach the disk in one commit. Once the loop has ended (the
 * pools are draining), at once. */
static int op_commit(void *userdata, struct json_object *journal) {
        struct reconf_run *run = userdata;
        struct commit_req *c;
        int r;

        journal = journal ? svff_json_copy(journal) : NULL;
        if (exiting(run) || !run->env.event) {
                commit_finish(run, journal);
                return 0;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                json_object_put(journal);
                return -ENOMEM;
        }
        c->run = run;
        c->journal = journal;
        r = sd_event_add_defer(run->env.event, &run->commit_source, on_commit, c);
        if (r < 0) {
                free(c);
                commit_finish(run, journal);
        }
        return 0;
}

static void op_poll_stop(void *userdata) {
        forward_stop(userdata);
}

static void op_finished(void *userdata) {
        struct reconf_run *run = userdata;

        run->env.finished(run);
}

static const struct reconf_ops real_ops = {
        .quiesce = op_quiesce,
        .set_numvfs = op_set_numvfs,
        .provision = op_provision,
        .bind = op_bind,
        .restore = op_restore,
        .release_class = op_release_class,
        .commit = op_commit,
        .remove_pf = op_remove_pf,
        .flash = op_flash,
        .flash_unit = op_flash_unit,
        .flash_resume = op_flash_resume,
        .rescan_wait = op_rescan_wait,
        .check_identity = op_check_identity,
        .bind_pf = op_bind_pf,
        .step = op_step,
        .poll_stop = op_poll_stop,
        .finished = op_finished,
};

int reconf_run_new(const struct reconf_env *env, void *userdata, struct svff_reconf_plan *plan,
                   const struct reconf_journal *journal, uint64_t started_usec, virConnectPtr conn,
                   struct reconf_run **ret) {
        struct reconf_run *run = calloc(1, sizeof(*run));
        size_t n = plan->n_items;

        if (!run) {
                svff_reconf_plan_free(plan);
                if (conn)
                        virConnectClose(conn);
                return -ENOMEM;
        }
        run->env = *env;
        run->userdata = userdata;
        run->conn = conn;
        run->env.ctx = svff_ctx_ref(env->ctx);
        run->env.pause_cmd = strdup(env->pause_cmd);
        run->env.unpause_cmd = strdup(env->unpause_cmd);
        run->env.flash_hook = env->flash_hook ? strdup(env->flash_hook) : NULL;
        run->env.flash_image_dir = env->flash_image_dir ? strdup(env->flash_image_dir) : NULL;
        run->env.class_policy = NULL;
        if (env->class_policy && json_object_deep_copy(env->class_policy, &run->env.class_policy, NULL) < 0)
                run->env.class_policy = NULL;
        run->items = calloc(n ? n : 1, sizeof(*run->items));
        for (size_t i = 0; run->items && i < n; i++)
                snprintf(run->items[i].rec_vf, sizeof(run->items[i].rec_vf), "%s", plan->items[i].vf);
        run->rm = reconf_machine_new(plan, journal, started_usec, conn != NULL, &real_ops, run);
        if (!run->rm || !run->items || !run->env.pause_cmd || !run->env.unpause_cmd ||
            (env->flash_hook && !run->env.flash_hook) || (env->flash_image_dir && !run->env.flash_image_dir) ||
            (env->class_policy && !run->env.class_policy)) {
                reconf_run_free(run);
                return -ENOMEM;
        }
        *ret = run;
        return 0;
}

void reconf_run_free(struct reconf_run *run) {
        if (!run)
                return;
        sd_event_source_unref(run->commit_source);
        if (run->flash_job)
                pfop_job_free(run->flash_job);
        flash_unit_end(run);
        reconf_machine_free(run->rm);
        numvfs_watch_free(run->numvfs_watch);
        svff_pf_free(run->after);
        svff_ctx_unref(run->env.ctx);
        if (run->conn)
                virConnectClose(run->conn);
        free(run->items);
        free((char *) run->env.pause_cmd);
        free((char *) run->env.unpause_cmd);
        free((char *) run->env.flash_hook);
        free((char *) run->env.flash_image_dir);
        json_object_put(run->env.class_policy);
        free(run);
}

/* Recovery: item i's record, under the plan's VF address or, when the
 * interrupted run's numvfs phase moved it there, under the address of
 * the VF with the same index now. */
void reconf_run_recover_items(struct reconf_run *run) {
        struct svff_store *store = run->env.store;
        const struct svff_reconf_plan *plan = reconf_machine_plan(run->rm);

        for (size_t i = 0; i < plan->n_items; i++) {
                const struct svff_reconf_item *it = &plan->items[i];
                struct svff_assignment a = {};
                const char *where = NULL;

                if (svff_store_get_assignment(store, it->vf, &a) > 0 && streq(a.uuid, it->a.uuid))
                        where = it->vf;
                else {
                        json_object_object_foreach(svff_store_vfs(store), key, vrec) {
                                const char *vpf = NULL;
                                unsigned idx;

                                if (svff_json_get_string(vrec, "pf", &vpf) < 0 || !streq(vpf, plan->pf) ||
                                    svff_json_get_unsigned(vrec, "index", &idx) < 0 || idx != it->index)
                                        continue;
                                if (svff_store_get_assignment(store, key, &a) > 0 && streq(a.uuid, it->a.uuid)) {
                                        where = key;
                                        break;
                                }
                        }
                }
                if (where)
                        snprintf(run->items[i].rec_vf, sizeof(run->items[i].rec_vf), "%s", where);
                reconf_machine_recover_item(run->rm, i, where != NULL, where, a.state, a.pause_mode);
        }
}

void reconf_run_start(struct reconf_run *run) {
        forward_stop(run);
        reconf_machine_start(run->rm);
}
