/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "interface.h"
#include "json-util.h"
#include "log.h"
#include "params.h"

static bool known(struct call *call, const char *error, const struct param *table) {
        json_object_object_foreach(call_request(call)->parameters, key, val) {
                const struct param *p;

                (void) val;
                for (p = table; p->name; p++)
                        if (streq(key, p->name))
                                break;
                if (!p->name) {
                        call_errorf(call, error, "parameter", key,
                                    "Unknown parameter '%s' for %s.", key, call_request(call)->method);
                        return false;
                }
        }
        return true;
}

/* One parameter: 1 decoded, 0 not given, <0 wrong type or range. */
static int decode_one(struct json_object *params, const struct param *p, void *field,
                      char addr[static SVFF_PCI_ADDR_STRLEN], const char **ret_bad) {
        struct json_object *v;
        const char *s;
        unsigned u;
        bool b;
        int r;

        if (!json_object_object_get_ex(params, p->name, &v))
                return 0;
        switch (p->type) {
        case PARAM_ADDRESS:
                if (!v)
                        return 0;       /* null: not given */
                r = svff_json_get_string(params, p->name, &s);
                if (r < 0)
                        return r;
                if (svff_pci_addr_canonicalize(s, addr) < 0) {
                        *ret_bad = s;
                        return -EINVAL;
                }
                memcpy(field, addr, SVFF_PCI_ADDR_STRLEN);
                return 1;
        case PARAM_STRING:
                r = svff_json_get_string(params, p->name, &s);
                if (r < 0)
                        return r;
                *(const char **) field = s;
                return 1;
        case PARAM_STRING_OR_NULL:
                r = svff_json_get_string_or_null(params, p->name, &s);
                if (r < 0)
                        return r;
                *(const char **) field = s;
                return 1;
        case PARAM_OBJECT_OR_NULL:
                if (v && !json_object_is_type(v, json_type_object))
                        return -EINVAL;
                *(struct json_object **) field = v;
                return 1;
        case PARAM_BOOL:
                if (!v)
                        return 0;
                r = svff_json_get_bool(params, p->name, &b);
                if (r < 0)
                        return r;
                *(bool *) field = b;
                return 1;
        case PARAM_UNSIGNED:
                if (!v)
                        return 0;       /* null: not given */
                r = svff_json_get_unsigned(params, p->name, &u);
                if (r < 0)
                        return r;
                if (u > p->max)
                        return -ERANGE;
                *(unsigned *) field = u;
                return 1;
        }
        return -EINVAL;
}

bool params_decode(struct call *call, const char *error, const struct param *table, void *ret) {
        struct json_object *params = call_request(call)->parameters;

        if (!known(call, error, table))
                return false;
        for (const struct param *p = table; p->name; p++) {
                char addr[SVFF_PCI_ADDR_STRLEN];
                const char *bad = NULL;
                int r;

                r = decode_one(params, p, (char *) ret + p->offset, addr, &bad);
                if (r > 0 || (r == 0 && !p->required))
                        continue;
                if (r == 0)
                        call_errorf(call, error, "parameter", p->name, "Parameter '%s' is required.", p->name);
                else if (bad)
                        call_errorf(call, error, "parameter", p->name,
                                    "Parameter '%s': '%.64s' is not a PCI address; use the form 0000:03:00.0.",
                                    p->name, bad);
                else if (p->type == PARAM_ADDRESS)
                        call_errorf(call, error, "parameter", p->name,
                                    "Parameter '%s' must be a PCI address string such as 0000:03:00.0.", p->name);
                else if (p->what)
                        call_errorf(call, error, "parameter", p->name, "Parameter '%s' must be %s.", p->name,
                                    p->what);
                else
                        call_errorf(call, error, "parameter", p->name, NULL);
                return false;
        }
        return true;
}

bool require_privileged(struct manager *m, struct call *call) {
        const struct ucred *peer = call_peer(call);

        if (call_peer_is_privileged(call, m->admin_gid, m->have_admin_gid))
                return true;
        log_notice("Refused %s for pid %d uid %u: not root%s%s.", call_request(call)->method,
                   (int) peer->pid, (unsigned) peer->uid,
                   m->config.admin_group ? " and not in group " : "",
                   m->config.admin_group ?: "");
        call_errorf(call, SVFF_ERROR_PERMISSION_DENIED, NULL, NULL,
                    "%s changes devices: it needs root%s%s.", call_request(call)->method,
                    m->config.admin_group ? " or membership in group " : "",
                    m->config.admin_group ?: "");
        return false;
}
