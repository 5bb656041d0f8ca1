/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A text table for terminals: columns padded to their widest cell,
 * separated by two spaces, no trailing blanks. Cells are copied. */

#include <stdio.h>

struct table;

struct table *table_new(unsigned n_columns, const char *const *headers);
void table_free(struct table *t);
/* Adds a row of n_columns cells (NULL prints "-"). -ENOMEM. */
int table_add_row(struct table *t, const char *const *cells);
/* indent: spaces before every line. */
void table_print(const struct table *t, FILE *f, unsigned indent);

static inline void table_freep(struct table **t) {
        table_free(*t);
}
