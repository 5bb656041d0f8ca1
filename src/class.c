/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The registry of device classes, and the settings merge every class
 * shares. A class is one file (class-<name>.c) and one line below. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"

/* One line per class, in match order: the first class whose match()
 * says yes handles the PF, so a narrower class goes before a broader
 * one. */
extern const struct svff_class svff_class_nvme;
extern const struct svff_class svff_class_nic;
extern const struct svff_class svff_class_qdma;

static const struct svff_class *const classes[] = {
        &svff_class_nvme,
        &svff_class_nic,
        &svff_class_qdma,
        NULL,
};

const struct svff_class *const *svff_class_all(void) {
        return classes;
}

const struct svff_class *svff_class_by_name(const char *name) {
        if (!name)
                return NULL;
        for (const struct svff_class *const *c = classes; *c; c++)
                if (strcmp((*c)->name, name) == 0)
                        return *c;
        return NULL;
}

const struct svff_class *svff_class_find(struct svff_ctx *ctx, const struct svff_pf *pf) {
        if (!pf)
                return NULL;
        for (const struct svff_class *const *c = classes; *c; c++)
                if ((*c)->match && (*c)->match(ctx, pf))
                        return *c;
        return NULL;
}

int svff_class_line_add(struct json_object *lines, const char *format, ...) {
        struct json_object *o;
        va_list ap;
        char *s;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        o = json_object_new_string(s);
        free(s);
        if (!o || json_object_array_add(lines, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        return 0;
}

int svff_class_check(const struct svff_class *cls, struct json_object *settings,
                     struct svff_error *err) {
        struct svff_class_settings *loaded = NULL;
        int r;

        if (settings && !json_object_is_type(settings, json_type_object))
                return svff_error_set(err, -EINVAL,
                                      "The %s class settings must be a JSON object, not '%s'",
                                      cls ? cls->name : "device",
                                      json_object_to_json_string_ext(settings, JSON_C_TO_STRING_PLAIN));
        if (!cls)
                return 0;
        r = cls->load(NULL, 0, settings, &loaded, err);
        if (r < 0)
                return r;
        cls->unload(loaded);
        return 0;
}

int svff_class_load_all(const struct svff_class *cls, const struct svff_class_pf *c, struct json_object *settings,
                        unsigned numvfs, struct svff_class_settings ***ret, struct svff_error *err) {
        struct svff_class_settings **a;
        bool array = settings && json_object_is_type(settings, json_type_array);

        if (settings && !array)
                return svff_error_set(err, -EINVAL, "The %s class takes one settings object per VF, not %s",
                                      cls->name, json_object_to_json_string_ext(settings, JSON_C_TO_STRING_PLAIN));
        a = calloc(numvfs ?: 1, sizeof(*a));
        if (!a)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        for (unsigned i = 0; i < numvfs; i++) {
                struct json_object *s = array && i < json_object_array_length(settings) ?
                                        json_object_array_get_idx(settings, i) : NULL;
                int r = cls->load(c, i, s, &a[i], err);

                if (r < 0) {
                        svff_class_unload_all(cls, a, i);
                        return r;
                }
        }
        *ret = a;
        return 0;
}

void svff_class_unload_all(const struct svff_class *cls, struct svff_class_settings **s, unsigned numvfs) {
        if (!s)
                return;
        for (unsigned i = 0; i < numvfs; i++)
                if (s[i])
                        cls->unload(s[i]);
        free(s);
}

/* Adds a deep copy of every member of from to to, replacing what is
 * there; a null member removes the key instead. */
static int overlay(struct json_object *to, struct json_object *from) {
        if (!from || !json_object_is_type(from, json_type_object))
                return 0;
        json_object_object_foreach(from, key, val) {
                struct json_object *copy = NULL;

                if (!val) {
                        json_object_object_del(to, key);
                        continue;
                }
                if (json_object_deep_copy(val, &copy, NULL) < 0)
                        return -ENOMEM;
                if (json_object_object_add(to, key, copy) < 0) {
                        json_object_put(copy);
                        return -ENOMEM;
                }
        }
        return 0;
}

struct json_object *svff_class_settings_merge(struct json_object *policy,
                                              struct json_object *assignment) {
        struct json_object *m = json_object_new_object();

        if (!m) {
                errno = ENOMEM;
                return NULL;
        }
        if (overlay(m, policy) < 0 || overlay(m, assignment) < 0) {
                json_object_put(m);
                errno = ENOMEM;
                return NULL;
        }
        return m;
}
