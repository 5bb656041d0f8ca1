/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autoinit.h"
#include "interface.h"
#include "json-util.h"
#include "log.h"
#include "methods.h"
#include "operations.h"
#include "reconfigure.h"

/* A PF waiting for settle-msec of quiet, or for a fresh snapshot. */
struct pending {
        struct pending *next;
        struct autoinit *autoinit;
        char address[SVFF_PCI_ADDR_STRLEN];
        sd_event_source *timer;         /* NULL once settled */
        bool restore;                   /* may fall back to the stored state */
};

struct autoinit {
        struct manager *manager;
        struct pending *pending;
        bool waiting;                   /* a snapshot is on its way */
};

static struct pending *pending_free(struct pending *p) {
        if (p) {
                sd_event_source_disable_unref(p->timer);
                free(p);
        }
        return NULL;
}

int autoinit_new(struct manager *m, struct autoinit **ret) {
        struct autoinit *a = calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        a->manager = m;
        *ret = a;
        return 0;
}

struct autoinit *autoinit_free(struct autoinit *a) {
        if (!a)
                return NULL;
        while (a->pending) {
                struct pending *p = a->pending;

                a->pending = p->next;
                pending_free(p);
        }
        free(a);
        return NULL;
}

static struct pending **find_pending(struct autoinit *a, const char *address) {
        for (struct pending **p = &a->pending; *p; p = &(*p)->next)
                if (streq((*p)->address, address))
                        return p;
        return NULL;
}

static void emit(struct manager *m, const char *name, const char *pf, const char *fmt, ...)
        _printf_(4, 5);
static void emit(struct manager *m, const char *name, const char *pf, const char *fmt, ...) {
        struct json_object *e = json_object_new_object();
        char msg[512];
        va_list ap;

        if (!e)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_object_object_add(e, "event", json_object_new_string(name));
        json_object_object_add(e, "device", json_object_new_string(pf));
        json_object_object_add(e, "pf", json_object_new_string(pf));
        json_object_object_add(e, "message", json_object_new_string(msg));
        manager_emit(m, NULL, e);
}

static const struct svff_pf *snapshot_pf(struct manager *m, const char *address) {
        for (size_t i = 0; m->snapshot && i < m->snapshot->n_pfs; i++)
                if (streq(m->snapshot->pfs[i]->address, address))
                        return m->snapshot->pfs[i];
        return NULL;
}

/* Whether pf already has numvfs VFs, all on driver. */
static bool satisfied(const struct svff_pf *pf, unsigned numvfs, const char *driver) {
        if (pf->numvfs != numvfs || pf->n_vfs != numvfs)
                return false;
        for (size_t i = 0; i < pf->n_vfs; i++)
                if (!pf->vfs[i].driver || !streq(pf->vfs[i].driver, driver))
                        return false;
        return true;
}

/* Whether any VF of pf that the store records carries an assignment and
 * is missing or off its recorded driver. */
static bool assignments_need_restore(struct manager *m, const struct svff_pf *pf,
                                     const char *driver) {
        json_object_object_foreach(svff_store_assignments(m->store), vf, asg) {
                const char *vpf = NULL;
                const struct svff_vf *v;

                (void) asg;
                if (svff_store_get_vf(m->store, vf, &vpf, NULL) <= 0 || !vpf || !streq(vpf, pf->address))
                        continue;
                v = svff_pf_find_vf(pf, vf);
                if (!v || !v->driver || !streq(v->driver, driver))
                        return true;
        }
        return false;
}

static bool has_assignments(struct manager *m, const struct svff_pf *pf) {
        for (size_t i = 0; i < pf->n_vfs; i++)
                if (json_object_object_get_ex(svff_store_assignments(m->store), pf->vfs[i].address, NULL))
                        return true;
        return false;
}

/* Decides what pf should look like and starts an Init when it does not.
 * restore: without a policy, fall back to the stored desired state (a PF
 * that came back). Returns 1 when an Init was started, 0 when none was
 * needed, -EBUSY when an operation on the PF is in progress. */
static int apply(struct manager *m, const struct svff_pf *pf, bool restore, bool startup) {
        const struct svff_policy *pol;
        const char *driver = NULL;
        unsigned numvfs;
        int autoprobe = -1;
        char reason[512];
        int r;

        if (reconf_journaled(m, pf->address) >= 0) {
                log_info("PF %s has an interrupted reconf; completing it decides the VF count.", pf->address);
                return 0;
        }
        pol = svff_config_find_policy(&m->config, pf->address, pf->vendor_id, pf->device_id,
                                      pf->netdev);
        if (pol && pol->numvfs >= 0) {
                numvfs = (unsigned) pol->numvfs;
                driver = pol->vf_driver ?: m->config.vf_driver;
                autoprobe = pol->autoprobe;
                snprintf(reason, sizeof(reason), "policy '%s' (%s)", pol->name, pol->origin);
        } else if (svff_store_get_pf(m->store, pf->address, &numvfs, &driver) > 0 && driver &&
                   (restore || (startup && assignments_need_restore(m, pf, driver)))) {
                snprintf(reason, sizeof(reason), "%s",
                         restore ? "the state svff recorded for it"
                                 : "the assignments recorded on its VFs");
        } else {
                log_debug("PF %s: no policy%s, leaving it as it is.", pf->address,
                          pol ? " with a VF count" : "");
                return 0;
        }

        if (satisfied(pf, numvfs, driver)) {
                log_debug("PF %s already has %u VFs on %s (%s).", pf->address, numvfs, driver, reason);
                return 0;
        }
        if (!pf->driver) {
                /* The kernel refuses sriov_numvfs without a PF driver; its
                 * bind event brings us back. */
                log_info("PF %s has no driver yet; %s waits for it to bind.", pf->address, reason);
                return 0;
        }
        if (pf->numvfs != numvfs && pf->numvfs > 0 && has_assignments(m, pf)) {
                /* Changing the count destroys every VF; never behind the
                 * domains' backs. */
                log_warning("PF %s has assigned VFs; %s asks for %u VFs instead of %u, leaving it.",
                            pf->address, reason, numvfs, pf->numvfs);
                emit(m, "policy-failed", pf->address,
                     "%s asks for %u VFs, but VFs of the PF are assigned; change the count by hand",
                     reason, numvfs);
                return 0;
        }
        if (numvfs > pf->totalvfs) {
                log_warning("PF %s supports %u VFs, %s asks for %u; ignoring it.", pf->address,
                            pf->totalvfs, reason, numvfs);
                emit(m, "policy-failed", pf->address, "%s asks for %u VFs, the PF supports %u",
                     reason, numvfs, pf->totalvfs);
                return 0;
        }
        r = operation_init_start(m, NULL, pf->address, numvfs, driver, autoprobe, reason);
        if (r < 0) {
                if (r != -EBUSY)
                        log_warning_errno(r, "PF %s: could not start the init for %s: %m", pf->address,
                                          reason);
                return r;
        }
        if (startup) {
                struct operation *op = manager_find_operation(m, pf->address);

                if (op)
                        op->startup = true;
        }
        return 1;
}

static void arm(struct autoinit *a, const char *address, bool restore);

/* Runs once a snapshot newer than the settled events exists. */
static void snapshot_ready(struct manager *m, struct call *call) {
        struct autoinit *a = m->autoinit;
        struct pending **pp = &a->pending;

        a->waiting = false;
        while (*pp) {
                struct pending *p = *pp;
                const struct svff_pf *pf;
                int r = 0;

                if (p->timer) {
                        pp = &p->next;
                        continue;
                }
                *pp = p->next;
                pf = snapshot_pf(m, p->address);
                if (!pf)
                        log_debug("%s is not an SR-IOV PF (or is gone again), ignoring its event.",
                                  p->address);
                else {
                        emit(m, "pf-added", pf->address, "PF %s (%04x:%04x) is present", pf->address,
                             pf->vendor_id, pf->device_id);
                        r = apply(m, pf, p->restore, false);
                }
                if (r == -EBUSY) {
                        /* Its operation will change it anyway; look again
                         * once that is over. */
                        arm(a, p->address, p->restore);
                }
                pending_free(p);
        }
}

static int on_settled(sd_event_source *s, uint64_t usec, void *userdata) {
        struct pending *p = userdata;
        struct autoinit *a = p->autoinit;
        struct manager *m = a->manager;

        p->timer = sd_event_source_disable_unref(p->timer);
        /* Read the host again: the PF is new to every snapshot so far. */
        manager_sysfs_changed(m, NULL);
        if (!a->waiting) {
                a->waiting = true;
                manager_with_snapshot(m, NULL, snapshot_ready);
        }
        return 0;
}

/* (Re)starts the settle timer of address. */
static void arm(struct autoinit *a, const char *address, bool restore) {
        struct manager *m = a->manager;
        struct pending **pp = find_pending(a, address), *p;
        uint64_t now_usec;
        int r;

        if (pp && (*pp)->timer) {
                p = *pp;
                p->restore = p->restore || restore;
                (void) sd_event_source_set_time_relative(p->timer, m->config.settle_usec);
                return;
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
                log_oom();
                return;
        }
        p->autoinit = a;
        p->restore = restore;
        snprintf(p->address, sizeof(p->address), "%s", address);
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now_usec);
        r = sd_event_add_time(m->event, &p->timer, CLOCK_MONOTONIC, now_usec + m->config.settle_usec,
                              0, on_settled, p);
        if (r < 0) {
                log_warning_errno(r, "Failed to arm the settle timer of %s, ignoring its event: %m",
                                  address);
                free(p);
                return;
        }
        p->next = a->pending;
        a->pending = p;
}

/* Whether address is a VF: one svff recorded, any other one present
 * (it has a physfn link), or one the last snapshot saw. A VF is never a
 * PF, so its events need no settle timer nor another pass over the
 * host; a reconf adds and binds a whole PF's worth of them at once. */
static bool known_vf(struct manager *m, const char *address) {
        char path[64];

        if (svff_store_get_vf(m->store, address, NULL, NULL) > 0)
                return true;
        snprintf(path, sizeof(path), "bus/pci/devices/%s/physfn", address);
        if (svff_sysfs_exists(svff_ctx_get_rootfd(m->ctx), path) > 0)
                return true;
        for (size_t i = 0; m->snapshot && i < m->snapshot->n_pfs; i++)
                if (svff_pf_find_vf(m->snapshot->pfs[i], address))
                        return true;
        return false;
}

void autoinit_handle_uevent(struct manager *m, const char *action, const char *address) {
        struct autoinit *a = m->autoinit;
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned numvfs = 0;
        size_t n_records = 0, n_assigned = 0;

        if (!a || m->shutting_down)
                return;
        if (svff_pci_addr_canonicalize(address, pf) < 0) {
                log_debug("Ignoring a uevent for '%s': not a PCI address.", address);
                return;
        }

        if (streq(action, "add") || streq(action, "bind")) {
                if (known_vf(m, pf))
                        return;
                log_debug("PCI %s: %s; applying its policy once it settles.", pf, action);
                /* A PF svff has records of came back: its recorded state
                 * is the desired one unless a policy says otherwise. */
                arm(a, pf, true);
                return;
        }
        if (!streq(action, "remove"))
                return;

        {
                struct pending **pp = find_pending(a, pf);

                if (pp) {
                        struct pending *p = *pp;

                        *pp = p->next;
                        pending_free(p);
                }
        }
        if (!snapshot_pf(m, pf) && svff_store_get_pf(m->store, pf, &numvfs, NULL) <= 0)
                return;  /* not a PF svff knows: a VF or another device */

        json_object_object_foreach(svff_store_vfs(m->store), vf, rec) {
                const char *vpf = NULL;

                if (svff_json_get_string(rec, "pf", &vpf) < 0 || !streq(vpf, pf))
                        continue;
                n_records++;
                if (json_object_object_get_ex(svff_store_assignments(m->store), vf, NULL))
                        n_assigned++;
        }
        manager_sysfs_changed(m, NULL);
        log_notice("PF %s was removed; its %zu VF record(s) and %zu assignment(s) are kept and marked absent.",
                   pf, n_records, n_assigned);
        emit(m, "pf-removed", pf, "PF %s is absent; %zu VF record(s), %zu assignment(s) kept", pf,
             n_records, n_assigned);
}

void autoinit_reload(struct manager *m) {
        if (!m->autoinit || !m->snapshot || m->snapshot->error < 0)
                return;
        for (size_t i = 0; i < m->snapshot->n_pfs; i++)
                (void) apply(m, m->snapshot->pfs[i], false, false);
}

unsigned autoinit_startup(struct manager *m) {
        unsigned n = 0;

        if (!m->snapshot || m->snapshot->error < 0)
                return 0;
        for (size_t i = 0; i < m->snapshot->n_pfs; i++)
                if (apply(m, m->snapshot->pfs[i], false, true) > 0)
                        n++;
        return n;
}

#ifdef SVFF_FAULT_POINTS
void method_debug_inject_uevent(struct manager *m, struct call *call) {
        static const char *const allowed[] = { "action", "device", NULL };
        struct json_object *params = call_request(call)->parameters;
        const char *action, *device;

        if (!require_privileged(m, call))
                return;
        if (!params_check_known(call, SVFF_ERROR_INVALID_PARAMETER, allowed))
                return;
        if (svff_json_get_string(params, "action", &action) < 0 ||
            (!streq(action, "add") && !streq(action, "remove") && !streq(action, "bind"))) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "action",
                            "Parameter 'action' must be add, bind or remove.");
                return;
        }
        if (svff_json_get_string(params, "device", &device) < 0) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "device",
                            "Parameter 'device' must be a PCI address.");
                return;
        }
        log_info("Injected uevent: %s %s.", action, device);
        autoinit_handle_uevent(m, action, device);
        call_reply(call, NULL);
}
#endif
