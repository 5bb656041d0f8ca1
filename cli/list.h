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
