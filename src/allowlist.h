/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which PFs svffd manages: svff.conf's "manage", a list of rules.
 *
 *   "all"            every PF (the default, and svff's behaviour before
 *                    the list existed)
 *   "VVVV:DDDD"      PFs with that vendor:device ID, in hex
 *   "DDDD:BB:SS.F"   the PF at that address (any spelling svff accepts)
 *   "class:NAME"     PFs of that device class (class.h: nvme, qdma, ...),
 *                    "class:none" for PFs no class handles
 *
 * A PF is managed when any rule matches it. Pure: nothing here reads
 * sysfs; the caller says what the PF is. */

#include <stdbool.h>
#include <json-c/json.h>

#include "context.h"
#include "device.h"
#include "error.h"
#include "pciaddr.h"

enum svff_allow_kind {
        SVFF_ALLOW_ALL,
        SVFF_ALLOW_ID,
        SVFF_ALLOW_ADDRESS,
        SVFF_ALLOW_CLASS,
};

#define SVFF_ALLOW_CLASS_MAX 32

struct svff_allow_rule {
        enum svff_allow_kind kind;
        unsigned vendor_id, device_id;
        char address[SVFF_PCI_ADDR_STRLEN];
        char class_name[SVFF_ALLOW_CLASS_MAX];  /* "none": no class */
};

/* What a rule is matched against. class_name is the class that handles
 * the PF (svff_class_find()), NULL for none. */
struct svff_allow_pf {
        const char *address;            /* canonical */
        unsigned vendor_id, device_id;
        const char *class_name;
};

/* -EINVAL with err saying which forms a rule takes; a class must be in
 * the registry. */
int svff_allow_rule_parse(const char *text, struct svff_allow_rule *ret, struct svff_error *err);
bool svff_allow_rule_match(const struct svff_allow_rule *rule, const struct svff_allow_pf *pf);

/* svff.conf's value: "all" (*ret NULL) or an array of rule strings
 * (*ret NULL-terminated, malloc'ed, free with strv_free; [] gives an
 * empty list: nothing managed). -EINVAL with err naming the bad item,
 * -E2BIG past 1024 rules, -ENOMEM. */
int svff_allowlist_from_json(struct json_object *v, char ***ret, struct svff_error *err);

/* rules: NULL-terminated, NULL for "all". The index of the first rule
 * that matches pf, -ENOENT when none does, -EINVAL when a rule does not
 * parse (a list the config loader let through never has one). */
int svff_allowlist_match(char *const *rules, const struct svff_allow_pf *pf);

/* For a PF as discovery loaded it (its class found with
 * svff_class_find(), which touches nothing): 0 with *ret_reason NULL
 * when the rules (NULL: all) admit pf; else 1 with *ret_reason saying
 * why not, "not in manage [RULES] (ORIGIN)", malloc'ed. -ENOMEM. */
int svff_allowlist_check_pf(char *const *rules, const char *origin, struct svff_ctx *ctx,
                            const struct svff_pf *pf, char **ret_reason);

/* The rules for a message, "all" for NULL: "10ee:903f, class:qdma";
 * "nothing" for an empty list. malloc'ed, NULL on -ENOMEM. */
char *svff_allowlist_format(char *const *rules);
