/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "reconf-journal.h"

struct json_object *reconf_journal_encode(const struct svff_reconf_plan *plan, const char *phase,
                                          uint64_t started_usec) {
        struct json_object *e = json_object_new_object(), *p = svff_reconf_plan_to_json(plan);

        if (!e || !p) {
                json_object_put(e);
                json_object_put(p);
                return NULL;
        }
        json_object_object_add(e, "op", json_object_new_string("reconf"));
        json_object_object_add(e, "phase", json_object_new_string(phase));
        json_object_object_add(e, "numvfs", json_object_new_int64(plan->to));
        json_object_object_add(e, "started_usec", json_object_new_int64((int64_t) started_usec));
        json_object_object_add(e, "plan", p);
        return e;
}

int reconf_journal_set_rollback(struct json_object *e, unsigned numvfs, const char *reason) {
        struct json_object *rb;

        if (json_object_object_get_ex(e, "rollback", NULL))
                return 0;
        rb = json_object_new_object();
        if (!rb)
                return -ENOMEM;
        json_object_object_add(rb, "numvfs", json_object_new_int64(numvfs));
        json_object_object_add(rb, "reason", reason ? svff_json_new_text(reason) : NULL);
        if (json_object_object_add(e, "rollback", rb) < 0) {
                json_object_put(rb);
                return -ENOMEM;
        }
        return 0;
}

static bool phase_known(const char *p) {
        return streq(p, "quiesce") || streq(p, "numvfs") || streq(p, "provision") || streq(p, "bind") || streq(p, "rollback");
}

/* The phases only a reprogram has, between the 0 write and the new count. */
static bool phase_reprogram(const char *p) {
        return streq(p, "remove") || streq(p, "flash") || streq(p, "rescan") || streq(p, "interrupted");
}

int reconf_journal_decode(struct json_object *e, struct reconf_journal *ret) {
        struct reconf_journal j = {};
        struct json_object *jp = NULL, *rb = NULL;
        const char *op = NULL;
        int64_t started = 0;

        if (!e || svff_json_get_string(e, "op", &op) < 0 || !streq(op, "reconf"))
                return -ENOENT;
        if (svff_json_get_string(e, "phase", &j.phase) < 0 || (!phase_known(j.phase) && !phase_reprogram(j.phase)) ||
            svff_json_get_unsigned(e, "numvfs", &j.numvfs) < 0 || !json_object_object_get_ex(e, "plan", &jp) ||
            svff_reconf_plan_from_json(jp, &j.plan) < 0)
                return -EBADMSG;
        /* A release's or an assignment change's plan is no reconf's. */
        if (j.plan->to != j.numvfs || j.plan->release || j.plan->change) {
                svff_reconf_plan_free(j.plan);
                return -EBADMSG;
        }
        if (json_object_object_get_ex(e, "started_usec", &jp) && json_object_is_type(jp, json_type_int))
                started = json_object_get_int64(jp);
        j.started_usec = started > 0 ? (uint64_t) started : 0;
        (void) svff_json_get_object(e, "rollback", &rb);
        if (streq(j.phase, "rollback") || rb) {
                j.rollback = true;
                j.rollback_to = j.plan->from;
                if (rb && svff_json_get_unsigned(rb, "numvfs", &j.rollback_to) < 0) {
                        svff_reconf_plan_free(j.plan);
                        return -EBADMSG;
                }
                if (rb)
                        (void) svff_json_get_string(rb, "reason", &j.rollback_reason);
        }
        if (svff_json_get_object(e, "class", &j.classes) < 0)
                j.classes = NULL;
        if (svff_json_get_object(e, "reprogram", &j.reprogram) < 0)
                j.reprogram = NULL;
        if (j.reprogram) {
                const char *image = NULL;

                (void) svff_json_get_string(j.reprogram, "image", &image);
                j.reprogram_image = image;
                (void) svff_json_get_bool(j.reprogram, "flashed", &j.reprogram_flashed);
                (void) svff_json_get_string_or_null(j.reprogram, "reason", &j.reprogram_reason);
                if (svff_json_get_string(j.reprogram, "flash_unit", &j.reprogram_flash_unit) < 0)
                        j.reprogram_flash_unit = NULL;
        }
        if (svff_json_get_string(e, "owner", &j.owner) < 0)
                j.owner = NULL;
        /* A reprogram's own phase means nothing without its record. */
        if ((phase_reprogram(j.phase) && !j.reprogram) || (j.reprogram && !j.reprogram_image)) {
                svff_reconf_plan_free(j.plan);
                return -EBADMSG;
        }
        *ret = j;
        return 0;
}

int reconf_journal_set_owner(struct json_object *e, const char *owner) {
        struct json_object *o;

        if (!owner) {
                json_object_object_del(e, "owner");
                return 0;
        }
        o = json_object_new_string(owner);
        if (!o || json_object_object_add(e, "owner", o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        return 0;
}

int reconf_journal_set_class(struct json_object *e, unsigned index, struct json_object *state) {
        struct json_object *c = NULL;
        char key[16];

        snprintf(key, sizeof(key), "%u", index);
        if (svff_json_get_object(e, "class", &c) < 0 || !c) {
                if (!state)
                        return 0;
                c = json_object_new_object();
                if (!c || json_object_object_add(e, "class", c) < 0) {
                        json_object_put(c);
                        json_object_put(state);
                        return -ENOMEM;
                }
        }
        if (!state) {
                json_object_object_del(c, key);
                return 0;
        }
        if (json_object_object_add(c, key, state) < 0) {
                json_object_put(state);
                return -ENOMEM;
        }
        return 0;
}

struct json_object *reconf_journal_get_class(const struct reconf_journal *j, unsigned index) {
        struct json_object *o = NULL;
        char key[16];

        if (!j || !j->classes)
                return NULL;
        snprintf(key, sizeof(key), "%u", index);
        if (!json_object_object_get_ex(j->classes, key, &o) || !json_object_is_type(o, json_type_object))
                return NULL;
        return o;
}

void reconf_journal_done(struct reconf_journal *j) {
        if (!j)
                return;
        svff_reconf_plan_free(j->plan);
        j->plan = NULL;
}
