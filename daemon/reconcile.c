/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "log.h"
#include "journal.h"
#include "reconcile.h"

static const struct svff_pf *find_pf(struct snapshot *s, const char *address) {
        for (size_t i = 0; s && i < s->n_pfs; i++)
                if (streq(s->pfs[i]->address, address))
                        return s->pfs[i];
        return NULL;
}

static const struct svff_vf *find_vf(struct snapshot *s, const char *address) {
        for (size_t i = 0; s && i < s->n_pfs; i++) {
                const struct svff_vf *vf = svff_pf_find_vf(s->pfs[i], address);
                if (vf)
                        return vf;
        }
        return NULL;
}

static void add(struct json_object *a, const char *kind, const char *device, const char *expected,
                const char *actual, const char *fmt, ...) _printf_(6, 7);

static void add(struct json_object *a, const char *kind, const char *device, const char *expected,
                const char *actual, const char *fmt, ...) {
        struct json_object *d = json_object_new_object();
        char msg[512];
        va_list ap;

        if (!d)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_object_object_add(d, "kind", json_object_new_string(kind));
        json_object_object_add(d, "device", json_object_new_string(device));
        json_object_object_add(d, "expected", expected ? json_object_new_string(expected) : NULL);
        json_object_object_add(d, "actual", actual ? json_object_new_string(actual) : NULL);
        json_object_object_add(d, "message", json_object_new_string(msg));
        json_object_array_add(a, d);
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

        json_object_object_foreach(svff_store_pfs(m->store), pf, rec) {
                const struct svff_pf *p = find_pf(s, pf);
                unsigned want;
                char e[16], g[16];

                if (!p) {
                        add(a, "pf-missing", pf, NULL, NULL,
                            "PF %s is recorded but not present; its records are kept until it returns or is re-initialised",
                            pf);
                        continue;
                }
                if (svff_json_get_unsigned(rec, "numvfs", &want) >= 0 && want != p->numvfs &&
                    !manager_find_operation(m, pf)) {
                        snprintf(e, sizeof(e), "%u", want);
                        snprintf(g, sizeof(g), "%u", p->numvfs);
                        add(a, "numvfs-changed", pf, e, g,
                            "PF %s has %u VFs, svff recorded %u; run 'svffctl init %s %u' to restore",
                            pf, p->numvfs, want, pf, want);
                }
        }

        json_object_object_foreach(svff_store_vfs(m->store), vf, vrec) {
                const struct svff_vf *v = find_vf(s, vf);
                const char *want = NULL, *vpf = NULL;

                (void) svff_json_get_string(vrec, "driver", &want);
                (void) svff_json_get_string(vrec, "pf", &vpf);
                if (vpf && manager_find_operation(m, vpf))
                        continue;  /* in flux */
                if (!v) {
                        add(a, "vf-missing", vf, want, NULL,
                            "VF %s is recorded but not present; its record (original driver) is kept",
                            vf);
                        continue;
                }
                if (want && !streq(want, v->driver ?: "")) {
                        add(a, "driver-changed", vf, want, v->driver,
                            "VF %s is on %s, svff bound it to %s", vf, v->driver ?: "no driver",
                            want);
                }
        }

        /* A domain that lacks its VF because the VF is gone (a reconf
         * that could not put it back): the VF record went with the VF,
         * only the assignment says so. */
        json_object_object_foreach(svff_store_assignments(m->store), avf, arec) {
                const char *dom = "?", *apf = NULL;

                if (find_vf(s, avf))
                        continue;
                (void) svff_json_get_string(arec, "domain", &dom);
                if (svff_store_get_vf(m->store, avf, &apf, NULL) > 0 && apf && manager_find_operation(m, apf))
                        continue;  /* in flux */
                add(a, "assignment-without-vf", avf, NULL, NULL,
                    "Domain '%s' is assigned VF %s, which does not exist; 'svffctl reconf' its PF back to a count "
                    "that has it, then 'svffctl unpause %s'", dom, avf, avf);
        }

        jp = journal_entries(m);
        if (jp) {
                json_object_object_foreach(jp, jpf, entry) {
                        const char *op = "operation";

                        if (manager_find_operation(m, jpf))
                                continue;
                        (void) svff_json_get_string(entry, "op", &op);
                        add(a, "interrupted", jpf, NULL, NULL,
                            "The %s of PF %s was interrupted (svffd stopped); run it again to complete it",
                            op, jpf);
                }
        }
        return a;
}

size_t reconcile_log(struct manager *m) {
        struct json_object *a = reconcile_drift(m);
        size_t n = a ? json_object_array_length(a) : 0;

        for (size_t i = 0; i < n; i++) {
                struct json_object *d = json_object_array_get_idx(a, i), *msg;

                if (json_object_object_get_ex(d, "message", &msg))
                        log_warning("Drift: %s", json_object_get_string(msg));
        }
        json_object_put(a);
        return n;
}
