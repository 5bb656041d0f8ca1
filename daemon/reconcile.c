/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json-util.h"
#include "log.h"
#include "journal.h"
#include "libvirt.h"
#include "reconcile.h"

static const struct svff_vf *find_vf(struct snapshot *s, const char *address) {
        for (size_t i = 0; s && i < s->n_pfs; i++) {
                const struct svff_vf *vf = svff_pf_find_vf(s->pfs[i], address);
                if (vf)
                        return vf;
        }
        return NULL;
}

/* The PF whose VF address vf would be, from each PF's SR-IOV layout
 * (routing ID = PF's + offset + index x stride): for a VF that is gone,
 * whose record went with it. NULL when none. */
static const char *pf_by_layout(struct snapshot *s, const char *vf) {
        struct svff_pci_addr a, p;

        if (svff_pci_addr_parse(vf, &a) < 0)
                return NULL;
        for (size_t i = 0; s && i < s->n_pfs; i++) {
                const struct svff_pf *pf = s->pfs[i];
                long d;

                if (svff_pci_addr_parse(pf->address, &p) < 0 || p.domain != a.domain || pf->stride == 0)
                        continue;
                d = (long) ((a.bus << 8) | (a.slot << 3) | a.func) - (long) ((p.bus << 8) | (p.slot << 3) | p.func) -
                    (long) pf->offset;
                if (d >= 0 && d % pf->stride == 0 && d / pf->stride < (long) pf->totalvfs)
                        return pf->address;
        }
        return NULL;
}

/* pf: the PF the drift is about (the VF's, for a VF); next_step: what to
 * run about it, NULL for nothing (it follows from another drift).
 * Returns the drift (borrowed from a), or NULL out of memory. */
static struct json_object *add(struct json_object *a, const char *kind, const char *device, const char *pf,
                               const char *expected, const char *actual, const char *next_step, const char *fmt,
                               ...) _printf_(8, 9);

static struct json_object *add(struct json_object *a, const char *kind, const char *device, const char *pf,
                               const char *expected, const char *actual, const char *next_step, const char *fmt,
                               ...) {
        struct json_object *d = json_object_new_object();
        char msg[512];
        va_list ap;

        if (!d)
                return NULL;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_object_object_add(d, "kind", json_object_new_string(kind));
        json_object_object_add(d, "device", json_object_new_string(device));
        json_object_object_add(d, "expected", expected ? json_object_new_string(expected) : NULL);
        json_object_object_add(d, "actual", actual ? json_object_new_string(actual) : NULL);
        json_object_object_add(d, "message", json_object_new_string(msg));
        json_object_object_add(d, "pf", pf ? json_object_new_string(pf) : NULL);
        json_object_object_add(d, "next_step", next_step ? json_object_new_string(next_step) : NULL);
        if (json_object_array_add(a, d) < 0) {
                json_object_put(d);
                return NULL;
        }
        return d;
}

/* A VF svff bound to want that is on have now: an init at the recorded
 * count binds it again; an assigned one's domain cannot start with it
 * meanwhile, and the drift names it. */
static void driver_changed(struct manager *m, struct json_object *a, const char *vf, const char *pf,
                           const char *want, const char *have) {
        struct json_object *arec = NULL, *d;
        const char *dom = NULL;
        unsigned n = 0;
        char next[160];

        if (pf && svff_store_get_pf(m->store, pf, &n, NULL) > 0)
                snprintf(next, sizeof(next), "run 'svffctl init %s %u' to bind it to %s again", pf, n, want);
        else
                next[0] = 0;
        if (json_object_object_get_ex(svff_store_assignments(m->store), vf, &arec) &&
            svff_json_get_string(arec, "domain", &dom) < 0)
                (void) svff_json_get_string(arec, "uuid", &dom);
        if (!dom) {
                (void) add(a, "driver-changed", vf, pf, want, have, next[0] ? next : NULL,
                           "VF %s is on %s, svff bound it to %s%s%s", vf, have ?: "no driver", want,
                           next[0] ? "; " : "", next);
                return;
        }
        d = add(a, "driver-changed", vf, pf, want, have, next[0] ? next : NULL,
                "VF %s is on %s, svff bound it to %s: domain '%s', to which it is assigned, cannot start with it%s%s",
                vf, have ?: "no driver", want, dom, next[0] ? "; " : "", next);
        /* the domain, for status to name it beside the count */
        if (d)
                json_object_object_add(d, "domain", json_object_new_string(dom));
}

/* The journal entry of pf's reprogram that nothing resumes (its flash
 * hook failed, or svffd stopped during it), or NULL: the PF may be off
 * the bus and its assignments' VFs gone, which that one drift explains
 * with the step that fixes them all. */
static struct json_object *reprogram_interrupted(struct json_object *journal, const char *pf) {
        struct json_object *entry, *rp = NULL;
        const char *ph = NULL;

        if (!journal || !pf || !json_object_object_get_ex(journal, pf, &entry))
                return NULL;
        (void) svff_json_get_string(entry, "phase", &ph);
        if (!ph || !streq(ph, "interrupted") || svff_json_get_object(entry, "reprogram", &rp) < 0 || !rp)
                return NULL;
        return entry;
}

/* Whether vf is an assignment of pf's interrupted reprogram (its plan). */
static bool in_interrupted_reprogram(struct json_object *journal, const char *vf) {
        if (!journal)
                return false;
        json_object_object_foreach(journal, pf, entry)
                if (reprogram_interrupted(journal, pf) && journal_entry_names_vf(entry, vf))
                        return true;
        return false;
}

struct json_object *reconcile_gone(struct manager *m, bool absent_pfs) {
        struct json_object *a = json_object_new_array(), *jp;
        struct snapshot *s = m->snapshot;

        if (!a || !s || s->error < 0)
                return a;
        jp = journal_entries(m);
        /* A domain that lacks its VF because the VF is gone (a reconf
         * that could not put it back): the VF record went with the VF,
         * only the assignment says so. */
        json_object_object_foreach(svff_store_assignments(m->store), avf, arec) {
                const char *apf = NULL;
                struct json_object *o;
                char next[160];

                if (find_vf(s, avf) || in_interrupted_reprogram(jp, avf))
                        continue;
                if (svff_store_get_vf(m->store, avf, &apf, NULL) > 0 && apf &&
                    (manager_find_operation(m, apf) || journal_recovery_waits(m, apf)))
                        continue;  /* in flux, or until libvirt's connection */
                if (!absent_pfs && apf && !snapshot_pf(s, apf) && svff_store_get_pf(m->store, apf, NULL, NULL) > 0)
                        continue;
                if (!apf)
                        apf = pf_by_layout(s, avf);
                snprintf(next, sizeof(next), "'svffctl reconf' its PF back to a count that has VF %s, then "
                         "'svffctl unpause %s'", avf, avf);
                o = json_object_new_object();
                if (!o)
                        break;
                json_object_object_add(o, "address", json_object_new_string(avf));
                json_object_object_add(o, "pf", apf ? json_object_new_string(apf) : NULL);
                json_object_object_add(o, "assigned_to", json_object_get(arec));
                json_object_object_add(o, "next_step", json_object_new_string(next));
                json_object_array_add(a, o);
        }
        return a;
}

struct json_object *reconcile_drift(struct manager *m) {
        struct json_object *a = json_object_new_array(), *jp;
        struct snapshot *s = m->snapshot;

        if (!a)
                return NULL;
        /* Without a usable snapshot there is nothing to compare with;
         * claiming every PF is gone would be a lie. */
        if (!s || s->error < 0)
                return a;
        jp = journal_entries(m);

        json_object_object_foreach(svff_store_pfs(m->store), pf, rec) {
                const struct svff_pf *p = snapshot_pf(s, pf);
                unsigned want;
                char e[16], g[16];

                if (!p && reprogram_interrupted(jp, pf))
                        continue;  /* its "interrupted" says why, and what to do */
                if (!p) {
                        add(a, "pf-missing", pf, pf, NULL, NULL, NULL,
                            "PF %s is recorded but not present; its records are kept until it returns or is re-initialised",
                            pf);
                        continue;
                }
                if (svff_json_get_unsigned(rec, "numvfs", &want) >= 0 && want != p->numvfs &&
                    !manager_find_operation(m, pf) && !journal_recovery_waits(m, pf)) {
                        char next[96];

                        snprintf(e, sizeof(e), "%u", want);
                        snprintf(g, sizeof(g), "%u", p->numvfs);
                        snprintf(next, sizeof(next), "run 'svffctl init %s %u' to restore it", pf, want);
                        add(a, "numvfs-changed", pf, pf, e, g, next,
                            "PF %s has %u VFs, svff recorded %u; %s",
                            pf, p->numvfs, want, next);
                }
        }

        json_object_object_foreach(svff_store_vfs(m->store), vf, vrec) {
                const struct svff_vf *v = find_vf(s, vf);
                const char *want = NULL, *vpf = NULL;

                (void) svff_json_get_string(vrec, "driver", &want);
                (void) svff_json_get_string(vrec, "pf", &vpf);
                if (vpf && (manager_find_operation(m, vpf) || journal_recovery_waits(m, vpf)))
                        continue;  /* in flux, or until libvirt's connection */
                if (!v) {
                        add(a, "vf-missing", vf, vpf, want, NULL, NULL,
                            "VF %s is recorded but not present; its record (original driver) is kept",
                            vf);
                        continue;
                }
                if (want && !streq(want, v->driver ?: ""))
                        driver_changed(m, a, vf, vpf, want, v->driver);
        }

        {
                _cleanup_(json_object_putp) struct json_object *gone = reconcile_gone(m, true);

                for (size_t i = 0; gone && i < json_object_array_length(gone); i++) {
                        struct json_object *g = json_object_array_get_idx(gone, i), *asg = NULL;
                        const char *gvf = NULL, *gpf = NULL, *dom = NULL, *next = NULL;

                        (void) svff_json_get_string(g, "address", &gvf);
                        (void) svff_json_get_string_or_null(g, "pf", &gpf);
                        (void) svff_json_get_string(g, "next_step", &next);
                        if (json_object_object_get_ex(g, "assigned_to", &asg))
                                (void) svff_json_get_string(asg, "domain", &dom);
                        add(a, "assignment-without-vf", gvf, gpf, NULL, NULL, next,
                            "Domain '%s' is assigned VF %s, which does not exist; %s", strna(dom), gvf, next);
                }
        }

        if (jp) {
                json_object_object_foreach(jp, jpf, entry) {
                        const char *op = "operation", *drv = NULL;
                        struct json_object *v;
                        unsigned target = 0;
                        uint64_t started = 0;
                        char cmd[160], next[288], e[16];

                        if (manager_find_operation(m, jpf))
                                continue;
                        (void) svff_json_get_string(entry, "op", &op);
                        (void) svff_json_get_unsigned(entry, "numvfs", &target);
                        if (json_object_object_get_ex(entry, "started_usec", &v) && json_object_is_type(v, json_type_int) &&
                            json_object_get_int64(v) > 0)
                                started = (uint64_t) json_object_get_int64(v);
                        snprintf(e, sizeof(e), "%u", target);
                        /* The command that completes it: an init's driver
                         * too, unless it is the default one. */
                        (void) svff_json_get_string(entry, "driver", &drv);
                        if (!streq(op, "init") || (m->config.vf_driver && drv && streq(drv, m->config.vf_driver)))
                                drv = NULL;
                        snprintf(cmd, sizeof(cmd), "svffctl %s %s %u%s%s", op, jpf, target, drv ? " --driver " : "",
                                 drv ?: "");
                        /* Only a journal older than this svffd was cut short
                         * by a stop; one of its own was kept by a failure
                         * (a write that failed, or passed its deadline and
                         * may still be going on) that said why when it did. */
                        {
                                const char *ph = NULL, *reason = NULL;
                                struct json_object *rp = NULL;

                                (void) svff_json_get_string(entry, "phase", &ph);
                                if (reprogram_interrupted(jp, jpf) &&
                                    svff_json_get_object(entry, "reprogram", &rp) >= 0 && rp) {
                                        /* Nothing resumes it: the flash is not
                                         * known to have succeeded. */
                                        (void) svff_json_get_string_or_null(rp, "reason", &reason);
                                        snprintf(next, sizeof(next), "run 'svffctl reprogram %s IMAGE' to flash "
                                                 "again, or 'svffctl reconf %s %u' to take the PF as it is", jpf, jpf,
                                                 target);
                                        add(a, "interrupted", jpf, jpf, e, NULL, next,
                                            "reprogram interrupted: PF %s (%s); its assignments stay paused; %s", jpf,
                                            reason ?: "no reason recorded", next);
                                        continue;
                                }
                        }
                        if (journal_recovery_waits(m, jpf)) {
                                /* reconf_recover() on libvirt's connection */
                                snprintf(next, sizeof(next), "svffd completes it or rolls it back once connected "
                                         "to libvirt at '%s': check that libvirtd runs", hv_uri(m->hv));
                                add(a, "interrupted", jpf, jpf, e, NULL, next, "The %s of PF %s to %u VFs %s; %s",
                                    op, jpf, target, journal_left_by_earlier_run(m, started) ?
                                    "was interrupted (svffd stopped)" : "did not finish", next);
                        } else if (journal_left_by_earlier_run(m, started)) {
                                snprintf(next, sizeof(next), "run '%s' to complete it", cmd);
                                add(a, "interrupted", jpf, jpf, e, NULL, next,
                                    "The %s of PF %s to %u VFs was interrupted (svffd stopped); %s", op, jpf, target,
                                    next);
                        } else {
                                if (svff_ctx_get_stuck_writes(m->ctx) > 0)
                                        snprintf(next, sizeof(next), "once the write past its deadline ends (stuck "
                                                 "writes in status), run '%s' to complete it", cmd);
                                else
                                        snprintf(next, sizeof(next), "run '%s' to complete it", cmd);
                                add(a, "interrupted", jpf, jpf, e, NULL, next,
                                    "The %s of PF %s to %u VFs did not finish: a write failed or passed its deadline, "
                                    "and the journal is kept; %s", op, jpf, target, next);
                        }
                }
        }
        return a;
}

size_t reconcile_log(struct manager *m) {
        struct json_object *a = reconcile_drift(m);
        size_t n = a ? json_object_array_length(a) : 0;

        for (size_t i = 0; i < n; i++) {
                struct json_object *d = json_object_array_get_idx(a, i), *msg;
                const char *device = NULL, *pf = NULL;

                (void) svff_json_get_string(d, "device", &device);
                (void) svff_json_get_string(d, "pf", &pf);
                {
                        /* the PF's own drift names it as the device */
                        LOG_CONTEXT(.pf = pf ?: device, .vf = pf && device && !streq(pf, device) ? device : NULL,
                                    .operation = "reconcile");

                        if (json_object_object_get_ex(d, "message", &msg))
                                log_warning("Drift: %s", json_object_get_string(msg));
                }
        }
        json_object_put(a);
        return n;
}
