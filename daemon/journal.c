/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "journal.h"
#include "json-util.h"
#include "reconf.h"

static struct json_object *journal_pfs(struct svff_store *store) {
        struct json_object *j = svff_store_journal(store), *pfs;

        if (!j || !json_object_object_get_ex(j, "pfs", &pfs) ||
            !json_object_is_type(pfs, json_type_object))
                return NULL;
        return pfs;
}

int journal_set(struct manager *m, const char *pf, struct json_object *entry) {
        struct json_object *pfs = journal_pfs(m->store);

        if (!entry)
                return -ENOMEM;
        if (!pfs) {
                struct json_object *j = json_object_new_object();

                pfs = json_object_new_object();
                if (!j || !pfs) {
                        json_object_put(j);
                        json_object_put(pfs);
                        json_object_put(entry);
                        return -ENOMEM;
                }
                json_object_object_add(j, "op", json_object_new_string("operations"));
                json_object_object_add(j, "pfs", pfs);
                svff_store_set_journal(m->store, j);
        }
        if (json_object_object_add(pfs, pf, entry) < 0) {
                json_object_put(entry);
                return -ENOMEM;
        }
        return 0;
}

void journal_clear(struct manager *m, const char *pf) {
        struct json_object *pfs = journal_pfs(m->store);

        if (!pfs)
                return;
        json_object_object_del(pfs, pf);
        if (json_object_object_length(pfs) == 0)
                svff_store_set_journal(m->store, NULL);
}

struct json_object *journal_get(struct manager *m, const char *pf) {
        struct json_object *pfs = journal_pfs(m->store), *e;

        if (!pfs || !json_object_object_get_ex(pfs, pf, &e))
                return NULL;
        return e;
}

struct json_object *journal_entries(struct manager *m) {
        return journal_pfs(m->store);
}

bool journal_left_by_earlier_run(struct manager *m, uint64_t started_usec) {
        struct timespec rt, mono;
        uint64_t r, mn, start;

        /* svffd's start on the wall clock, which the journal uses: what
         * started before it was left by an earlier svffd. */
        if (clock_gettime(CLOCK_REALTIME, &rt) < 0 || clock_gettime(CLOCK_MONOTONIC, &mono) < 0)
                return true;
        r = (uint64_t) rt.tv_sec * 1000000 + (uint64_t) rt.tv_nsec / 1000;
        mn = (uint64_t) mono.tv_sec * 1000000 + (uint64_t) mono.tv_nsec / 1000;
        start = r - (mn - m->started_usec);
        return started_usec < start;
}

bool journal_recovery_waits(struct manager *m, const char *pf) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *plan = NULL;
        struct json_object *e = journal_get(m, pf), *o;
        const char *op = NULL, *phase = NULL;

        if (!e || svff_json_get_string(e, "op", &op) < 0 || !streq(op, "reconf"))
                return false;
        if (svff_json_get_string(e, "phase", &phase) >= 0 && streq(phase, "interrupted") &&
            json_object_object_get_ex(e, "reprogram", NULL))
                return false;
        if (manager_find_operation(m, pf) || manager_libvirt_connected(m) ||
            !json_object_object_get_ex(e, "plan", &o) || svff_reconf_plan_from_json(o, &plan) < 0 ||
            plan->release || plan->change)
                return false;
        return svff_reconf_plan_needs_libvirt(plan);
}

bool journal_entry_names_vf(struct json_object *entry, const char *vf) {
        struct json_object *plan, *items;

        if (!json_object_object_get_ex(entry, "plan", &plan) ||
            !json_object_object_get_ex(plan, "assignments", &items) ||
            !json_object_is_type(items, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                const char *v = NULL;

                if (svff_json_get_string(json_object_array_get_idx(items, i), "vf", &v) >= 0 && v && streq(v, vf))
                        return true;
        }
        return false;
}
