/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffctl list: one table for every PF and VF, columns chosen with -o. */

#include <stdio.h>
#include <json-c/json.h>

/* Parses "-o COL,..." into the selection used by list_print; NULL or ""
 * keeps the default. Returns 0, or -EINVAL after naming the bad column
 * on stderr. */
int list_columns_parse(const char *spec);
/* The column names and what each shows, for --help. */
void list_columns_help(FILE *f);
/* Prints a List reply (borrowed); returns an exit code. */
int list_print(struct json_object *reply);

#include <stdbool.h>
#include "pciaddr.h"

/* What 'list ADDR... --domain D' asks for: PFs whole, VFs under their PF
 * row, the VFs assigned to a domain (name or UUID). */
struct list_filter {
        char (*addrs)[SVFF_PCI_ADDR_STRLEN];
        size_t n_addrs;
        const char *domain;
};
/* Cuts a List reply (modified in place) down to what f asks for.
 * Returns 0, -ENOMEM, or -ENODEV with *ret_unknown the first address
 * that is no PF or VF in the reply. */
int list_filter(struct json_object *reply, const struct list_filter *f, const char **ret_unknown);
