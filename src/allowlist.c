/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* svff.conf's "manage" rules, parsed and matched. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist.h"
#include "class.h"

static int parse_id(const char *s, unsigned *ret_vendor, unsigned *ret_device) {
        const char *hex = "0123456789abcdefABCDEF";

        if (strlen(s) != 9 || s[4] != ':' || strspn(s, hex) != 4 || strspn(s + 5, hex) != 4)
                return -EINVAL;
        *ret_vendor = (unsigned) strtoul(s, NULL, 16);
        *ret_device = (unsigned) strtoul(s + 5, NULL, 16);
        return 0;
}

int svff_allowlist_from_json(struct json_object *v, char ***ret, struct svff_error *err) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n;

        if (json_object_is_type(v, json_type_string) && strcmp(json_object_get_string(v), "all") == 0) {
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_array))
                return svff_error_set(err, -EINVAL, "must be \"all\" or a list of rules such as "
                                      "[\"10ee:903f\", \"0000:3b:00.0\", \"class:qdma\"]");
        n = json_object_array_length(v);
        if (n > 1024)
                return svff_error_set(err, -E2BIG, "holds more than 1024 rules");
        l = calloc(n + 1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(v, i);
                struct svff_error rerr = SVFF_ERROR_NULL;
                struct svff_allow_rule rule;
                int r;

                if (!json_object_is_type(e, json_type_string) ||
                    strlen(json_object_get_string(e)) != (size_t) json_object_get_string_len(e))
                        return svff_error_set(err, -EINVAL, "item %zu must be a string", i);
                r = svff_allow_rule_parse(json_object_get_string(e), &rule, &rerr);
                if (r < 0) {
                        if (r != -ENOMEM)
                                r = svff_error_set(err, r, "item %zu: %s", i, svff_error_message(&rerr));
                        svff_error_free(&rerr);
                        return r;
                }
                l[i] = strdup(json_object_get_string(e));
                if (!l[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int svff_allow_rule_parse(const char *text, struct svff_allow_rule *ret, struct svff_error *err) {
        struct svff_allow_rule r = {};

        if (!text || !*text)
                return svff_error_set(err, -EINVAL, "An empty manage rule: use 'all', VENDOR:DEVICE, "
                                      "a PCI address or class:NAME");
        if (strcmp(text, "all") == 0)
                r.kind = SVFF_ALLOW_ALL;
        else if (strncmp(text, "class:", 6) == 0) {
                const char *name = text + 6;

                if (strcmp(name, "none") != 0 && !svff_class_by_name(name)) {
                        _cleanup_free_ char *known = NULL;

                        for (const struct svff_class *const *c = svff_class_all(); *c; c++) {
                                char *j = NULL;

                                if (asprintf(&j, "%s%sclass:%s", known ?: "", known ? ", " : "", (*c)->name) < 0)
                                        return -ENOMEM;
                                free(known);
                                known = j;
                        }
                        return svff_error_set(err, -EINVAL, "No device class '%.32s' in manage rule '%.64s': "
                                              "the classes are %s%sclass:none", name, text,
                                              known ?: "", known ? ", " : "");
                }
                r.kind = SVFF_ALLOW_CLASS;
                snprintf(r.class_name, sizeof(r.class_name), "%s", name);
        } else if (parse_id(text, &r.vendor_id, &r.device_id) == 0)
                r.kind = SVFF_ALLOW_ID;
        else if (svff_pci_addr_canonicalize(text, r.address) == 0)
                r.kind = SVFF_ALLOW_ADDRESS;
        else
                return svff_error_set(err, -EINVAL, "Manage rule '%.64s' is none of 'all', VENDOR:DEVICE "
                                      "(10ee:903f), a PCI address (0000:3b:00.0) or class:NAME (class:qdma)",
                                      text);
        *ret = r;
        return 0;
}

bool svff_allow_rule_match(const struct svff_allow_rule *rule, const struct svff_allow_pf *pf) {
        switch (rule->kind) {
        case SVFF_ALLOW_ALL:
                return true;
        case SVFF_ALLOW_ID:
                return rule->vendor_id == pf->vendor_id && rule->device_id == pf->device_id;
        case SVFF_ALLOW_ADDRESS:
                return pf->address && strcmp(rule->address, pf->address) == 0;
        case SVFF_ALLOW_CLASS:
                if (!pf->class_name)
                        return strcmp(rule->class_name, "none") == 0;
                return strcmp(rule->class_name, pf->class_name) == 0;
        }
        return false;
}

int svff_allowlist_match(char *const *rules, const struct svff_allow_pf *pf) {
        if (!rules)
                return 0;
        for (size_t i = 0; rules[i]; i++) {
                struct svff_allow_rule r;

                if (svff_allow_rule_parse(rules[i], &r, NULL) < 0)
                        return -EINVAL;
                if (svff_allow_rule_match(&r, pf))
                        return (int) i;
        }
        return -ENOENT;
}

int svff_allowlist_check_pf(char *const *rules, const char *origin, struct svff_ctx *ctx,
                            const struct svff_pf *pf, char **ret_reason) {
        _cleanup_free_ char *list = NULL;
        const struct svff_class *cls;
        struct svff_allow_pf a;

        *ret_reason = NULL;
        if (!rules)
                return 0;
        cls = svff_class_find(ctx, pf);
        a = (struct svff_allow_pf) {
                .address = pf->address,
                .vendor_id = pf->vendor_id,
                .device_id = pf->device_id,
                .class_name = cls ? cls->name : NULL,
        };
        if (svff_allowlist_match(rules, &a) >= 0)
                return 0;
        list = svff_allowlist_format(rules);
        if (!list || asprintf(ret_reason, "not in manage [%s] (%s)", list, origin ?: "svff.conf") < 0) {
                *ret_reason = NULL;
                return -ENOMEM;
        }
        return 1;
}

char *svff_allowlist_format(char *const *rules) {
        char *s = NULL;
        size_t size = 0;
        FILE *f;

        if (!rules)
                return strdup("all");
        if (!rules[0])
                return strdup("nothing");
        f = open_memstream(&s, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; rules[i]; i++)
                fprintf(f, "%s%s", i ? ", " : "", rules[i]);
        if (fclose(f) != 0) {
                free(s);
                return NULL;
        }
        return s;
}
