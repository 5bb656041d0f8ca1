/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A text table for terminals: columns padded to their widest cell,
 * separated by gap spaces (two unless set), no trailing blanks. Cells are
 * copied, with control characters (newlines included) escaped
 * (svff_utf8_escape()). */

#include <stdbool.h>
#include <stdio.h>

struct table;

struct table *table_new(unsigned n_columns, const char *const *headers);
void table_free(struct table *t);
/* Adds a row of n_columns cells (NULL prints "-"). -ENOMEM. */
int table_add_row(struct table *t, const char *const *cells);
void table_set_gap(struct table *t, unsigned gap);
/* Column c may be cut (its cells end in "...") to fit a width: rank 0
 * never, else the columns of rank 1 first, then those of rank 2, ... */
void table_set_shrink_rank(struct table *t, unsigned c, unsigned rank);
/* indent: spaces before every line. */
void table_print(const struct table *t, FILE *f, unsigned indent);
/* The same within max_width columns (0: no limit), cutting shrinkable
 * columns in the order of their ranks (the last one first among equal
 * ranks), each down to its header's width. */
void table_print_fit(const struct table *t, FILE *f, unsigned indent, unsigned max_width);

static inline void table_freep(struct table **t) {
        table_free(*t);
}
